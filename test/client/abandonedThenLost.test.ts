/**
 * A retry of a send whose first caller timed out, and whose connection was then lost, reads its verdict as one
 * after the loss (Resending.ts `lostOnTheWay` records abandoned sends too, review revbo BO2).
 *
 * Connection 1 takes the send's frame and never answers it (the broker's answer is lost with it, say); the first
 * caller times out (outcome unknown) and the connection drops with the send unanswered. It is abandoned, so the
 * next connection does not write it again (ConnectionLifetime.ts), but the client records it as lost on the
 * way. The caller retries the same message there ("not found": not back yet): once the grace is over, the first write may still have been delivered by a broker that forgot it, so the retry should
 * end ConnectionLost (outcome unknown), not TargetNotFound (never delivered).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { advance, step } from "../support/memory.ts"
import { failureOf, lostOnTheWayClient, timedOutThenDropped } from "./lostOnTheWay.ts"

const ID = "dddddddd-0000-4000-8000-0000000000f8"

describe("a retry of a send timed out, then lost with its connection", () => {
  it.effect("fails with ConnectionLost once the rejoin grace is over", () =>
    Effect.gen(function*() {
      // Connection 1 swallows the send's frame: the client cannot tell it from one delivered whose answer was lost.
      const { client, opened, request } = yield* lostOnTheWayClient(ID, ["swallow"], { sendTimeoutMs: 1000 })
      yield* timedOutThenDropped(client, opened[0]!, request, "first caller", "1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      const retry = yield* step(client.send(request))
      yield* advance("15 seconds")
      const error = failureOf(retry)
      assert.instanceOf(error, ConnectionLost, `the retry got ${String(error)}`)
    }))
})
