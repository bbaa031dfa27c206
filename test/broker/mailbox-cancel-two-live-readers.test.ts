/**
 * A cancel of a mailbox copy read by two client instances, both live again
 * without having taken it, gives it to each (`MailDelivery.cancel`, review
 * revl L3 with L6's readers). c's mail m0 was read by P49 holders b-1 and
 * then f-1, each dropping unconfirmed; both are back and live without
 * having taken it (another holder, e, is live, so neither is the sole
 * holder); d cancels m0. Both are given the message and the cancel now; e,
 * which never read it, nothing. The cancel used to tell only the last live
 * reader it found, leaving b-1 untold until a return that may never come
 * (review revm M5).
 *
 * On a Router driven by hand, with every connection's frames recorded.
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

const named = { name: "B", cwd: "/tmp" }

describe("a cancelled copy with two readers, both live", () => {
  it.effect("both live readers are given the message and the cancel", () =>
    Effect.gen(function*() {
      const { attach, batch, close, router } = yield* handRouter({}, () => 1_000_000)
      const written = new Map<Peer, Array<Seen>>()
      let nextId = 1
      const connect = (): Peer => {
        const frames: Array<Seen> = []
        const peer = attach({
          ...fakeConnection(nextId++, false),
          unfinishedWrite: () => undefined,
          write: (out: ReadonlyArray<OutFrame>) => {
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
      const register = (sessionId: string, instanceId?: string): Peer => {
        const peer = connect()
        const frame = instanceId === undefined ? {} : { features: custodyFeatures, instanceId }
        batch(peer, [registerFrame({ sessionId, ...named, frame })])
        return peer
      }
      const d = connect()
      batch(d, [registerFrame({ sessionId: "d" })])
      closeAbandoned(register("c"))
      const b1 = register("b", "b-1")
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "c", message: m0 }])
      assert.deepStrictEqual(messagesAndControls(framesOf(b1)), [`message ${m0.id}`], "b-1 did not take c's mail")
      closeAbandoned(b1)
      const f1 = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1)), [`message ${m0.id}`], "f-1 did not take c's mail")
      // e registers while f-1 is live (not the sole holder then: it takes nothing), and stays.
      const e = register("e")
      assert.deepStrictEqual(messagesAndControls(framesOf(e)), [], "e took c's mail: the test sets up nothing")
      closeAbandoned(f1)
      const b1Again = register("b", "b-1")
      const f1Again = register("f", "f-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Again)), [], "b-1's return took c's mail: sets up nothing")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Again)), [], "f-1's return took c's mail: sets up nothing")
      batch(d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(messagesAndControls(framesOf(e)), [], "e, which never read it, was given it")
      assert.deepStrictEqual(messagesAndControls(framesOf(f1Again)), [`message ${m0.id}`, `cancel ${m0.id}`])
      assert.deepStrictEqual(messagesAndControls(framesOf(b1Again)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
