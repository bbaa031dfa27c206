/**
 * The return paths of a takeover's custody hold (CustodyHold.ts) that
 * review revhs found wrong: a held sender's return whose departure another
 * owner still withholds when the custody hold ends (a staged replace message
 * waiting for room at the holder: R1), a held sender that returns twice
 * (the `custodyHeldReturns` counter: R3), and mail given back (R4) or sent
 * while the session is away and its hold still waits for the old close. On a
 * Router driven by hand (handRouter.ts), closes run as `finish` runs them.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import type { OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { features, noting } from "../support/custodyHold.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

const WINDOW_MS = 1_500

/** Notes its frames' labels (`orderLabel`) in `labels`; while `stuck()`, a write never completes. */
const labelling = (id: number, labels: Array<string>, stuck: () => boolean = () => false): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    for (const frame of frames) labels.push(...orderLabel(frame))
    return stuck() ? Effect.never : undefined
  }
})

/**
 * `b` (`received-v1`) on an old connection that wrote `d`'s `m0`, `m1` and
 * never confirmed them, taken over by `holder` (labels in `labels`; with
 * `outboxChars`, its first write never completes, so what `flush` does not
 * take stays in its outbox); senders `d` (`delivery-v1`) and `e`.
 */
const heldSetUp = (options: { readonly outboxChars?: number } = {}) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const { attach, batch, closeAbandoning: close, router, tryDrain } = yield* handRouter(
      { replaceWindow: WINDOW_MS, ...(options.outboxChars === undefined ? {} : { outboxChars: options.outboxChars }) },
      () => clock.now
    )
    const registerB = (peer: Peer, instanceId: string): Peer => {
      batch(peer, [registerFrame({ sessionId: "b", frame: { features, instanceId } })])
      return peer
    }
    const writtenOld: Array<string> = []
    const old = registerB(attach(noting(1, writtenOld)), "b-1")
    const d = attach(fakeConnection(2, false))
    batch(d, [registerFrame({ sessionId: "d", frame: { features: [DELIVERY_V1] } })])
    const e = attach(fakeConnection(4, false))
    batch(e, [registerFrame({ sessionId: "e" })])
    for (const text of ["m0", "m1"]) batch(d, [{ type: "send", to: "b", message: message(text) }])
    assert.deepStrictEqual(writtenOld, ["m0", "m1"], "the old connection did not write m0 m1: the test sets up nothing")
    const labels: Array<string> = []
    const holder = registerB(attach(labelling(3, labels, () => options.outboxChars !== undefined)), "b-2")
    assert.strictEqual(holder.custodyHolds, 1, "no custody hold: the test sets up nothing")
    const flush = (): void => {
      router.membership.notify()
      for (const frame of router.output.writes.takeForWrite(holder).frames) labels.push(...orderLabel(frame))
    }
    let ids = 10
    /** `d` registers again on a new connection and sends `text` to `b` from it. */
    const comeBack = (text: string): Peer => {
      const back = attach(fakeConnection(++ids, false))
      batch(back, [registerFrame({ sessionId: "d", frame: { features: [DELIVERY_V1] } })])
      assert.strictEqual(back.session?.id, "d", "d did not register again: the test sets up nothing")
      batch(back, [{ type: "send", to: "b", message: message(text) }])
      return back
    }
    /** The readers' drainers offer what they parked, and the holder's writer runs, `rounds` times. */
    const settle = (rounds: number, ...readers: ReadonlyArray<Peer>): void => {
      for (let round = 0; round < rounds; round++) {
        for (const reader of readers) while (tryDrain(reader)) { /* offered */ }
        flush()
      }
    }
    return { attach, batch, clock, close, comeBack, d, e, flush, holder, labels, old, registerB, router, settle, tryDrain }
  })

