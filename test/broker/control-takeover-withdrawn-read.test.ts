/**
 * A cancel owed to the client instance that READ its message, when that
 * message — a cancelled copy the mailbox gave the instance's return, or a
 * message still in its custody — comes back at a takeover by another
 * instance (b-2) and goes nowhere (withdrawn, it is not b-2's: MailReturns'
 * `requeueForwarded` → `dropWithdrawn`, which leaves the control owed to the
 * client that read it). b-2 never had the message and gets neither; the
 * reader's next return gets the cancel once (review revba BA3).
 *
 * - b-1 read m1 and dropped unconfirmed; d cancelled m1, kept as a cancelled
 *   copy for b-1; b-1 returned on a connection whose socket takes nothing,
 *   the copy and its cancel stuck there, in its write (the old close gives
 *   them back: MailReturns.giveBack → `keepAlone`, which skipped a control
 *   whose message came back) or in its own parked list (the takeover's hand-
 *   over: OutputEnd's `handOne`, which dropped one whose message went
 *   nowhere). Each fails without its keep.
 * - b-1 read m1 and its cancel, parked at d behind b-1's full outbox, was
 *   dropped when m1 came back from b-1's custody at b-2's takeover
 *   (`requeueForwarded`'s drop of the parked controls):
 *   control-takeover-parked-read.test.ts.
 * - The converse: m1 read by b-1 only, then given by the mailbox to a NEW
 *   instance b-3 whose socket takes nothing, cancelled there (the route names
 *   b-3), b-2 taking over: the cancel for b-3 is not kept for b-3, which
 *   never received m1 (`readBy`: kept only for an instance that read the
 *   message) — neither parked at d (taken out with m1), nor in b-3's outbox
 *   behind m1 in its stuck write (given back alone at its close), nor with
 *   m1 in its outbox (the hand-over's `handOne`). Each fails if every such
 *   control is kept.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import { isMessage } from "../../src/broker/OutboundItems.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { custodyFeatures, type Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const HOUR = 3_600_000

/** A hand-driven broker with sender `d`; `registerB` registers `b` as a client instance, on a socket that may take nothing. */
const takeoverWorld = (outboxCapacity: number) =>
  Effect.gen(function*() {
    const { attach, batch, close, router, tryDrain } = yield* handRouter({ mailboxRetention: HOUR, outboxCapacity }, () => 1_000_000)
    const written = new Map<Peer, Array<Seen>>()
    let nextId = 1
    const connect = (stuck: boolean): Peer => {
      const frames: Array<Seen> = []
      const peer = attach({
        ...fakeConnection(nextId++, false),
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
    /** The messages and controls `peer` was written, as `message <id>` and `<action> <id>`. */
    const seenOf = (peer: Peer): ReadonlyArray<string> => {
      peer.writer.flush()
      return (written.get(peer) ?? []).flatMap((f) =>
        f.type === "message" ? [`message ${f.message?.id}`] : f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []
      )
    }
    /** What waits on `peer` unwritten: its write in progress, outbox and own parked list, as `message <id>` and `control <id>`. */
    const stuckOn = (peer: Peer): ReadonlyArray<string> =>
      [...(peer.writer.inFlight?.returnable ?? []), ...peer.outbox, ...peer.parked.map(([, item]) => item)].flatMap((item) =>
        item instanceof ControlFrame ? [`control ${item.messageId}`] : isMessage(item) ? [`message ${item.mail.message.id}`] : []
      )
    const registerB = (instanceId: string, stuck = false): Peer => {
      const peer = connect(stuck)
      batch(peer, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId } })])
      return peer
    }
    const closeAbandoned = (peer: Peer): void => {
      closePeer(peer, "destroy")
      router.abandonWrites(peer)
      close(peer)
    }
    /** `peer`'s drainer offers what its registration's flush parked, until nothing is left. */
    const drained = (peer: Peer): Peer => {
      for (let n = 0; n < 20; n++) {
        seenOf(peer)
        if (!tryDrain(peer)) break
      }
      return peer
    }
    const d = connect(false)
    batch(d, [registerFrame({ sessionId: "d" })])
    return { batch, router, d, seenOf, stuckOn, registerB, closeAbandoned, drained }
  })

/**
 * b-1 read m1 and dropped unconfirmed; d cancelled it (a cancelled copy kept for b-1); b-1's return, whose socket
 * takes nothing, holds the copy and its cancel unwritten when b-2 takes over and the return closes; b-2 leaves.
 */
const copyStuckAtTakeover = (outboxCapacity: number) =>
  Effect.gen(function*() {
    const w = yield* takeoverWorld(outboxCapacity)
    const b1 = w.registerB("b-1")
    const m1 = message("m1")
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    assert.include(w.seenOf(b1), `message ${m1.id}`, "m1 was not written to b-1: the test sets up nothing")
    w.closeAbandoned(b1)
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    const back = w.registerB("b-1", true)
    assert.deepStrictEqual(w.stuckOn(back), [`message ${m1.id}`, `control ${m1.id}`], "m1's copy and its cancel are not stuck on b-1's return: the test sets up nothing")
    const b2 = w.registerB("b-2")
    w.closeAbandoned(back)
    assert.notInclude(w.seenOf(b2), `cancel ${m1.id}`, "b-2, which never had m1, got its cancel")
    assert.notInclude(w.seenOf(b2), `message ${m1.id}`, "b-2 got the withdrawn m1")
    w.batch(b2, [{ type: "unregister" }])
    w.closeAbandoned(b2)
    return { w, m1 }
  })

