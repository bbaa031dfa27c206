/**
 * Simulation seed 81 (`--parked-flush --unregister --delivery`), shrunk: a
 * `received-v1` recipient's client dies while the broker is not reading its
 * connection, so the broker does not see it go; mail it wrote there stays
 * in custody (written, never confirmed). The recipient's next client, a new
 * instance (`rejoin-v1` with another `instanceId`), takes the session over
 * (P16). The custody comes back only when the old connection closes
 * (`Router.detach` → `Custody.detached`): until then the new connection holds
 * the messages of the senders with mail in that custody (CustodyHold.ts) —
 * routed ones parked with their sender's batch, forced ones (the old
 * outbox's, handed over at once) kept with the hold — so the sender's order
 * holds at the recipient. Other senders' mail is not held; nor is anything
 * when the old client had confirmed all it was given. A takeover of the new
 * connection carries the hold over; a new connection that closes first has
 * what its senders' drainers offer then kept, to go back after the custody.
 *
 * On a Router driven by hand (no fibers): writes complete at once (or, for
 * a connection made stuck, never), the old connection's close runs step by
 * step as `finish` runs it, and a sender's drainer offers its parked mail
 * when the test says. The setup (`setUp`) is in test/support/custodyHold.ts,
 * shared with the hold's other tests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { features, noting, setUp } from "../support/custodyHold.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { orderLabel } from "../support/handRouter.ts"

describe("a takeover of a received-v1 recipient whose old client never confirmed its mail", () => {
  it.effect("the new connection gets the sender's unconfirmed older mail before its newer mail", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, offer, send, sender, takeOver, writtenNew } = yield* setUp()
      const fresh = takeOver()
      send(sender, "m2")
      closeOld()
      yield* offer(sender)
      flushNew(fresh)
      // Without the hold: ["m2", "m0", "m1"].
      assert.deepStrictEqual(writtenNew, ["m0", "m1", "m2"])
    }))

  it.effect("the sender's newer mail waits until the old connection closes, then goes", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, offer, send, sender, takeOver, writtenNew } = yield* setUp()
      const fresh = takeOver()
      assert.isTrue(send(sender, "m2"), "the newer mail was not held: it parked nothing")
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, [], "the newer mail reached the new connection before the old one closed")
      closeOld()
      yield* offer(sender)
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, ["m0", "m1", "m2"])
    }))

  it.effect("what the old client confirms while its connection closes is not given again; the held mail goes after the close", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, offer, old, send, sender, takeOver, writtenNew } = yield* setUp()
      const fresh = takeOver()
      assert.isTrue(send(sender, "m2"))
      // The old client was alive after all: it confirms all it read as its connection closes (its reader,
      // stopped by the takeover's close, still applies `received` frames).
      assert.isTrue(old.isClosing, "the takeover did not close the old connection: the test sets up nothing")
      old.reader.frames([JSON.stringify({ type: "received", frames: old.framesWritten })])
      closeOld()
      yield* offer(sender)
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, ["m2"])
    }))

  it.effect("a sender with no mail in the old connection's custody is not held", () =>
    Effect.gen(function*() {
      const { flushNew, other, send, sender, takeOver, writtenNew } = yield* setUp()
      const fresh = takeOver()
      assert.isTrue(send(sender, "m2"))
      assert.isFalse(send(other, "e0"), "mail from a sender with nothing in the custody was held")
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, ["e0"])
    }))

  it.effect("nothing is held when the old client had confirmed all it was given", () =>
    Effect.gen(function*() {
      const { batch, flushNew, old, send, sender, takeOver, writtenNew } = yield* setUp()
      batch(old, [{ type: "received", frames: old.framesWritten }])
      const fresh = takeOver()
      assert.isFalse(send(sender, "m2"), "the newer mail was held with nothing in the custody")
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, ["m2"])
    }))

  it.effect("the old outbox's mail, handed over at once, and the write in progress keep their places too", () =>
    Effect.gen(function*() {
      let stuck = false
      const { closeOld, flushNew, offer, send, sender, takeOver, writtenNew, writtenOld } = yield* setUp({
        stuckOld: () => stuck
      })
      // The old client's socket stops taking writes: `m2` is in a write that never completes, `m3` waits in the outbox.
      stuck = true
      assert.isFalse(send(sender, "m2"))
      assert.isFalse(send(sender, "m3"))
      assert.deepStrictEqual(writtenOld, ["m0", "m1", "m2"], "the old connection's write in progress is not m2: the test sets up nothing")
      const fresh = takeOver()
      send(sender, "m4")
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, [], "mail of the held sender reached the new connection before the old one closed")
      closeOld()
      yield* offer(sender)
      flushNew(fresh)
      // Without the hold: ["m3", "m4", "m0", "m1", "m2"].
      assert.deepStrictEqual(writtenNew, ["m0", "m1", "m2", "m3", "m4"])
    }))

  it.effect("a takeover of the new connection while it holds carries the hold over: the sender's mail still follows the old custody", () =>
    Effect.gen(function*() {
      const { close, closeOld, flushNew, offer, send, sender, takeOver, takeOverAs } = yield* setUp()
      const fresh = takeOver()
      assert.isTrue(send(sender, "m2"))
      // A third instance takes the session over before the first connection closed.
      const writtenThird: Array<string> = []
      const third = takeOverAs(5, "b-3", writtenThird)
      assert.isTrue(send(sender, "m3"), "the sender's mail for the third connection was not held")
      close(fresh)
      closeOld()
      // The sender's drainer offers all it parked: m2 (refused by the second connection, taken over, it goes
      // to the third after m0 and m1), its acknowledgement, m3, and its acknowledgement.
      while (sender.parked.length > 0) yield* offer(sender)
      flushNew(third, writtenThird)
      // Without the carry-over: ["m3", "m0", "m1", "m2"].
      assert.deepStrictEqual(writtenThird, ["m0", "m1", "m2", "m3"])
    }))

  it.effect("when the new connection closes first, the held mail goes back after the old custody: the session's next connection gets it in order", () =>
    Effect.gen(function*() {
      const { close, closeOld, flushNew, offer, send, sender, takeOver, takeOverAs } = yield* setUp()
      const fresh = takeOver()
      assert.isTrue(send(sender, "m2"))
      close(fresh)
      // Woken by that close, the sender's drainer offers m2: kept with the hold, not sent to the mailbox ahead of m0 and m1.
      while (sender.parked.length > 0) yield* offer(sender)
      closeOld()
      const writtenLater: Array<string> = []
      const later = takeOverAs(5, "b-3", writtenLater)
      flushNew(later, writtenLater)
      // Without the hold's keeping it: ["m2", "m0", "m1"].
      assert.deepStrictEqual(writtenLater, ["m0", "m1", "m2"])
    }))

  it.effect("a held sender whose connection closes: its session_left reaches the new connection after its held mail", () =>
    Effect.gen(function*() {
      const { attach, close, closeOld, register, router, send, sender } = yield* setUp()
      const labels: Array<string> = []
      const conn: Connection = {
        ...fakeConnection(3, false),
        write: (frames: ReadonlyArray<OutFrame>) => {
          for (const frame of frames) labels.push(...orderLabel(frame))
          return undefined
        }
      }
      const fresh = register(attach(conn), "b-2")
      assert.isTrue(send(sender, "m2"), "m2 was not held")
      // The sender's client goes away while m2 is held: m2 is kept with the hold, d's departure withheld.
      close(sender)
      for (const frame of router.output.writes.takeForWrite(fresh).frames) labels.push(...orderLabel(frame))
      closeOld()
      for (const frame of router.output.writes.takeForWrite(fresh).frames) labels.push(...orderLabel(frame))
      assert.strictEqual(fresh.state, "registered")
      // Without the departure's hold: ["left d", "m0", "m1", "m2"].
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "left d"])
    }))

  it.effect("a connection that took the session over and registers as another session is not held for it", () =>
    Effect.gen(function*() {
      const { batch, sender, takeOver } = yield* setUp()
      const fresh = takeOver()
      batch(fresh, [{ type: "unregister" }])
      batch(fresh, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-1" } })])
      assert.strictEqual(fresh.session?.id, "c", "the connection did not register as c: the test sets up nothing")
      // batch is true when the send parked: held behind b's old custody.
      assert.isFalse(batch(sender, [{ type: "send", to: "c", message: message("to c") }]), "mail for c was held behind b's old custody")
    }))

  it.effect("a carried hold waits for the intermediate connection's close too: its unconfirmed mail of another sender keeps its place", () =>
    Effect.gen(function*() {
      const { close, closeOld, flushNew, offer, other, send, sender, takeOver, takeOverAs, writtenNew } = yield* setUp()
      const fresh = takeOver()
      // e is not held (nothing of e's in the first custody): e0 is written to the second connection,
      // whose client (another received-v1 instance) never confirms it.
      assert.isFalse(send(other, "e0"))
      flushNew(fresh)
      assert.deepStrictEqual(writtenNew, ["e0"], "the second connection did not write e0: the test sets up nothing")
      // A third instance takes over while the first close is still pending: the hold is carried, with e added.
      const writtenThird: Array<string> = []
      const third = takeOverAs(5, "b-3", writtenThird)
      assert.isTrue(send(other, "e1"), "e1 was not held behind the second connection's custody")
      // d's m2 is held too; d's connection closes, and m2 is kept with the hold.
      assert.isTrue(send(sender, "m2"), "m2 was not held")
      close(sender)
      closeOld()
      flushNew(third, writtenThird)
      // The hold waits for both closes: the first one's custody (m0, m1) is kept at its front meanwhile.
      // (e's drainer is not asked to offer here: held, it would wait for the second connection's close.)
      assert.deepStrictEqual(writtenThird, [])
      close(fresh)
      while (other.parked.length > 0) yield* offer(other)
      flushNew(third, writtenThird)
      // Each sender's order holds (the two senders' mail may interleave): the first close's custody went
      // ahead of the kept m2. Without the second connection's senders in the carried hold, e1 goes before e0;
      // with the first close's custody kept at the hold's end, m2 goes before m0 and m1.
      assert.deepStrictEqual(writtenThird.filter((text) => text.startsWith("m")), ["m0", "m1", "m2"])
      assert.deepStrictEqual(writtenThird.filter((text) => text.startsWith("e")), ["e0", "e1"])
      assert.strictEqual(writtenThird.length, 5, `third wrote ${JSON.stringify(writtenThird)}`)
    }))

  it.effect("the session registered anew after the new connection closed, before the old close: its next connection takes the hold", () =>
    Effect.gen(function*() {
      const { close, closeOld, flushNew, offer, send, sender, takeOver, takeOverAs } = yield* setUp()
      const fresh = takeOver()
      close(fresh)
      const writtenLater: Array<string> = []
      const later = takeOverAs(5, "b-3", writtenLater)
      assert.strictEqual(later.state, "registered", "b did not register again: the test sets up nothing")
      assert.isTrue(send(sender, "m2"), "m2 was not held behind the old custody")
      flushNew(later, writtenLater)
      assert.deepStrictEqual(writtenLater, [])
      closeOld()
      while (sender.parked.length > 0) yield* offer(sender)
      flushNew(later, writtenLater)
      // Without the hold's passing to the session's next connection: ["m2", "m0", "m1"].
      assert.deepStrictEqual(writtenLater, ["m0", "m1", "m2"])
    }))

  it.effect("mail the mailbox took while the session was away, flushed to its next connection, is kept with the hold, not parked for its drainer, and follows the old custody", () =>
    Effect.gen(function*() {
      const { awayThenAnew, closeOld, flushNew } = yield* setUp()
      const { later, writtenLater } = awayThenAnew()
      // Kept with the hold when its batch ends (`parkFor`): nothing is left for its drainer to offer.
      assert.strictEqual(later.parked.length, 0, "the mailbox flush was parked, for the connection's own drainer")
      flushNew(later, writtenLater)
      assert.deepStrictEqual(writtenLater, [])
      closeOld()
      flushNew(later, writtenLater)
      // Without the hold's taking the flush: m2 ahead of m0 and m1.
      assert.deepStrictEqual(writtenLater, ["m0", "m1", "m2"])
    }))

  it.effect("the old close coming right after the session registered anew: the mailbox's flush of a held sender's mail still follows the old custody", () =>
    Effect.gen(function*() {
      const { awayThenAnew, closeOld, flushNew, offer } = yield* setUp()
      const { later, writtenLater } = awayThenAnew()
      // The old close before any drainer of later's runs; then whatever later has parked is offered.
      closeOld()
      while (later.parked.length > 0) yield* offer(later)
      flushNew(later, writtenLater)
      // With the flush parked until its drainer offered it: ["m2", "m0", "m1"].
      assert.deepStrictEqual(writtenLater, ["m0", "m1", "m2"])
    }))

  it.effect("a held sender's newer mail, forced to the hold when its connection closes, stays behind its older mail in the mailbox's flush", () =>
    Effect.gen(function*() {
      const { awayThenAnew, close, closeOld, flushNew, offer, send, sender } = yield* setUp()
      const { later, writtenLater } = awayThenAnew()
      // d's newer m3 is held (parked with d's batch); d's drainer does not run before d's connection closes.
      assert.isTrue(send(sender, "m3"), "m3 was not held: the test sets up nothing")
      close(sender)
      while (later.parked.length > 0) yield* offer(later)
      closeOld()
      flushNew(later, writtenLater)
      // With the flush parked until its drainer offered it: ["m0", "m1", "m3", "m2"].
      assert.deepStrictEqual(writtenLater, ["m0", "m1", "m2", "m3"])
    }))

  it.effect("a connection that holds b's hold, registered as c since, taken over as c by another instance: c's unconfirmed mail comes before e's newer mail", () =>
    Effect.gen(function*() {
      const { attach, batch, close, flushNew, offer, other, takeOver, writtenNew } = yield* setUp()
      const h = takeOver()
      // h leaves b (b's hold, waiting for b's old close, stays with h) and registers as c.
      batch(h, [{ type: "unregister" }])
      batch(h, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-1" } })])
      assert.strictEqual(h.session?.id, "c", "h did not register as c: the test sets up nothing")
      const sendC = (text: string): boolean => batch(other, [{ type: "send", to: "c", message: message(text) }])
      assert.isFalse(sendC("c0"))
      flushNew(h)
      assert.deepStrictEqual(writtenNew, ["c0"], "c0 was not written to h: the test sets up nothing")
      // Another instance takes c over while h's client never confirmed c0: e's newer c1 waits for h's close.
      const writtenC2: Array<string> = []
      const c2 = attach(noting(7, writtenC2))
      batch(c2, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-2" } })])
      assert.strictEqual(c2.session?.id, "c", "c2 did not take c over: the test sets up nothing")
      sendC("c1")
      flushNew(c2, writtenC2)
      close(h)
      while (other.parked.length > 0) yield* offer(other)
      flushNew(c2, writtenC2)
      assert.deepStrictEqual(writtenC2, ["c0", "c1"])
    }))

  it.effect("control: the same takeover of c from a connection that holds no hold: c's unconfirmed mail comes before e's newer mail", () =>
    Effect.gen(function*() {
      const { attach, batch, close, flushNew, offer, other } = yield* setUp()
      const writtenH: Array<string> = []
      const h = attach(noting(6, writtenH))
      batch(h, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-1" } })])
      const sendC = (text: string): boolean => batch(other, [{ type: "send", to: "c", message: message(text) }])
      assert.isFalse(sendC("c0"))
      assert.deepStrictEqual(writtenH, ["c0"], "c0 was not written to h: the test sets up nothing")
      const writtenC2: Array<string> = []
      const c2 = attach(noting(7, writtenC2))
      batch(c2, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-2" } })])
      sendC("c1")
      flushNew(c2, writtenC2)
      close(h)
      while (other.parked.length > 0) yield* offer(other)
      flushNew(c2, writtenC2)
      assert.deepStrictEqual(writtenC2, ["c0", "c1"])
    }))

  /**
   * c on a connection `c1` whose client never confirms e's `c0`; another
   * instance takes c over (c's hold waits for c1's close) and its connection
   * closes first: c's hold waits for its holder's return. `registerC`
   * registers c anew on `h`.
   */
  const withCHoldAway = Effect.gen(function*() {
    const setup = yield* setUp()
    const { attach, batch, close, other } = setup
    const writtenC1: Array<string> = []
    const c1 = attach(noting(6, writtenC1))
    batch(c1, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-1" } })])
    const sendC = (text: string): boolean => batch(other, [{ type: "send", to: "c", message: message(text) }])
    assert.isFalse(sendC("c0"))
    assert.deepStrictEqual(writtenC1, ["c0"], "c0 was not written to c1: the test sets up nothing")
    const c2 = attach(noting(7, []))
    batch(c2, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-2" } })])
    close(c2)
    const registerC = (h: Peer): void => {
      batch(h, [registerFrame({ sessionId: "c", frame: { features, instanceId: "c-3" } })])
      assert.strictEqual(h.session?.id, "c", "h did not register as c: the test sets up nothing")
    }
    return { ...setup, c1, registerC, sendC }
  })

  it.effect("a connection still holding b's hold registers c while c's hold waits for its holder's return: it takes c's hold, c's unconfirmed mail comes before e's newer mail", () =>
    Effect.gen(function*() {
      const { batch, c1, close, flushNew, offer, other, registerC, sendC, takeOver, writtenNew } = yield* withCHoldAway
      // h took b over (b's hold, still waiting for b's old close), left b, and registers c.
      const h = takeOver()
      batch(h, [{ type: "unregister" }])
      registerC(h)
      flushNew(h)
      writtenNew.length = 0
      sendC("c1")
      flushNew(h)
      close(c1)
      while (other.parked.length > 0) yield* offer(other)
      flushNew(h)
      assert.deepStrictEqual(writtenNew, ["c0", "c1"])
    }))

  it.effect("control: a connection holding no hold registers c while c's hold waits for its holder's return: c's unconfirmed mail comes before e's newer mail", () =>
    Effect.gen(function*() {
      const { attach, c1, close, flushNew, offer, other, registerC, sendC, writtenNew } = yield* withCHoldAway
      const h = attach(noting(8, writtenNew))
      registerC(h)
      flushNew(h)
      writtenNew.length = 0
      sendC("c1")
      flushNew(h)
      close(c1)
      while (other.parked.length > 0) yield* offer(other)
      flushNew(h)
      assert.deepStrictEqual(writtenNew, ["c0", "c1"])
    }))
})
