/**
 * Review revh3 (C-ORD): a `message_control` frame — a sender's cancel or
 * supersede — must not reach the receiver's connection ahead of the message
 * it is about. The receiving client marks an unknown id replied
 * (`ReplyTracker.markReplied`) and then gets the message: a withdrawn
 * ask stayed pending.
 *
 * At a takeover of a `received-v1` recipient `b` by another instance, the
 * new connection holds sender `d`'s mail behind `d`'s mail unconfirmed in
 * the old connection's custody (CustodyHold.ts); the control about `d`'s
 * message is kept on that hold in order (ControlFrame.ts), whether the
 * message was handed over from the old outbox (kept on the hold) or is in
 * the old custody (given back at the old close, ahead of what the hold
 * keeps). Likewise a control about a message still in the recipient's own
 * parked mailbox flush waits behind it. A base old client (no custody, no
 * hold): the control follows the message as before.
 *
 * A control written to a `received-v1` client and never confirmed goes
 * back with the old connection's custody (review revcu): to the client's own
 * rejoin as it is (that client read the message, or gets it again too), to
 * another instance only right after its message given back in the same
 * close — not when the old client confirmed the message, nor for an ask
 * that is over, which is not given again.
 *
 * A control the old connection had not written yet at a takeover by
 * another instance (review ctlho): it goes to the new connection only
 * right after its message — handed over from the old outbox with it, or
 * given back at the old close (kept meanwhile on a custody hold, or, the
 * message in a base client's write in progress, on the old connection) —
 * and is dropped when the new instance never gets that message.
 *
 * Since ctl2: a message its sender cancelled or superseded before a
 * takeover by another instance never reaches that instance (MailDelivery's
 * `requeue`: its route records the instance given it), so neither does its
 * control (a cancel after the takeover of a message in the old custody
 * still follows it there, as above: Receipts.ts names the new instance in
 * its route when a hold covers its sender).
 *
 * On a Router driven by hand (no fibers): writes complete at once, or for
 * the old connection once made stuck never; its close runs as `finish`
 * runs it; a drainer offers its parked output when the test says.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Message } from "../../src/protocol/index.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { type HandRouter, handRouter } from "../support/handRouter.ts"

const custodyFeatures = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1]
const baseFeatures = [REJOIN_V1, TAKEOVER_V1]

/** A frame parsed as far as these tests read it. */
interface Seen {
  readonly type: string
  readonly message?: { readonly id: string; readonly content: { readonly text: string } }
  readonly control?: { readonly action: string; readonly messageId: string }
}

/**
 * Names what a connection was written, in order: a message by its text, a
 * control by its action and the text of the message it is about.
 */
const labeller = () => {
  const texts = new Map<string, string>()
  const labels: Array<string> = []
  return {
    labels,
    /** `text`'s message, remembered by id for the controls about it. */
    message: (text: string, extra: Partial<Message> = {}): Message => {
      const made = message(text, extra)
      texts.set(made.id, text)
      return made
    },
    note: (frames: ReadonlyArray<OutFrame>): void => {
      for (const frame of frames) {
        const seen: Seen = JSON.parse(frameText(frame))
        if (seen.type === "message") labels.push(seen.message?.content.text ?? "?")
        if (seen.type === "message_control") {
          labels.push(`${seen.control?.action} ${texts.get(seen.control?.messageId ?? "") ?? "?"}`)
        }
      }
    }
  }
}

/**
 * `b` registered by instance b-1 with `oldFeatures` on a connection that
 * writes at once until `stick()`; sender `d`'s m0 and m1 written there (never
 * confirmed), then — stuck — m2 taken by the socket and m3 left in the old
 * outbox. `takeOver` registers `b` from instance b-2 on a connection whose
 * writes are labelled; `closeOld` runs the old close as `finish` does;
 * `drain` offers all `d` parked; `flushNew` writes what the new one queued.
 */
