/**
 * A cancelled copy read by two sessions of one identity — its target b
 * (instance b-1) and then P49's other holder e (instance e-1), each dropping
 * unconfirmed — is kept for both (review L6). A new instance of b (b-2),
 * which never read it, registering first gets nothing and leaves the copy
 * in the mailbox (`WithdrawnCopies.withheldFrom`), so e-1's return still
 * gets the message and the cancel. b-2's flush used to take it, as b is
 * among its readers, and drop it for e-1 too (review revm M3, a regression
 * of helper wdcopy's readers list).
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

const setUp = Effect.gen(function*() {
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
  const register = (sessionId: string, instanceId: string): Peer => {
    const peer = connect()
    batch(peer, [registerFrame({ sessionId, ...named, frame: { features: custodyFeatures, instanceId } })])
    return peer
  }
  const b1 = register("b", "b-1")
  const d = connect()
  batch(d, [registerFrame({ sessionId: "d" })])
  const m0 = message("m0")
  batch(d, [{ type: "send", to: "b", message: m0 }])
  assert.strictEqual(b1.custody?.size, 1, "m0 is not in b-1's custody: the test sets up nothing")
  closeAbandoned(b1)
  const e1 = register("e", "e-1")
  assert.deepStrictEqual(messagesAndControls(framesOf(e1)), [`message ${m0.id}`], "e-1 did not take b's mail: the test sets up nothing")
  assert.strictEqual(e1.custody?.size, 1, "m0 is not in e-1's custody: the test sets up nothing")
  closeAbandoned(e1)
  batch(d, [{ type: "cancel_message", messageId: m0.id }])
  return { framesOf, register, m0 }
})

describe("a cancelled copy kept for b-1 and for P49's other holder e-1", () => {
  it.effect("e-1's return gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { framesOf, m0, register } = yield* setUp
      const back = register("e", "e-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(back)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))

  it.effect("a new instance of b registering first is given nothing, and e-1's return after it gets the message and the cancel", () =>
    Effect.gen(function*() {
      const { framesOf, m0, register } = yield* setUp
      const b2 = register("b", "b-2")
      assert.deepStrictEqual(messagesAndControls(framesOf(b2)), [], "b-2 was given the copy")
      const back = register("e", "e-1")
      assert.deepStrictEqual(messagesAndControls(framesOf(back)), [`message ${m0.id}`, `cancel ${m0.id}`])
    }))
})
