/**
 * A cancel looks for its withdrawn message in the readers' parked lists
 * (`Output.parksWithdrawn`, for MayStillWait.ts's `mayStillWait`) only while its
 * sender has a message parked somewhere (`ParkedControls.messagesOf`):
 * before, every cancel scanned all output parked broker-wide, so one batch
 * of cancels cost its length times everything any session had parked, the
 * broker's loop stalled for seconds behind an unrelated backlog (review
 * revbc BC1). The count follows the messages out of the lists (offered,
 * forced at a close), and a sender that has one parked is still looked for.
 * Each item the scan reads of x's parked list is counted through a Proxy over
 * that list (the scan reads it by index). Hand-driven Router (controlWorld).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { OutboundItem, Peer } from "../../src/broker/Peer.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

/** Replaces `peer`'s parked list by a Proxy over it that counts the items read from it; returns the count so far. */
const countReads = (peer: Peer): (() => number) => {
  let reads = 0
  peer.parked = new Proxy(peer.parked, {
    get: (target, property, receiver) => {
      if (typeof property === "string" && /^\d+$/.test(property)) reads++
      return Reflect.get(target, property, receiver)
    }
  })
  return () => reads
}

const isMessageItem = (item: OutboundItem) => typeof item === "object" && "mail" in item

/** x parks `count` sends to a stuck e at its reader; d's messages to c are written. */
const backlog = (count: number) =>
  Effect.gen(function*() {
    const w = yield* world(custodyFeatures, { outboxCapacity: 64 })
    const c = w.registerOther("c")
    const written = Array.from({ length: 10 }, (_, i) => message(`c${i}`))
    w.batch(w.d, written.map((m) => ({ type: "send", to: "c", message: m })))
    assert.strictEqual(w.messagesOf(c).length, written.length, "d's messages to c were not written: the test sets up nothing")
    w.stick()
    const e = w.registerOther("e", {}, true)
    const x = w.registerOther("x")
    w.batch(x, Array.from({ length: count }, (_, i) => ({ type: "send", to: "e", message: message(`e${i}`) })))
    const parked = x.parked.filter(([, item]) => isMessageItem(item)).length
    assert.isTrue(parked > 0, "x's sends are not parked: the test sets up nothing")
    return { w, e, x, written, parked }
  })

describe("a cancel scans the parked lists only while its sender has a message parked (review revbc BC1)", () => {
  it.effect("d's cancels of written messages read nothing of x's 200 parked sends; the counts say who has what parked", () =>
    Effect.gen(function*() {
      const { parked, w, written, x } = yield* backlog(200)
      const output = w.router.output
      assert.strictEqual(output.parkedMessagesOf(x.session?.key ?? "x"), parked)
      assert.strictEqual(output.parkedMessagesOf(w.d.session?.key ?? "d"), 0)
      const reads = countReads(x)
      w.batch(w.d, written.map((m) => ({ type: "cancel_message", messageId: m.id })))
      assert.deepStrictEqual(w.answersOf(written[0]!.id).slice(-1), ["delivered"], "d's cancel was not handled")
      assert.strictEqual(reads(), 0, "a cancel by d, which has nothing parked, scanned x's parked list")
    }))

  it.effect("a sender with a message parked is still looked for: d's cancel of its own parked message reads the lists", () =>
    Effect.gen(function*() {
      const { w, x } = yield* backlog(100)
      const mine = message("d-parked")
      w.batch(w.d, [{ type: "send", to: "e", message: mine }])
      const dKey = w.d.session?.key ?? "d"
      assert.strictEqual(w.router.output.parkedMessagesOf(dKey), 1, "d's send to the stuck e is not parked: the test sets up nothing")
      const reads = countReads(x)
      w.batch(w.d, [{ type: "cancel_message", messageId: mine.id }])
      assert.isAbove(reads(), 0, "d's cancel, with d's message parked, looked in no reader's list")
    }))

  it.effect("x's count falls to zero when its close forces its parked sends on", () =>
    Effect.gen(function*() {
      const { w, x } = yield* backlog(100)
      const xKey = x.session?.key ?? "x"
      w.closeAbandoned(x)
      assert.strictEqual(x.parked.length, 0, "x's parked list was not emptied by its close")
      assert.strictEqual(w.router.output.parkedMessagesOf(xKey), 0)
    }))
})
