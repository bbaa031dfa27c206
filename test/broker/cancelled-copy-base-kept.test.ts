/**
 * What the close path keeps for a `received-v1` base client's instance (no
 * `instanceId`) that CAN register as itself again — the first holder of its
 * id, registered with nothing known of it (Registration.mayReturn) — when a
 * message it was written and never confirmed is cancelled on its way and
 * given back at its close with its session away (MailReturns'
 * `requeueForwarded`, its `mayReturn` and `keepFor`; docs/protocol.md,
 * "Receipts and control"): a cancelled copy in the mailbox, kept as long as
 * the mailbox keeps mail, whose return (the next registration of the id
 * with no `instanceId`) gets the message and its cancel; or, when the
 * mailbox's bounds push that copy out at once, the cancel alone, kept for
 * that return as long as the mailbox keeps mail (MailDelivery's
 * `controlsCutoff`). Past that retention each goes silently: the sender,
 * answered `cancelled` already, is told nothing more.
 *
 * The broker's clock is the TestClock's reading (`at`): set, then read into
 * the hand-driven Router's clock; `router.prune` is its timer's call. No sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { cancelledOnItsWay, controlWorld as world, custodyFeatures, drainedSeen } from "../support/controlWorld.ts"

const START = 1_000_000
const HOUR = 3_600_000

/**
 * Base e-1 (the id's first holder) written d's m1 (`text`, its size), m1 cancelled while e-1's writes are stuck,
 * e-1's connection dropped at START; the mailbox keeps mail an hour, at most `perTarget` bytes per recipient.
 */
const cancelledAtClose = (text: string, perTarget: number) =>
  Effect.gen(function*() {
    const clock = { now: yield* at(START) }
    const w = yield* world(custodyFeatures, { mailboxRetention: HOUR, mailboxBytesPerTarget: perTarget }, clock)
    const e1 = w.registerOther("e", {}, true, { features: [RECEIVED_V1] })
    assert.strictEqual(e1.state, "registered", "base e-1 did not register e: the test sets up nothing")
    const m1 = message(text)
    const toSender = cancelledOnItsWay(w, e1, m1)
    w.closeAbandoned(e1)
    /** The clock moves to `time` and the broker's timer prunes. */
    const pruneAt = (time: number) =>
      Effect.gen(function*() {
        clock.now = yield* at(time)
        w.router.prune(clock.now)
      })
    /** The next registration of e with no `instanceId` (e-1's return, to the broker): its messages and controls. */
    const baseReturn = () => drainedSeen(w, w.registerOther("e", {}, false, { features: [RECEIVED_V1] }))
    return { w, m1: m1.id, toSender, pruneAt, baseReturn }
  })

/** The TestClock set to `time`, and its reading. */
const at = (time: number) => Effect.andThen(TestClock.setTime(time), Clock.currentTimeMillis)

describe("a cancelled message given back for a base instance that can return", () => {
  it.effect("is kept as a cancelled copy through the mailbox's retention, and its return gets it and its cancel", () =>
    Effect.gen(function*() {
      const { baseReturn, m1, pruneAt, w } = yield* cancelledAtClose("m1", 1_048_576)
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "m1 was not kept as a cancelled copy for e-1")
      yield* pruneAt(START + HOUR)
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "the copy left before the mailbox's retention")
      assert.strictEqual(w.router.heldMail()?.messages, 1, "the copy kept for e-1 does not hold the idle exit")
      assert.deepStrictEqual(baseReturn().filter((seen) => seen.endsWith(m1)), [`message ${m1}`, `cancel ${m1}`])
    }))

  it.effect("a retention after the close the copy goes silently, and its return gets neither", () =>
    Effect.gen(function*() {
      const { baseReturn, m1, pruneAt, toSender, w } = yield* cancelledAtClose("m1", 1_048_576)
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "m1 was not kept as a cancelled copy: the test checks nothing")
      yield* pruneAt(START + HOUR + 1)
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the copy outlived the mailbox's retention")
      assert.strictEqual(w.router.heldMail(), undefined, "something still holds the idle exit")
      assert.strictEqual(w.framesOf(w.d).length, toSender, "m1's sender was told more after its cancel was answered")
      assert.deepStrictEqual(baseReturn().filter((seen) => seen.endsWith(m1)), [])
    }))

  it.effect("its copy pushed out of the mailbox at once: the cancel alone is kept through the retention, for its return", () =>
    Effect.gen(function*() {
      const { baseReturn, m1, pruneAt, w } = yield* cancelledAtClose("x".repeat(8_000), 4_096)
      assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 0, "the copy was not pushed out: the test checks nothing")
      assert.strictEqual(w.router.stats().controlsKept, 1, "the cancel was not kept for e-1 (counted as kept)")
      yield* pruneAt(START + HOUR)
      assert.strictEqual(w.router.heldMail()?.controls, 1, "the cancel left before the mailbox's retention, or holds no idle exit")
      assert.deepStrictEqual(baseReturn().filter((seen) => seen.endsWith(m1)), [`cancel ${m1}`])
    }))

  it.effect("its copy pushed out at once: a retention after the close the kept cancel goes, and its return gets nothing", () =>
    Effect.gen(function*() {
      const { baseReturn, m1, pruneAt, toSender, w } = yield* cancelledAtClose("x".repeat(8_000), 4_096)
      assert.strictEqual(w.router.heldMail()?.controls, 1, "the cancel was not kept: the test checks nothing")
      yield* pruneAt(START + HOUR + 1)
      assert.strictEqual(w.router.heldMail(), undefined, "the kept cancel outlived the mailbox's retention (it holds the idle exit)")
      assert.strictEqual(w.framesOf(w.d).length, toSender, "m1's sender was told more after its cancel was answered")
      assert.deepStrictEqual(baseReturn().filter((seen) => seen.endsWith(m1)), [])
    }))
})