const takenOver = (oldFeatures: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const { attach, batch, close, router } = yield* handRouter({})
    const seen = labeller()
    let stuck = false
    const old = attach({ ...fakeConnection(1, false), write: () => (stuck ? Effect.never : undefined) })
    batch(old, [registerFrame({ sessionId: "b", frame: { features: oldFeatures, instanceId: "b-1" } })])
    const d = attach(fakeConnection(2, false))
    batch(d, [registerFrame({ sessionId: "d" })])
    const m = ["m0", "m1", "m2", "m3"].map((text) => seen.message(text))
    const send = (item: Message): boolean => batch(d, [{ type: "send", to: "b", message: item }])
    send(m[0]!)
    send(m[1]!)
    stuck = true
    send(m[2]!)
    send(m[3]!)
    assert.strictEqual(old.outbox.length, 1, "m3 is not in the old outbox: the test sets up nothing")
    let fresh: Peer | undefined
    const takeOver = (): Peer => {
      fresh = attach({ ...fakeConnection(3, false), write: (frames: ReadonlyArray<OutFrame>) => (seen.note(frames), undefined) })
      batch(fresh, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-2" } })])
      return fresh
    }
    const closeOld = (): void => {
      closePeer(old, "destroy")
      router.abandonWrites(old)
      close(old)
    }
    const drain = (): Effect.Effect<void> =>
      Effect.gen(function*() {
        for (let next = router.output.drain.nextParked(d); next !== undefined; next = router.output.drain.nextParked(d)) {
          yield* router.output.drain.offerParked(d, next)
        }
      })
    const flushNew = (): void => {
      if (fresh !== undefined) seen.note(router.output.writes.takeForWrite(fresh).frames)
    }
    return { batch, closeOld, d, drain, flushNew, labels: seen.labels, m, message: seen.message, send, takeOver }
  })

describe("a control frame about mail a takeover's custody hold keeps", () => {
  it.effect("a cancel of the message handed over from the old outbox reaches the new connection after it", () =>
    Effect.gen(function*() {
      const { batch, closeOld, d, drain, flushNew, labels, m, takeOver } = yield* takenOver(custodyFeatures)
      const fresh = takeOver()
      assert.strictEqual(fresh.custodyHolds, 1, "no custody hold was taken: the test sets up nothing")
      batch(d, [{ type: "cancel_message", messageId: m[3]!.id }])
      flushNew()
      assert.deepStrictEqual(labels, [], "the cancel reached the new connection while its message was held")
      closeOld()
      yield* drain()
      flushNew()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "m3", "cancel m3"])
    }))

  it.effect("a cancel of a message in the old connection's custody reaches the new connection after it", () =>
    Effect.gen(function*() {
      const { batch, closeOld, d, drain, flushNew, labels, m, takeOver } = yield* takenOver(custodyFeatures)
      takeOver()
      batch(d, [{ type: "cancel_message", messageId: m[0]!.id }])
      closeOld()
      yield* drain()
      flushNew()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "m3", "cancel m0"])
    }))

  it.effect("a supersede of a held message reaches the new connection after it, and before the new message", () =>
    Effect.gen(function*() {
      const { closeOld, drain, flushNew, labels, m, message, send, takeOver } = yield* takenOver(custodyFeatures)
      takeOver()
      assert.isTrue(send(message("m4", { supersedes: m[3]!.id })), "the superseding message was not held")
      flushNew()
      assert.deepStrictEqual(labels, [], "the supersede reached the new connection while its message was held")
      closeOld()
      yield* drain()
      flushNew()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "m3", "supersede m3", "m4"])
    }))

  it.effect("a cancel queued in the old outbox behind its message: the withdrawn message is not handed over to the new instance, nor its cancel", () =>
    Effect.gen(function*() {
      const { batch, closeOld, d, drain, flushNew, labels, m, takeOver } = yield* takenOver(custodyFeatures)
      // Before the takeover: the old writer is stuck, so the cancel waits in the old outbox behind m3.
      batch(d, [{ type: "cancel_message", messageId: m[3]!.id }])
      takeOver()
      closeOld()
      yield* drain()
      flushNew()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2"])
    }))

  it.effect("a cancel queued in the old outbox of a message in the old custody: the old close gives neither to the new instance", () =>
    Effect.gen(function*() {
      const { batch, closeOld, d, drain, flushNew, labels, m, takeOver } = yield* takenOver(custodyFeatures)
      // Before the takeover: m0 is in the old custody, unconfirmed; the cancel waits in the old outbox behind m3.
      batch(d, [{ type: "cancel_message", messageId: m[0]!.id }])
      takeOver()
      flushNew()
      assert.deepStrictEqual(labels, [], "the cancel reached the new connection while its message was held")
      closeOld()
      yield* drain()
      flushNew()
      assert.deepStrictEqual(labels, ["m1", "m2", "m3"])
    }))

  it.effect("control: the old client a base one (no custody, no hold), the cancel follows its message", () =>
    Effect.gen(function*() {
      const { batch, closeOld, d, drain, flushNew, labels, m, takeOver } = yield* takenOver(baseFeatures)
      const fresh = takeOver()
      assert.strictEqual(fresh.custodyHolds, 0)
      batch(d, [{ type: "cancel_message", messageId: m[3]!.id }])
      closeOld()
      yield* drain()
      flushNew()
      assert.isBelow(labels.indexOf("m3"), labels.indexOf("cancel m3"), JSON.stringify(labels))
    }))
})

