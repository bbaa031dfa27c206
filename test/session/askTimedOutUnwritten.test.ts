/**
 * A question its client would not write again after a reconnect, its whole
 * timeout since the first send being up (requests.ts `ASK_TIMED_OUT_UNWRITTEN`,
 * `DeliveryExpired`): `ask` and a blocking `contact_supervisor` end as timed
 * out (`ReplyTimeout`, C-ASK-5), not as "not delivered" — while the broker's
 * own `E_DELIVERY_EXPIRED` (mail that expired in its mailbox) still is one.
 * Over the fake client under TestClock. (The client's side, on the in-memory
 * broker: askResendExpired.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { ASK_TIMED_OUT_UNWRITTEN } from "../../src/client/requests.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { NotDelivered, ReplyTimeout } from "../../src/session/errors.ts"
import { refuseWith, SUP, supervisorBridge, withPeers } from "./support.ts"

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

describe("a question not written again, its timeout up since its first send", () => {
  it.effect("ends an ask with ReplyTimeout", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.onSend = refuseWith(DeliveryCode.DeliveryExpired, ASK_TIMED_OUT_UNWRITTEN)
      const exit = yield* Effect.exit(unit.session.ask({ to: "B", message: "well?", timeoutMs: 60_000 }))
      const error = failureOf(exit)
      assert.instanceOf(error, ReplyTimeout)
      assert.strictEqual(error.message, 'No reply from "B" within 1 minute')
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("an ask the broker refuses with its own E_DELIVERY_EXPIRED is still not delivered", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers()
      unit.client.onSend = refuseWith(DeliveryCode.DeliveryExpired, Reason.expired)
      const error = failureOf(yield* Effect.exit(unit.session.ask({ to: "B", message: "well?", timeoutMs: 60_000 })))
      assert.instanceOf(error, NotDelivered)
    }))

  it.effect("ends a blocking contact_supervisor as timed out", () =>
    Effect.gen(function*() {
      const unit = yield* withPeers({ childBridge: supervisorBridge, askTimeoutMs: 120_000 })
      unit.client.supervisorSessionId = SUP.id
      unit.client.onSend = refuseWith(DeliveryCode.DeliveryExpired, ASK_TIMED_OUT_UNWRITTEN)
      const tool = unit.session.contactSupervisor
      if (tool === undefined) return yield* Effect.die("contact_supervisor is missing")
      const result = yield* tool({ reason: "need_decision", message: "?" })
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      assert.isFalse(yield* unit.session.waiting)
    }))
})