describe("a takeover's custody hold: the return paths", () => {
  it.effect("a staged message's hold on d's departure outlasts the custody hold: d's new mail, which fits, waits for the pair", () =>
    Effect.gen(function*() {
      // Outboxes of 4,000 characters: the staged s (3,000) does not fit behind e0 (1,500); d's n1 does.
      const { batch, clock, close, comeBack, d, e, flush, holder, labels, old, router, settle } = yield* heldSetUp({ outboxChars: 4_000 })
      flush()
      labels.length = 0
      batch(d, [{ type: "send", to: "b", message: message("s" + "y".repeat(2_999)), delivery: "queue", queueMode: "replace", threadId: "t" }])
      batch(e, [{ type: "send", to: "b", message: message("e0" + "x".repeat(1_498)) }])
      clock.now += WINDOW_MS
      router.staging.flushDue(clock.now)
      assert.strictEqual(router.staging.waiting, 1, "s does not wait for room: the test sets up nothing")
      close(d)
      assert.strictEqual(holder.withheldDepartures?.get("d")?.holds, 2, "not two holds on d's departure (custody, staged): the test sets up nothing")
      const back = comeBack("n1")
      // The custody hold ends; the staged message's hold on d's departure still stands.
      close(old)
      settle(4, back)
      // d's mail from before it left, then the pair, then its mail from since its return (protocol.md, custody hold).
      const short = labels.map((label) => label.startsWith("left") || label.startsWith("joined") ? label : label.slice(0, 2))
      assert.deepStrictEqual(short, ["e0", "m0", "m1", "sy", "left d", "joined d", "n1"])
    }))

  it.effect("a held sender that returns twice before the hold ends counts one withheld return", () =>
    Effect.gen(function*() {
      const { close, comeBack, d, flush, labels, old, router, settle } = yield* heldSetUp()
      flush()
      labels.length = 0
      close(d)
      const back = comeBack("n1")
      close(back)
      const again = comeBack("n2")
      flush()
      close(old)
      settle(3, back, again)
      assert.deepStrictEqual(labels, ["m0", "m1", "n1", "left d", "joined d", "n2"], "the order")
      const stats = router.stats()
      assert.deepStrictEqual(
        { departures: stats.custodyHeldDepartures, returns: stats.custodyHeldReturns },
        { departures: 1, returns: 1 }
      )
    }))

  it.effect("mail forced while the session is away waits on its hold: the next registration's mailbox flush keeps d's order", () =>
    Effect.gen(function*() {
      // Its own set-up: the old connection's writer gets stuck after m0, so m1 stays in its write and m2, m3 in its outbox.
      const { attach, batch, closeAbandoning: close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
      let stuck = false
      const old = attach(labelling(1, [], () => stuck))
      batch(old, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
      const d = attach(fakeConnection(2, false))
      batch(d, [registerFrame({ sessionId: "d" })])
      const send = (...texts: ReadonlyArray<string>): boolean =>
        batch(d, texts.map((text) => ({ type: "send", to: "b", message: message(text) })))
      assert.isFalse(send("m0"))
      stuck = true
      assert.isFalse(send("m1"))
      assert.isFalse(send("m2", "m3"))
      assert.isTrue(send("m4", "m5"), "m4, m5 were not parked with d's batch: the test sets up nothing")
      const fresh = attach(labelling(3, []))
      batch(fresh, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-2" } })])
      assert.strictEqual(fresh.custodyHolds, 1, "no custody hold: the test sets up nothing")
      // b is away (its new connection closed); d's close forces m4, m5 back; then the old connection closes.
      close(fresh)
      close(d)
      close(old)
      const log: Array<string> = []
      const later = attach(labelling(4, log))
      batch(later, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-3" } })])
      for (let round = 0; round < 6; round++) {
        router.membership.notify()
        for (const frame of router.output.writes.takeForWrite(later).frames) log.push(...orderLabel(frame))
        while (tryDrain(later)) { /* offered */ }
      }
      assert.deepStrictEqual(log.filter((label) => /^m\d$/.test(label)), ["m0", "m1", "m2", "m3", "m4", "m5"])
    }))

  it.effect("mail d sends while the session is away goes behind the custody an old close then gives back: the next registration reads m0 m1 n1", () =>
    Effect.gen(function*() {
      const { attach, batch, close, d, holder, old, registerB, router, tryDrain } = yield* heldSetUp()
      // b is away (its new connection closed) while the old connection still holds m0, m1 unconfirmed.
      close(holder)
      batch(d, [{ type: "send", to: "b", message: message("n1") }])
      close(old)
      const log: Array<string> = []
      const later = registerB(attach(labelling(20, log)), "b-3")
      for (let round = 0; round < 3; round++) {
        router.membership.notify()
        for (const frame of router.output.writes.takeForWrite(later).frames) log.push(...orderLabel(frame))
        while (tryDrain(later)) { /* offered */ }
      }
      assert.deepStrictEqual(log, ["m0", "m1", "n1"])
    }))
})