describe("a control frame about mail in the recipient's own parked mailbox flush", () => {
  it.effect("a cancel of a message its flush still parks reaches the recipient after it", () =>
    Effect.gen(function*() {
      const { attach, batch, close, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
      const seen = labeller()
      const d = attach(fakeConnection(2, false))
      batch(d, [registerFrame({ sessionId: "d" })])
      const first = attach(fakeConnection(1, false))
      batch(first, [registerFrame({ sessionId: "b" })])
      close(first)
      const m = ["m0", "m1", "m2", "m3"].map((text) => seen.message(text))
      for (const item of m) batch(d, [{ type: "send", to: "b", message: item }])
      const b = attach({ ...fakeConnection(3, false), write: (frames: ReadonlyArray<OutFrame>) => (seen.note(frames), undefined) })
      assert.isTrue(batch(b, [registerFrame({ sessionId: "b" })]), "b's mailbox flush parked nothing: the test sets up nothing")
      // Its outbox of two frames took its `registered` and m0.
      assert.deepStrictEqual(seen.labels, ["m0"], "b's flush did not park m1 to m3: the test sets up nothing")
      batch(d, [{ type: "cancel_message", messageId: m[3]!.id }])
      // d's drainer first, then b's, then d's: the cancel must wait for m1 to m3 all the same.
      tryDrain(d)
      while (tryDrain(b)) b.writer.flush()
      tryDrain(d)
      b.writer.flush()
      assert.deepStrictEqual(seen.labels, ["m0", "m1", "m2", "m3", "cancel m3"])
    }))
})

/**
 * The next connection of `b` after `old`: `register(instanceId)` attaches
 * it (writing at once, labelled by `seen`) and registers `b` from that
 * instance — `old`'s own rejoin or a takeover by another; `closeOld` runs
 * the old close as `finish` does when its writing is abandoned; `flushNew`
 * labels what the new connection was given.
 */
const successor = (
  hand: Pick<HandRouter, "attach" | "batch" | "close" | "router">,
  old: Peer,
  seen: ReturnType<typeof labeller>
) => {
  let fresh: Peer | undefined
  return {
    register: (instanceId: string): Peer => {
      const peer = hand.attach({ ...fakeConnection(3, false), write: (frames: ReadonlyArray<OutFrame>) => (seen.note(frames), undefined) })
      fresh = peer
      hand.batch(peer, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId } })])
      return peer
    },
    closeOld: (): void => {
      closePeer(old, "destroy")
      hand.router.abandonWrites(old)
      hand.close(old)
    },
    flushNew: (): void => {
      if (fresh === undefined) return
      fresh.writer.flush()
      seen.note(hand.router.output.writes.takeForWrite(fresh).frames)
    }
  }
}

/**
 * `b` registered by instance b-1 (`received-v1`) on a connection that writes
 * at once; sender `d`'s m0 (an ask when `ask`) then its cancel written there
 * — or, `supersede`, the supersede of m0 and m1 that supersedes it.
 * `confirmM0` has b-1 confirm reading the frame that carried m0 (not the
 * cancel); `register(instanceId)` registers `b` on a new connection — b-1's
 * own rejoin, or a takeover by another instance — and `closeOld` runs the old
 * close as `finish` does; `flushNew` labels what the new connection was given.
 */
