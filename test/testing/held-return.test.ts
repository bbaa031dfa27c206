/**
 * The `HeldReturn` op (`--held-return`, simulation/heldReturn.ts): a sender
 * leaves with its last messages parked behind a slow recipient and registers
 * again on a new connection while they wait. Scripted, it must reach the
 * broker's withheld return (`BrokerStats.returnsHeld`, summed in
 * `report.paths`) with the ledger's checks holding — no mail after its
 * sender's `session_left` (`left-before-mail`, no tolerance), per-sender
 * order, no loss; then the generated workloads carry it only with the flag.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawHeldReturn, type HeldReturnDraw } from "../../src/testing/simulation/heldReturn.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"

/** B's writes take 800 ms; A leaves with 3 × 3,000 characters for B parked, and is back 100 ms later. */
const scripted: HeldReturnDraw = {
  _tag: "HeldReturn",
  after: 100,
  sender: 0,
  recipient: 1,
  count: 3,
  size: 3000,
  delayMs: 800,
  returnMs: 100,
  lingerMs: 3000,
  more: 2,
  notSender: []
}

/** A world of four sessions with nothing varied and no pressure: outboxes of 4,096 characters from the flag alone. */
const plain = { vary: false, pressure: false, heldReturn: true } as const

describe("the HeldReturn op", () => {
  it.effect("reaches a return while the sender's departure is held behind its parked output; the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, [scripted], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.isAtLeast(report.paths.returnsHeld, 1, trace)
      // Every message sent reached its recipient: the old connection's 3, the return's 2 + 1.
      assert.isAtLeast(report.messages.sent, 3 + 2 + 1, trace)
      assert.strictEqual(report.messages.delivered, report.messages.sent, trace)
    }))

  // Simulation seed 9629, shrunk: the broker is still coming back, so A is away and every message of the op
  // is refused at once — nothing parks, no link is delayed. The old connection's write runs in a fiber of
  // its own, which the TestClock does not wait for; the ledger counts its `unregister` as written before the
  // broker has read it, so the idle check after the 164 ms of the return must wait for the broker's read.
  // The op starts 2 s later than in the seed: a client's stop no longer waits out its reconnect's back-off
  // (helper settlefx), so at the seed's time the op's own connection would find the broker still down.
  it.effect("a held return whose recipient is away: no registry-mismatch while the broker has not read the old connection's unregister", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, [
        { _tag: "CrashBroker", after: 0, downMs: 5414 },
        { ...scripted, after: 6315, sender: 2, recipient: 0, count: 5, size: 2908, delayMs: 1490, returnMs: 164, lingerMs: 2147 }
      ], { heldReturn: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The recipient was away: the old connection's messages and the return's were all refused.
      assert.isAtLeast(report.messages.refused, 5 + 2, trace)
    }))

  // Simulation seed 8236 (`--held-return --unregister --delivery`), shrunk: C's passive message to B, sent
  // while the broker is down, reaches B's connection of its own (a bare `register`, no `delivery-v1`), which
  // the broker never tells a message's mode. Not a broker fault: `passive-woke-model` judged that base
  // client's hand-off as if it could have kept the message from a model.
  // The op starts 1.4 s later than in the seed, just before C's return hands the message over: B's stop no
  // longer waits out its reconnect's back-off (helper settlefx), which had carried it past the broker's restart.
  it.effect("passive mail read by the op's own connection, a base client, is not passive-woke-model", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 8236 }, [
        { _tag: "CrashBroker", after: 0, downMs: 3861 },
        { _tag: "Drop", after: 2021, session: 0, side: "broker" },
        { _tag: "Send", after: 0, from: 2, to: 3 },
        { _tag: "DeliverySend", after: 46, from: 2, to: 1, mode: "passive", thread: 0, count: 1, gapMs: 0 },
        { _tag: "Start", after: 6, session: 2 },
        { _tag: "DeliverySend", after: 707, from: 3, to: 2, mode: "passive", thread: 0, count: 1, gapMs: 0 },
        { ...scripted, after: 1400, sender: 1, recipient: 3, count: 3, size: 3332, delayMs: 1616, returnMs: 139, lingerMs: 2214, more: 3, notSender: [3] }
      ], { delivery: true, unregister: true, heldReturn: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // The case itself: the passive message was handed over by B's own connection.
      assert.isTrue(trace.includes("from C (own-connection) \"passive 4.0 C→B\""), trace)
    }))

  it("is in a generated workload only with the flag, drawn from a stream of its own", () => {
    const without = generateWorkload(7, 4)
    const withIt = generateWorkload(7, 4, { heldReturn: true })
    assert.isFalse(without.some((op) => op._tag === "HeldReturn"))
    const drawn = drawHeldReturn(7, 4, without.length).map(([, op]) => op)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "HeldReturn"), drawn)
    // The other ops are those of the workload without it, in order.
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "HeldReturn"), without)
  })
})
