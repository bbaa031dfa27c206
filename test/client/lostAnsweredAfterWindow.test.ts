/**
 * A caller's retry of a send lost on the way, written within the replay window of the lost write and answered
 * just after it, ends ConnectionLost ("maybe delivered") as the same write read as a late answer would: the record
 * is asked as the write is entered, as the connection's `begin` marks it, not when the answer is read (review
 * revbr BR2: an answer read past the window found the entry expired and the "not found" stood as TargetNotFound).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Deferred, Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { advance, step } from "../support/memory.ts"
import { failureOf, lostOnTheWayClient, timedOutThenDropped } from "./lostOnTheWay.ts"

const ID = "dddddddd-0000-4000-8000-0000000000b2"

describe("a retry written in the window, answered just after it", () => {
  it.effect("ends ConnectionLost, as its write was after the loss", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      // Connection 1 swallows sends (delivered or not, the client cannot tell); connection 2 holds them until the test lets them go.
      const { client, opened, request } = yield* lostOnTheWayClient(
        ID,
        ["swallow", { holdUntil: gate }],
        { sendTimeoutMs: 1000 }
      )
      const t0 = yield* Clock.currentTimeMillis
      yield* timedOutThenDropped(client, opened[0]!, request, "first caller", "1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      const now = yield* Clock.currentTimeMillis
      yield* advance(`${Math.round(t0 + REPLAY_WINDOW_MS - 200 - now)} millis`)
      // Written 200 ms before the window's end (entered, `begin`), its frame reaches the broker 300 ms after it.
      const retry = yield* step(client.send(request))
      yield* advance("500 millis")
      yield* Deferred.succeed(gate, undefined)
      for (let i = 0; i < 15; i++) yield* advance("1 second")
      const error = failureOf(retry)
      assert.instanceOf(error, ConnectionLost, `the retry got ${String(error)}`)
    }))
})