const writtenThenCancelled = (ask: boolean, supersede = false) =>
  Effect.gen(function*() {
    const { attach, batch, close, router } = yield* handRouter({})
    const seen = labeller()
    const written: Array<OutFrame> = []
    const old = attach({ ...fakeConnection(1, false), write: (frames: ReadonlyArray<OutFrame>) => (written.push(...frames), undefined) })
    batch(old, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-1" } })])
    const d = attach(fakeConnection(2, false))
    batch(d, [registerFrame({ sessionId: "d" })])
    const m0 = seen.message("m0", ask ? { expectsReply: true } : {})
    batch(d, [{ type: "send", to: "b", message: m0 }])
    const m0End = old.framesWritten
    if (supersede) batch(d, [{ type: "send", to: "b", message: seen.message("m1", { supersedes: m0.id }) }])
    else batch(d, [{ type: "cancel_message", messageId: m0.id }])
    const types = written.map((frame) => (JSON.parse(frameText(frame)) as { type: string }).type)
    const expected = supersede ? ["message", "message_control", "message"] : ["message", "message_control"]
    assert.deepStrictEqual(types.slice(-expected.length), expected, "the old connection was not written m0 and its control: the test sets up nothing")
    const next = successor({ attach, batch, close, router }, old, seen)
    return {
      labels: seen.labels,
      confirmM0: (): void => void batch(old, [{ type: "received", frames: m0End }]),
      register: (instanceId: string): void => void next.register(instanceId),
      closeOld: next.closeOld,
      flushNew: next.flushNew
    }
  })

describe("a control frame the old client was written and never confirmed", () => {
  it.effect("takeover: a cancel written to the old connection after its message, neither confirmed: another instance is given neither", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, register } = yield* writtenThenCancelled(false)
      register("b-2")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, [])
    }))

  it.effect("own rejoin: a cancel written after its message, neither confirmed: the same instance is given both again", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, register } = yield* writtenThenCancelled(false)
      register("b-1")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["m0", "cancel m0"])
    }))

  it.effect("takeover: the old client confirmed the message, not the cancel: another instance, never given the message, is not given the cancel", () =>
    Effect.gen(function*() {
      const { closeOld, confirmM0, flushNew, labels, register } = yield* writtenThenCancelled(false)
      confirmM0()
      register("b-2")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, [])
    }))

  it.effect("takeover: the old client confirmed the message, not its supersede: another instance is given the new message, not the supersede", () =>
    Effect.gen(function*() {
      const { closeOld, confirmM0, flushNew, labels, register } = yield* writtenThenCancelled(false, true)
      confirmM0()
      register("b-2")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["m1"])
    }))

  it.effect("takeover: an ask and its cancel, neither confirmed: the ask is over and not given again, nor is the cancel", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, register } = yield* writtenThenCancelled(true)
      register("b-2")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, [])
    }))

  it.effect("own rejoin: the client confirmed the message, not the cancel: the same instance, which read the message, is given the cancel again", () =>
    Effect.gen(function*() {
      const { closeOld, confirmM0, flushNew, labels, register } = yield* writtenThenCancelled(false)
      confirmM0()
      register("b-1")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["cancel m0"])
    }))

  it.effect("own rejoin: an ask and its cancel, neither confirmed: the same instance is given the cancel again, not the ask that is over", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, register } = yield* writtenThenCancelled(true)
      register("b-1")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["cancel m0"])
    }))
})

/**
 * `b` registered by instance b-1 (`received-v1`) on a connection that writes
 * at once until stuck; sender `d`'s m0 (an ask when `ask`) written there and
 * — `confirmM0` — confirmed by b-1; then the writer gets stuck on sender
 * `e`'s e0 (so the takeover's custody hold covers `e`, not `d`), and `queue`
 * puts `d`'s next frames in the old outbox behind it. `takeOver` registers
 * `b` from instance b-2; `closeOld` runs the old close; `flushNew` labels
 * what b-2 was given.
 */
