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
