/**
 * The asker's own timer for a question written again after a reconnect:
 * the write carried what was left of the ask's timeout since its first send
 * (`Delivery.askTimeoutMs`), and the wait runs that long from the
 * acknowledgement, not the whole timeout again (Ask.ts, SupervisorContact.ts:
 * `delivery.askTimeoutMs ?? timeoutMs`). Over the fake client under
 * TestClock, whose broker sends no notice that would end the wait first:
 * only the asker's timer (and its settling round trip) ends it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { ASK_EXPIRY_V1, EXACT_SEND_V1 } from "../../src/protocol/features.ts"
import { ReplyTimeout } from "../../src/session/errors.ts"
import { settle, SUP, supervisorBridge, withPeers } from "./support.ts"

const TIMEOUT_MS = 120_000
/** What a resend after a reconnect carried of the two minutes: the first send was 90 s earlier. */
const LEFT_MS = 30_000

describe("a question written again after a reconnect: the asker's own timer", () => {
  it.effect("an ask's wait ends once the time its last write carried has passed since the acknowledgement, not its whole timeout", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      unit.client.onSend = (request) =>
        Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered", askTimeoutMs: LEFT_MS })
      const asking = yield* Effect.forkChild(unit.session.ask({ to: "B", message: "well?", timeoutMs: TIMEOUT_MS }))
      yield* settle
      assert.strictEqual(unit.client.sends.length, 1)
      yield* TestClock.adjust(LEFT_MS - 1)
      assert.isUndefined(asking.pollUnsafe(), "the wait ended before what the write carried ran out")
      yield* TestClock.adjust(1)
      yield* settle
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, `the wait went on past the ${LEFT_MS} ms the write carried (settles: ${unit.client.settles})`)
      assert.instanceOf(exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined, ReplyTimeout)
      assert.strictEqual(unit.client.settles, 1, "one settling round trip at the asker's deadline")
    }))

  it.effect("a blocking contact_supervisor's wait ends once the time its last write carried has passed since the acknowledgement", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers({ childBridge: supervisorBridge, askTimeoutMs: TIMEOUT_MS })
      unit.client.supervisorSessionId = SUP.id
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      unit.client.onSend = (request) =>
        Effect.succeed({ messageId: request.message.id, delivery: "socket_delivered", askTimeoutMs: LEFT_MS })
      const tool = unit.session.contactSupervisor
      if (tool === undefined) return yield* Effect.die("contact_supervisor is missing")
      const contacting = yield* Effect.forkChild(tool({ reason: "need_decision", message: "?" }))
      yield* settle
      assert.strictEqual(unit.client.supervisorSends.length, 1)
      yield* TestClock.adjust(LEFT_MS - 1)
      assert.isUndefined(contacting.pollUnsafe(), "the wait ended before what the write carried ran out")
      yield* TestClock.adjust(1)
      yield* settle
      assert.isDefined(contacting.pollUnsafe(), `the wait went on past the ${LEFT_MS} ms the write carried`)
      const result = yield* Fiber.join(contacting)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
    }))
})
