/**
 * A caller that comes to a send lost on the way only after a SECOND connection loss reads its verdict as one after
 * the loss (Resending.ts `lostOnTheWay`, review revbo BO1): the record is the client's, not the connection's.
 *
 * The first caller's send is lost as connection 1 writes it; connection 2 writes it again ("not found": the
 * target is not back), and drops while the first caller waits between tries, so the send is not unanswered there
 * and connection 3 does not write it again. A second caller of the same message comes on connection 3: its
 * first write (connection 1's) may have been delivered, so once the grace is over it should fail ConnectionLost,
 * as the first caller does, not TargetNotFound.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { advance, settle, step } from "../support/memory.ts"
import { failureOf, lostOnTheWayClient } from "./lostOnTheWay.ts"

const ID = "dddddddd-0000-4000-8000-0000000000f7"

describe("a later caller of a send lost on the way, come after a second loss", () => {
  it.effect("fails with ConnectionLost once the rejoin grace is over, as the first caller does", () =>
    Effect.gen(function*() {
      const { client, opened, request } = yield* lostOnTheWayClient(ID, ["drop"])
      const first = yield* step(client.send(request))
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      assert.isUndefined(first.pollUnsafe(), "setup: the send was not retried in the rejoin grace")
      // Connection 2 drops while the first caller waits between tries (its re-send was answered "not found").
      yield* settle(opened[1]!.destroy)
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 3, "setup: the client did not reconnect again")
      assert.isUndefined(first.pollUnsafe(), "setup: the first caller ended early")
      const second = yield* step(client.send(request))
      yield* advance("15 seconds")
      assert.instanceOf(failureOf(first), ConnectionLost, "setup: the first caller")
      const error = failureOf(second)
      assert.instanceOf(error, ConnectionLost, `the second caller got ${String(error)}`)
    }))
})
