/**
 * A send abandoned (its caller timed out) and then lost with its connection, which the client does not write again,
 * retried by its caller afresh on the next connection — outside any re-sent batch — and abandoned once more: the
 * set-up of the tests of what that retry's late answer reads as (PendingSends.ts `begin`, asked of the client's
 * record, Resending.ts `lostOnTheWay`).
 *
 * A fake broker in memory under TestClock (support.ts `memoryFakeBroker`, `ask-expiry-v1`): it never answers the
 * question's send; the first settling round trip ends connection 1; once the retry is abandoned, the next list on
 * connection 2 is preceded by `refusal` for the question, read as the retry's late answer. The retry is watched
 * (`lateVerdict`) as an ask settling with the broker watches it; the first send was not, so nothing writes it again.
 * The question goes as a plain `send`, or as a child's `supervisorSend` (the client then holds a grant and the fake
 * grants `supervisor-v1`), watched as a blocking `contact_supervisor` watches it.
 */
import { Cause, Effect, Exit, Fiber, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { SUPERVISOR_TO } from "../../src/client/requests.ts"
import { ASK_EXPIRY_V1, LIST_PAGE_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

/** What the retry's late verdict held, and how many times the question was written on connection 2. */
export interface RetriedAfterAbandonedLoss {
  readonly failure: unknown
  readonly writesOnSecond: number
}

/**
 * Runs the set-up (module header) with `refusal` as the late answer to the retry: the question a plain `send`, or
 * (`channel` "supervisor") a child's `supervisorSend` to its supervisor, watched as a blocking `contact_supervisor`
 * watches it (under `SUPERVISOR_TO`).
 */
export const retriedAfterAbandonedLoss = (
  sessionId: string,
  refusal: { readonly code: string; readonly reason: string },
  channel: "send" | "supervisor" = "send"
): Effect.Effect<RetriedAfterAbandonedLoss, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const question = message("well?", { expectsReply: true })
    const armed = { refusal: false }
    const supervised = channel === "supervisor"
    const fake = yield* memoryFakeBroker({
      features: supervised ? [ASK_EXPIRY_V1, LIST_PAGE_V1, SUPERVISOR_V1] : [ASK_EXPIRY_V1, LIST_PAGE_V1],
      leaveSendUnanswered: (messageId) => messageId === question.id,
      dropOnSettle: (connection) => connection === 1,
      beforeList: () => {
        if (!armed.refusal) return []
        armed.refusal = false
        return [{ type: "delivery_failed", messageId: question.id, ...refusal, retryable: false }]
      }
    })
    const { client } = yield* makeClient(
      memoryClientOptions(fake, sessionId, "asker", {
        sendTimeoutMs: SEND_TIMEOUT,
        reconnectBaseMs: 100,
        reconnectMaxMs: 100,
        ...(supervised ? { supervisorGrant: { capability: "granted-capability", supervisorSessionId: "sup-1" } } : {})
      })
    )
    yield* client.connect
    const request = { to: supervised ? SUPERVISOR_TO : "peer", message: question }
    const sendIt = supervised ? client.supervisorSend({ message: question }) : client.send(request)
    // The first send times out (abandoned, nobody watching), and its connection is lost.
    const first = yield* Effect.forkChild(Effect.exit(sendIt), { startImmediately: true })
    yield* TestClock.adjust(SEND_TIMEOUT + 1)
    yield* Fiber.join(first)
    const dropping = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
    yield* TestClock.adjust(1_000)
    yield* Fiber.join(dropping)
    // The caller retries it, watched, on connection 2, and times out again.
    const verdict = yield* client.lateVerdict(request)
    const retry = yield* Effect.forkChild(Effect.exit(sendIt), { startImmediately: true })
    yield* TestClock.adjust(SEND_TIMEOUT + 1)
    yield* Fiber.join(retry)
    armed.refusal = true
    const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
    yield* TestClock.adjust(1_000)
    yield* Fiber.join(settling)
    const writesOnSecond = fake.ofType(supervised ? "supervisor_send" : "send").filter((f) => f.connection === 2).length
    const read = yield* verdict
    const failure = read.answer !== undefined && Exit.isFailure(read.answer) ? Cause.squash(read.answer.cause) : read.answer
    return { failure, writesOnSecond }
  })
