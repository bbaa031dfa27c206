/**
 * The client's record of sends lost on the way runs a send's window from its LATEST lost write: a retry written
 * afresh late in the first write's window, itself lost unanswered, may have been delivered, so a later retry past
 * the first write's window still ends ConnectionLost ("maybe delivered"), not TargetNotFound (review revbr BR1:
 * Resending.ts `record` kept the first write's time).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import type { UnansweredSend } from "../../src/client/PendingSends.ts"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { advance, step } from "../support/memory.ts"
import { failureOf, lostOnTheWayClient, timedOutThenDropped, unconnectedResending as resending } from "./lostOnTheWay.ts"

const ID = "dddddddd-0000-4000-8000-0000000000b1"

const lostSend = (since: number): UnansweredSend => ({
  request: { to: "beta", message: { id: "m1", timestamp: 0, content: { text: "m1" } } },
  frameType: "send",
  signature: "sig-m1",
  since,
  abandoned: true
})

describe("a send written afresh and lost again", () => {
  it("stays recorded for the replay window after its later lost write", () => {
    const resend = resending()
    resend.lost([lostSend(0)], () => false)
    const later = REPLAY_WINDOW_MS - 5_000
    resend.lost([lostSend(later)], () => false)
    assert.isTrue(resend.lostOnTheWay("m1", "sig-m1", later + 10_000), "the later lost write forgotten with the first")
  })

  it.effect("a retry after the second loss, past the first write's window, ends ConnectionLost", () =>
    Effect.gen(function*() {
      // Connections 1 and 2 swallow sends: each write may have been delivered, its answer lost.
      const { client, opened, request } = yield* lostOnTheWayClient(ID, ["swallow", "swallow"], { sendTimeoutMs: 1000 })
      yield* timedOutThenDropped(client, opened[0]!, request, "first caller", "110 seconds")
      assert.strictEqual((yield* client.status).connections, 2, "setup: the client did not reconnect")
      // A retry written afresh on connection 2 (the abandoned send was not written again), swallowed too.
      yield* timedOutThenDropped(client, opened[1]!, request, "second caller", "10 seconds")
      assert.strictEqual((yield* client.status).connections, 3, "setup: the client did not reconnect again")
      const retry = yield* step(client.send(request))
      yield* advance("15 seconds")
      const error = failureOf(retry)
      assert.instanceOf(error, ConnectionLost, `the retry got ${String(error)}`)
    }))
})
