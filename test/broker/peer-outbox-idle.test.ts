/**
 * A connection's outbox holds no list of its own while nothing is queued
 * (`Peer.queue`, `Peer.takeOutbox`): an idle session's connection, whose
 * writer took its last output, keeps no empty array (issue 16,
 * docs/performance.md "Idle sessions, seventy-second stop"). On a Router
 * driven by hand (handRouter), with writes that complete at once, so each
 * batch's output is taken and written before the test looks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

describe("Peer outbox of an idle connection", () => {
  it.effect("holds no list once its writer took its output, and queues in order again after", () =>
    Effect.gen(function*() {
      const { attach, batch } = yield* handRouter({}, () => 1_000_000)
      const written = new Map<number, Array<string>>()
      const connect = (id: number): Peer => {
        const frames: Array<string> = []
        written.set(id, frames)
        return attach({
          ...fakeConnection(id, false),
          write: (out: ReadonlyArray<OutFrame>) => {
            for (const frame of out) frames.push(String(JSON.parse(frameText(frame)).type))
            return undefined
          }
        })
      }
      const a = connect(1)
      batch(a, [registerFrame({ sessionId: "a" })])
      assert.deepStrictEqual(written.get(1), ["registered"], "a's writer wrote its output")
      assert.strictEqual(a.outbox.length, 0)
      assert.isUndefined(a.outboxToEdit(), "an idle connection's outbox keeps no list")
      // Queued again: in order, and taken whole.
      a.queue("x")
      a.queue("y")
      assert.deepStrictEqual(a.outbox, ["x", "y"])
      assert.deepStrictEqual(a.takeOutbox(), ["x", "y"])
      assert.isUndefined(a.outboxToEdit())
      assert.deepStrictEqual(a.takeOutbox(), [])
    }))
})
