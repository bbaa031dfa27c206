/**
 * Review revak probe of the `askto` merge (386d9a7e): `notDelivered`
 * (src/session/Sending.ts) marks every client `RequestTimeout` as the send's
 * own timeout (`sendTimedOut`), the re-list after `E_TARGET_REBOUND` included;
 * `settleUnacknowledged` (src/session/Ask.ts) then treats a question the
 * broker refused, and that was never sent again, as delivered. Over the fake
 * client under TestClock. FAILS on main as of the merge.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { RequestTimeout } from "../src/client/errors.ts"
import { ASK_EXPIRY_V1, EXACT_SEND_V1 } from "../src/protocol/features.ts"
import { ReplyTimeout } from "../src/session/errors.ts"
import { B, reboundOnce, withPeers } from "./session/support.ts"

const TIMEOUT = 5_000

describe("review revak: an ask refused E_TARGET_REBOUND whose re-list times out", () => {
  it.effect("AK2: is not settled as delivered and does not end ReplyTimeout after the ask's timeout (the question went nowhere)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      reboundOnce(client, B)
      const rebound = client.onSend
      // The broker refuses the question (E_TARGET_REBOUND); the list the session then makes is not answered.
      client.onSend = (request) => {
        client.listFailure = new RequestTimeout({ operation: "list", timeoutMs: 3_000 })
        return rebound(request)
      }
      const ask = yield* Effect.forkChild(session.ask({ to: "B", message: "q", timeoutMs: TIMEOUT }))
      yield* TestClock.adjust(TIMEOUT + 1_000)
      const exit = ask.pollUnsafe()
      const failure = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.strictEqual(client.sends.length, 1, "the question was sent once, refused, and never sent again")
      assert.isDefined(exit, "the ask still waits, as if its question had been delivered")
      assert.notInstanceOf(
        failure,
        ReplyTimeout,
        `a question the broker refused and that was never sent again ended "${String(failure)}" after ${client.settles} settling round trip(s)`
      )
    }))
})
