/**
 * Review revi I3 (helper fixmb): the read mark of a message back in the
 * mailbox lives on its mail object and is carried to each new copy, not on
 * the item the last connection gave back. b-1 reads m0 and drops
 * unconfirmed; b-1 comes back on a link whose socket takes nothing (so m0,
 * flushed to it, is never written there) and drops again. Whether the cancel
 * comes before or after that flaky return, b-1's next return still gets m0
 * and the cancel: it read m0 on its first connection.
 *
 * On a Router driven by hand, each connection's socket taking every write
 * or (`stuck`) none.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls, type Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

/** Connections on a hand-driven Router; `registerB` registers b as instance b-1 on a new one. */
const world = Effect.gen(function*() {
  const { attach, batch, close, router } = yield* handRouter({}, () => 1_000_000)
  const written = new Map<Peer, Array<Seen>>()
  /** A connection whose socket takes every write, or (`stuck`) none. */
  const connect = (id: number, stuck: boolean): Peer => {
    const frames: Array<Seen> = []
    const peer = attach({
      ...fakeConnection(id, false),
      unfinishedWrite: () => (stuck ? 0 : undefined),
      write: (out: ReadonlyArray<OutFrame>) => {
        if (stuck) return Effect.never
        for (const frame of out) frames.push(JSON.parse(frameText(frame)))
        return undefined
      }
    })
    written.set(peer, frames)
    return peer
  }
  const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
    peer.writer.flush()
    return written.get(peer) ?? []
  }
  const closeAbandoned = (peer: Peer): void => {
    closePeer(peer, "destroy")
    router.abandonWrites(peer)
    close(peer)
  }
  const registerB = (id: number, stuck: boolean): Peer => {
    const peer = connect(id, stuck)
    batch(peer, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-1" } })])
    return peer
  }

  return { batch, connect, framesOf, closeAbandoned, registerB }
})

describe("I3: the same instance's return drops before the copy is written to it", () => {
  it.effect("its next return still gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { batch, connect, framesOf, closeAbandoned, registerB } = yield* world
      const b1 = registerB(1, false)
      const d = connect(2, false)
      batch(d, [registerFrame({ sessionId: "d" })])
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      closeAbandoned(b1)
      batch(d, [{ type: "cancel_message", messageId: m0.id }])

      // b-1 back on a link that takes nothing, then gone again.
      const flaky = registerB(3, true)
      assert.strictEqual(flaky.custody?.size ?? 0, 0, "m0 was written to the flaky return: the test sets up nothing")
      closeAbandoned(flaky)

      const again = registerB(5, false)
      assert.deepStrictEqual(messagesAndControls(framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("cancelled after that flaky return: the next return still gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { batch, connect, framesOf, closeAbandoned, registerB } = yield* world
      const b1 = registerB(1, false)
      const d = connect(2, false)
      batch(d, [registerFrame({ sessionId: "d" })])
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "b", message: m0 }])
      assert.strictEqual(b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
      closeAbandoned(b1)
      const flaky = registerB(3, true)
      assert.strictEqual(flaky.custody?.size ?? 0, 0, "m0 was written to the flaky return: the test sets up nothing")
      closeAbandoned(flaky)
      batch(d, [{ type: "cancel_message", messageId: m0.id }])
      const again = registerB(5, false)
      assert.deepStrictEqual(messagesAndControls(framesOf(again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
