/**
 * A session registers again while its old connection is closing, between
 * the close's `OutputEnd.forceParked` (which takes the connection's parked
 * output) and its `Router.detach` (which gives back what was never written):
 * an await of `finish` (ConnectionActor.ts) — the writer's interruption,
 * the destroy — lies between them, and another connection's batches can
 * run there. The old connection's own parked list (its mailbox flush that
 * did not fit) must still be reachable by the takeover's `OutputEnd.handOver`,
 * or a sender's new message, routed to the new connection, overtakes its
 * older mail that comes back only at the detach. On a Router driven by
 * hand (no fibers), so the registration lands exactly in that gap.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

/** The message texts among `frames`, in order. */
const textsOf = (frames: ReadonlyArray<OutFrame>): Array<string> =>
  frames.flatMap((frame) => {
    const parsed: { type: string; message?: { content: { text: string } } } = JSON.parse(frameText(frame))
    return parsed.type === "message" ? [`${parsed.message?.content.text}`] : []
  })

describe("a session registers again while its old connection's close holds its parked mailbox flush", () => {
  it.effect("the sender's new message, routed before the old close gives back what it held, is written after all its older mail", () =>
    Effect.gen(function*() {
      const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2 })
      let connections = 0
      const session = (sessionId: string, stuck: boolean): Peer => {
        const peer = attach(fakeConnection(++connections, stuck))
        batch(peer, [registerFrame({ sessionId })])
        return peer
      }
      const away = session("twin", false)
      const sender = session("sender", false)
      batch(away, [{ type: "unregister" }])
      for (let i = 0; i < 5; i++) {
        router.output.writes.takeForWrite(sender)
        batch(sender, [{ type: "send", to: "twin", message: message(`m${i}`) }])
      }
      // twin back on a connection whose writer is stuck: its first write took `registered` and m0, m1… are parked.
      const old = session("twin", true)
      assert.strictEqual(old.parked.length, 4)
      // Its close begins (a destroy: its client dropped it), as `finish` runs it, up to the await.
      closePeer(old, "destroy")
      router.output.end.forceParked(old)
      // In that await: twin registers again, and the sender sends it a new message.
      // Its writer is stuck too: its first write (in flight for good) and then its outbox hold what it got, in order.
      const fresh = session("twin", true)
      router.output.writes.takeForWrite(sender)
      batch(sender, [{ type: "send", to: "twin", message: message("tiny") }])
      // The close goes on: what the old connection still held goes back.
      router.abandonWrites(old)
      router.detach(old, [...router.output.end.drainOnClose(old), ...router.output.end.takeOwnParked(old)])
      router.output.end.releaseWaiters(old)
      const texts = [...textsOf(fresh.writer.inFlight?.frames ?? []), ...textsOf(router.output.writes.takeForWrite(fresh).frames)]
      assert.deepStrictEqual(texts.filter((text) => text !== "m0"), ["m1", "m2", "m3", "m4", "tiny"])
    }))
})
