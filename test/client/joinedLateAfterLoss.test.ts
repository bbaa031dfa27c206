/**
 * A caller that comes to a send lost with a connection only after the client wrote it again on the next one.
 *
 * The first caller's send is lost as its connection writes it; the client writes it again first thing on the
 * next connection, where its target is not back yet ("not found", the rejoin grace). A second caller of the
 * same message (same id and payload) comes only then: it never saw the loss itself, but it joins that re-send
 * or writes the message again after it, and every answer it reads there speaks for a write after the loss, not
 * for the first one, which an earlier broker may have delivered. So once the grace is over it fails with
 * `ConnectionLost` (outcome unknown), as the first caller does — not with the "not found", which says the
 * message never arrived (Resending.ts `sendRejoining`, PendingSends.ts `writtenAfterLoss`; docs/client.md).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { advance, step } from "../support/memory.ts"
import { failureOf, lostOnTheWayClient } from "./lostOnTheWay.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e2"

describe("a second caller of a send lost on the way, come after the re-send", () => {
  it.effect("fails with ConnectionLost once the rejoin grace is over, as the first caller does", () =>
    Effect.gen(function*() {
      // The first connection drops as it writes the send: the broker never reads it, the client cannot know.
      const { client, request } = yield* lostOnTheWayClient(ID, ["drop"])
      const first = yield* step(client.send(request))
      yield* advance("1 second")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      assert.isUndefined(first.pollUnsafe(), "setup: the send was not retried in the rejoin grace")
      const second = yield* step(client.send(request))
      yield* advance("15 seconds")
      assert.instanceOf(failureOf(first), ConnectionLost, "setup: the first caller")
      const error = failureOf(second)
      assert.instanceOf(error, ConnectionLost, `the second caller got ${String(error)}`)
    }))
})
