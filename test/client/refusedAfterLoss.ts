/**
 * A send lost on the way, then refused by the broker on every later connection: the set-up of the tests of what a
 * refusal read after a loss ends as (Resending.ts `send`, review revbr BR4), for a plain send and a child's
 * `supervisorSend` alike.
 *
 * A fake broker in memory under TestClock (support.ts `memoryFakeBroker`): the send's first write ends connection 1
 * unanswered — the client cannot tell it from one delivered whose answer was lost — and every write of it on a
 * later connection (the client's re-send, the caller's retries in the rejoin grace) is answered with the refusal
 * given. The client is a child with a grant, so `supervisorSend` is offered.
 */
import { Cause, Effect, Exit, type Scope } from "effect"
import { TestClock } from "effect/testing"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { Delivery } from "../../src/client/events.ts"
import { SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

/** The rejoin grace the client is given (`rejoinGraceMs`). */
export const REJOIN_GRACE_MS = 5_000

/** How a test sends `message` on the client: a plain send, or a child's `supervisorSend`. */
export type SendVia = (client: IntercomClientService, message: Message) => Effect.Effect<Delivery, unknown>

/** What became of a send lost on the way and refused on every later connection. */
export interface RefusedAfterLoss {
  /** What the send failed with (undefined if it succeeded; "still running" if it had not ended). */
  readonly failure: unknown
  /** How many times the send was written on the connections after the first. */
  readonly laterWrites: number
  /** How long after the loss the send ended (ms on the TestClock), or undefined if it had not ended by the grace's end. */
  readonly endedAfterMs: number | undefined
  /**
   * Whether the send ended within the millisecond the reconnect came in (the first reconnect is due `RECONNECT_MS`
   * after the loss): 1 ms before it no later connection was up, and at it one was and the send had ended — by the
   * reconnect's own round trips, no timer after them. Any back-off (the shortest is 25 ms) makes it false.
   */
  readonly endedAtReconnect: boolean
}

/** How long after the loss the client reconnects (`reconnectBaseMs`, the first reconnect's fixed wait). */
export const RECONNECT_MS = 100

/**
 * Sends `message` via `via` on a fresh client whose first connection ends as the send is written, its later ones
 * answering every write of it with `refusal`; runs the clock to 1 ms before the reconnect, to it, then past the
 * rejoin grace in steps of `stepMs` (when the send ended is known to that step), and says how the send ended.
 */
export const refusedAfterLoss = (
  sessionId: string,
  message: Message,
  refusal: { readonly code: string; readonly reason: string },
  via: SendVia,
  stepMs = 100
): Effect.Effect<RefusedAfterLoss, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const fake = yield* memoryFakeBroker({
      features: [SUPERVISOR_V1],
      dropOnSend: (connection, messageId) => connection === 1 && messageId === message.id,
      refuseSend: (connection, messageId) => connection > 1 && messageId === message.id ? refusal : undefined
    })
    const { client } = yield* makeClient(
      memoryClientOptions(fake, sessionId, "worker", {
        supervisorGrant: { capability: "granted-capability", supervisorSessionId: "sup-1" },
        reconnectBaseMs: RECONNECT_MS,
        reconnectMaxMs: RECONNECT_MS,
        rejoinGraceMs: REJOIN_GRACE_MS
      })
    )
    yield* client.connect
    const sending = yield* Effect.forkChild(Effect.exit(via(client, message)), { startImmediately: true })
    const reconnected = () => fake.frames.some((f) => f.connection > 1)
    // To 1 ms before the reconnect, then to it: what the reconnect's own round trips settle, with no timer after it.
    yield* TestClock.adjust(RECONNECT_MS - 1)
    const before = !reconnected() && sending.pollUnsafe() === undefined
    yield* TestClock.adjust(1)
    const endedAtReconnect = before && reconnected() && sending.pollUnsafe() !== undefined
    let endedAfterMs: number | undefined = sending.pollUnsafe() === undefined ? undefined : RECONNECT_MS
    // In steps to the grace's end and a little past it: when the send ended tells a grace from none.
    for (let elapsed = RECONNECT_MS + stepMs; elapsed <= REJOIN_GRACE_MS + 1_000; elapsed += stepMs) {
      yield* TestClock.adjust(stepMs)
      if (endedAfterMs === undefined && sending.pollUnsafe() !== undefined) endedAfterMs = elapsed
    }
    const ended = sending.pollUnsafe()
    const laterWrites = fake.frames.filter((f) =>
      f.connection > 1 &&
      (f.frame.type === "send" || f.frame.type === "supervisor_send") &&
      typeof f.frame.message === "object" && f.frame.message !== null && "id" in f.frame.message &&
      f.frame.message.id === message.id
    ).length
    const exit = ended !== undefined && Exit.isSuccess(ended) ? ended.value : undefined
    const failure = exit === undefined ? "still running" : Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
    return { failure, laterWrites, endedAfterMs, endedAtReconnect }
  })