const stuckOnAnother = (options: { readonly ask?: boolean; readonly confirmM0: boolean }) =>
  Effect.gen(function*() {
    const { attach, batch, close, router } = yield* handRouter({})
    const seen = labeller()
    let stuck = false
    const old = attach({ ...fakeConnection(1, false), write: () => (stuck ? Effect.never : undefined) })
    batch(old, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-1" } })])
    const d = attach(fakeConnection(2, false))
    batch(d, [registerFrame({ sessionId: "d" })])
    const e = attach(fakeConnection(4, false))
    batch(e, [registerFrame({ sessionId: "e" })])
    const m0 = seen.message("m0", options.ask === true ? { expectsReply: true } : {})
    if (options.confirmM0) {
      batch(d, [{ type: "send", to: "b", message: m0 }])
      batch(old, [{ type: "received", frames: old.framesWritten }])
      assert.strictEqual(old.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
    }
    stuck = true
    batch(e, [{ type: "send", to: "b", message: seen.message("e0") }])
    assert.strictEqual(old.outbox.length, 0, "e0 is not in the old write in progress: the test sets up nothing")
    const next = successor({ attach, batch, close, router }, old, seen)
    return {
      labels: seen.labels,
      m0,
      queue: (frames: ReadonlyArray<Record<string, unknown>>): void => {
        batch(d, frames)
        assert.isAbove(old.outbox.length, 0, "d's frames are not in the old outbox: the test sets up nothing")
      },
      takeOver: (): Peer => next.register("b-2"),
      closeOld: next.closeOld,
      flushNew: next.flushNew
    }
  })

describe("a control frame still in the old outbox at a takeover by another instance", () => {
  it.effect("its message confirmed by the old client, no hold on its sender: the new instance is not given the cancel", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, m0, queue, takeOver } = yield* stuckOnAnother({ confirmM0: true })
      queue([{ type: "cancel_message", messageId: m0.id }])
      const fresh = takeOver()
      assert.strictEqual(fresh.custodyHolds, 1, "no custody hold was taken for e: the test sets up nothing")
      flushNew()
      assert.deepStrictEqual(labels, [], "the new instance was given a cancel of a message it never got")
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["e0"])
    }))

  it.effect("its message, an ask, dropped at the hand-over as over: the new instance is given neither", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, m0, queue, takeOver } = yield* stuckOnAnother({ ask: true, confirmM0: false })
      queue([{ type: "send", to: "b", message: m0 }, { type: "cancel_message", messageId: m0.id }])
      takeOver()
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["e0"])
    }))

  it.effect("its message queued ahead of it in the old outbox: withdrawn, the new instance is given neither", () =>
    Effect.gen(function*() {
      const { closeOld, flushNew, labels, m0, queue, takeOver } = yield* stuckOnAnother({ confirmM0: false })
      queue([{ type: "send", to: "b", message: m0 }, { type: "cancel_message", messageId: m0.id }])
      takeOver()
      closeOld()
      flushNew()
      assert.deepStrictEqual(labels, ["e0"])
    }))
})

/**
 * `b` registered by base instance b-1 (no `received-v1`: no custody, so no
 * hold) on a connection whose writer gets stuck on sender `d`'s m0, with
 * `d`'s cancel of m0 queued behind it; b-2 takes the session over, then the
 * old close finds that its socket took `taken` frames of that write.
 */
const baseStuckOnM0 = (taken: number | undefined) =>
  Effect.gen(function*() {
    const { attach, batch, close, router } = yield* handRouter({})
    const seen = labeller()
    let stuck = false
    const old = attach({ ...fakeConnection(1, false), write: () => (stuck ? Effect.never : undefined), unfinishedWrite: () => taken })
    batch(old, [registerFrame({ sessionId: "b", frame: { features: baseFeatures, instanceId: "b-1" } })])
    const d = attach(fakeConnection(2, false))
    batch(d, [registerFrame({ sessionId: "d" })])
    const m0 = seen.message("m0")
    stuck = true
    batch(d, [{ type: "send", to: "b", message: m0 }])
    batch(d, [{ type: "cancel_message", messageId: m0.id }])
    assert.strictEqual(old.outbox.length, 1, "the cancel is not in the old outbox behind m0's write: the test sets up nothing")
    const fresh = attach({ ...fakeConnection(3, false), write: (frames: ReadonlyArray<OutFrame>) => (seen.note(frames), undefined) })
    batch(fresh, [registerFrame({ sessionId: "b", frame: { features: custodyFeatures, instanceId: "b-2" } })])
    const flushNew = (): void => {
      fresh.writer.flush()
      seen.note(router.output.writes.takeForWrite(fresh).frames)
    }
    flushNew()
    assert.deepStrictEqual(seen.labels, [], "the new instance was given the cancel before its message came back")
    closePeer(old, "destroy")
    router.abandonWrites(old)
    close(old)
    flushNew()
    return seen.labels
  })

describe("a control frame about a message in a base old client's write in progress at a takeover", () => {
  it.effect("the socket never took the message: withdrawn, the old close gives the new instance neither", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* baseStuckOnM0(0), [])
    }))

  it.effect("the socket took the message (delivered to the old client): the new instance is given neither", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* baseStuckOnM0(undefined), [])
    }))
})
