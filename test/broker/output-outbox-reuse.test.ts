/**
 * A write takes its peer's outbox array (`OutputWrites.takeForWrite`); the
 * array, emptied, becomes the outbox a later write gives its peer, instead of
 * a new array per write (docs/performance.md, "Garbage, seventy-second stop").
 * What must hold besides: no two peers ever share one outbox array, and each
 * peer's output still reaches that peer alone, in order. On a Router driven by
 * hand, with connections that record the texts of the messages written to them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

/** A connection whose writes complete at once, recording the text of each `message` frame written to it. */
const recording = (id: number, written: Array<string>): Connection => ({
  ...fakeConnection(id, false),
  write: (frames) => {
    for (const frame of frames) {
      const parsed: { type: string; message?: { content: { text: string } } } = JSON.parse(frameText(frame))
      if (parsed.type === "message") written.push(`${parsed.message?.content.text}`)
    }
    return undefined
  }
})

const send = (to: string, text: string) => ({ type: "send", to, message: message(text) })

describe("the outbox array a write takes", () => {
  it.effect("is some peer's outbox again after later writes, emptied; no two peers share one; output reaches its own peer", () =>
    Effect.gen(function*() {
      const { attach, batch } = yield* handRouter({})
      const toA: Array<string> = []
      const toB: Array<string> = []
      const a = attach(recording(1, toA))
      batch(a, [registerFrame({ sessionId: "a" })])
      const b = attach(recording(2, toB))
      batch(b, [registerFrame({ sessionId: "b" })])
      const sender = attach(fakeConnection(3, false))
      batch(sender, [registerFrame({ sessionId: "sender" })])
      const peers = [a, b, sender]

      // The array `a`'s next write takes: it holds m1 when taken.
      const taken = a.outbox
      batch(sender, [send("a", "m1")])
      assert.deepStrictEqual(toA, ["m1"])
      assert.notStrictEqual(a.outbox, taken, "a's write left a its outbox array")
      // The writes of `b` and of the sender (its acknowledgements) that follow give out the spare array.
      batch(sender, [send("b", "m2")])
      batch(sender, [send("a", "m3"), send("b", "m4")])
      assert.isTrue(peers.some((peer) => peer.outbox === taken), "the array a's write took is no peer's outbox: not reused")
      assert.strictEqual(taken.length, 0)
      assert.strictEqual(new Set(peers.map((peer) => peer.outbox)).size, peers.length, "two peers share an outbox array")
      assert.deepStrictEqual(toA, ["m1", "m3"])
      assert.deepStrictEqual(toB, ["m2", "m4"])
    }))
})