describe("a cancelled copy's cancel stuck on its reader's return at a takeover by another instance", () => {
  it.effect("in the return's stuck write (the old close's give-back): b-1's next return gets the cancel once", () =>
    Effect.gen(function*() {
      const { m1, w } = yield* copyStuckAtTakeover(4)
      const seen = w.seenOf(w.drained(w.registerB("b-1"))).filter((c) => c.endsWith(m1.id))
      assert.deepStrictEqual(seen, [`cancel ${m1.id}`], "b-1 read m1: its next return is told of the cancel once, and not given m1 again")
    }))

  it.effect("in the return's own parked list (the takeover's hand-over): b-1's next return gets the cancel once", () =>
    Effect.gen(function*() {
      const { m1, w } = yield* copyStuckAtTakeover(1)
      const seen = w.seenOf(w.drained(w.registerB("b-1"))).filter((c) => c.endsWith(m1.id))
      assert.deepStrictEqual(seen, [`cancel ${m1.id}`], "b-1 read m1: its next return is told of the cancel once, and not given m1 again")
    }))
})

/**
 * b-1 read m1 and dropped unconfirmed; a new instance b-3 registers on a socket that takes nothing and is flushed m1
 * (not withdrawn yet: read by b-1 only); d cancels it there (the route names b-3); b-2 takes over, b-3 closes, b-2
 * leaves, and b-3 returns.
 */
const newInstanceFlushed = (outboxCapacity: number, where: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const w = yield* takeoverWorld(outboxCapacity)
    const b1 = w.registerB("b-1")
    const m1 = message("m1")
    w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
    assert.include(w.seenOf(b1), `message ${m1.id}`, "m1 was not written to b-1: the test sets up nothing")
    w.closeAbandoned(b1)
    const b3 = w.registerB("b-3", true)
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    const cancelAtD = w.d.parked.some(([to, item]) => to === b3 && item instanceof ControlFrame)
    assert.deepStrictEqual([...w.stuckOn(b3), ...(cancelAtD ? ["control at d"] : [])], where.map((x) => x.replace("m1", m1.id)), "m1 and its cancel do not wait where the test needs them")
    const b2 = w.registerB("b-2")
    w.closeAbandoned(b3)
    assert.notInclude(w.seenOf(b2), `cancel ${m1.id}`, "b-2, which never had m1, got its cancel")
    w.batch(b2, [{ type: "unregister" }])
    w.closeAbandoned(b2)
    const again = w.drained(w.registerB("b-3"))
    assert.notInclude(w.seenOf(again), `cancel ${m1.id}`, "b-3 never received m1, yet its return was given m1's cancel")
    assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel for an instance that never received its message is kept")
  })

describe("a cancel for an instance that never received its message, which came back at a takeover and went nowhere", () => {
  it.effect("m1 in b-3's parked flush, the cancel parked at d behind it (taken out with m1): b-3's return gets no cancel", () =>
    newInstanceFlushed(1, ["message m1", "control at d"]))

  it.effect("m1 in b-3's stuck write, the cancel in its outbox (given back alone at the close): b-3's return gets no cancel", () =>
    newInstanceFlushed(4, ["message m1", "control m1"]))

  it.effect("m1 and the cancel in b-3's outbox behind a stuck write (the hand-over): b-3's return gets no cancel", () =>
    Effect.gen(function*() {
      const w = yield* takeoverWorld(4)
      const b1 = w.registerB("b-1")
      const m1 = message("m1")
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.include(w.seenOf(b1), `message ${m1.id}`, "m1 was not written to b-1: the test sets up nothing")
      // b-3 takes b over on a socket that takes nothing (its `registered` stuck there); b-1's close gives m1 back
      // unconfirmed, read by b-1, and it goes on to b-3's outbox; d cancels it there (the route names b-3).
      const b3 = w.registerB("b-3", true)
      w.closeAbandoned(b1)
      w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
      const outbox = b3.outbox.flatMap((item) => item instanceof ControlFrame ? [`control ${item.messageId}`] : isMessage(item) ? [`message ${item.mail.message.id}`] : [])
      assert.deepStrictEqual(outbox, [`message ${m1.id}`, `control ${m1.id}`], "m1 and its cancel are not in b-3's outbox: the test sets up nothing")
      const b2 = w.registerB("b-2")
      assert.notInclude(w.seenOf(b2), `cancel ${m1.id}`, "b-2, which never had m1, got its cancel")
      w.closeAbandoned(b3)
      w.batch(b2, [{ type: "unregister" }])
      w.closeAbandoned(b2)
      const again = w.drained(w.registerB("b-3"))
      assert.notInclude(w.seenOf(again), `cancel ${m1.id}`, "b-3 never received m1, yet its return was given m1's cancel")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel for an instance that never received its message is kept")
    }))
})
