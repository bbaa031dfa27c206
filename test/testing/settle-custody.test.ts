/**
 * The `SettleCustody` op (inserted with `--settle-hold`,
 * simulation/settleCustody.ts): an `ask-expiry-v1` asker taken over by a new
 * instance of its own client while the old connection holds the answerer's
 * unconfirmed mail; the answerer's reply, forced by its close, is kept by
 * the custody hold when the asker's deadline comes. Scripted, it must reach
 * the broker's settling answer released at the hold's end
 * (`BrokerStats.answersReleasedCustody`, summed in `report.paths`) with the
 * ledger's checks holding — `answer-after-timeout` among them, no tolerance
 * needed — and the ask ending with the reply; then the generated workloads
 * carry it only with the flag.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawSettleCustody, type SettleCustodyDraw } from "../../src/testing/simulation/settleCustody.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"

/** A (0) asks D (1) from its new instance; D is killed 300 ms after the ask, before A's 1 s deadline. */
const scripted: SettleCustodyDraw = {
  _tag: "SettleCustody",
  after: 100,
  asker: 0,
  answerer: 1,
  count: 2,
  delayMs: 4500,
  stallMs: 4000,
  timeoutMs: 1000,
  closeMs: 300,
  close: "kill",
  returnMs: 500,
  notSession: []
}

/** A world of four sessions with nothing varied and no pressure. */
const plain = { vary: false, pressure: false, settleHold: true } as const

describe("the SettleCustody op", () => {
  it.effect("the answerer killed before the deadline: the settling answer waits for the custody hold's end, the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: [] }, [scripted], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.isAtLeast(report.paths.custodyHoldsTaken, 1, trace)
      assert.isAtLeast(report.paths.answersBehindReplies, 1, trace)
      assert.isAtLeast(report.paths.answersReleasedCustody, 1, trace)
      // A's one ask ended with D's reply, released at the hold's end, not in a timeout.
      assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 }, trace)
    }))

  it.effect("the answerer stopped after the deadline: the answer held behind the parked reply waits on behind the kept one", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: [] }, [{ ...scripted, close: "stop", closeMs: 1300 }], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.isAtLeast(report.paths.answersBehindReplies, 1, trace)
      assert.isAtLeast(report.paths.answersReleasedCustody, 1, trace)
      assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 }, trace)
    }))

  it("is in a generated workload only with the flag, drawn from a stream of its own", () => {
    const without = generateWorkload(7, 4)
    const withIt = generateWorkload(7, 4, { settleHold: true })
    assert.isFalse(without.some((op) => op._tag === "SettleCustody"))
    const drawn = withIt.filter((op) => op._tag === "SettleCustody")
    assert.strictEqual(drawn.length, 1)
    assert.deepStrictEqual(drawn, drawSettleCustody(7, 4, without.length + 1).map(([, op]) => op))
    // The other ops are those of the workload without it, in order.
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "SettleCustody" && op._tag !== "SettleHold"), without)
  })
})
