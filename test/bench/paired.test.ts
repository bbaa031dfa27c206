/**
 * bench/paired.ts: the A/B tool's paired ratios and its sign test.
 */
import { assert, describe, it } from "@effect/vitest"
import { higherIsBetter, loadCaution, pairedSummary, signTestP } from "../../bench/paired.ts"

describe("signTestP", () => {
  it("is the exact two-sided binomial tail at p = ½", () => {
    // 6 of 6: 2 × (1/64).
    assert.strictEqual(signTestP(6, 6), 2 / 64)
    assert.strictEqual(signTestP(0, 6), 2 / 64)
    // 5 of 6: 2 × (1 + 6)/64.
    assert.strictEqual(signTestP(5, 6), 14 / 64)
    // 8 of 10: 2 × (1 + 10 + 45)/1024.
    assert.strictEqual(signTestP(8, 10), 112 / 1024)
  })

  it("is capped at 1 for an even split, and 1 with no rounds", () => {
    assert.strictEqual(signTestP(3, 6), 1)
    assert.strictEqual(signTestP(0, 0), 1)
  })
})

describe("pairedSummary", () => {
  it("takes cand ÷ base per round and counts a higher rate as better", () => {
    const s = pairedSummary([{ base: 100, cand: 110 }, { base: 200, cand: 180 }, { base: 50, cand: 60 }], true)
    assert.deepStrictEqual(s.ratios, [1.1, 0.9, 1.2])
    assert.strictEqual(s.median, 1.1)
    assert.strictEqual(s.min, 0.9)
    assert.strictEqual(s.max, 1.2)
    assert.strictEqual(s.better, 2)
    assert.strictEqual(s.worse, 1)
    assert.strictEqual(s.signP, 1)
  })

  it("counts a lower cost as better, and a tie as neither", () => {
    const s = pairedSummary([{ base: 10, cand: 8 }, { base: 10, cand: 10 }, { base: 10, cand: 12 }, { base: 10, cand: 9 }], false)
    assert.strictEqual(s.better, 2)
    assert.strictEqual(s.worse, 1)
    assert.strictEqual(s.rounds, 4)
  })

  it("leaves out a round where either build has no reading", () => {
    const s = pairedSummary([{ base: Number.NaN, cand: 5 }, { base: 4, cand: 0 }, { base: 4, cand: 2 }], false)
    assert.strictEqual(s.rounds, 1)
    assert.deepStrictEqual(s.ratios, [0.5])
  })
})

describe("higherIsBetter", () => {
  it("holds for rates only", () => {
    assert.isTrue(higherIsBetter("msgPerSec"))
    assert.isFalse(higherIsBetter("cpuUsPerMsg"))
    assert.isFalse(higherIsBetter("p99Us"))
  })

  it("holds for the headline metrics that are not rates but where more is better", () => {
    // A/B of `sustained` counted a candidate that slowed less over the run as worse, and of an
    // idle run one that held more sessions; the replace storm's rate sent and threads ending
    // on their latest update likewise.
    for (const metric of ["lastOverFirstQuarter", "sessions", "achievedRate", "threadsEndingOnLatest"]) {
      assert.isTrue(higherIsBetter(metric), metric)
    }
    for (const metric of ["rssPerSessionKiB", "stalenessP99Ms", "healthMs", "registerMs"]) assert.isFalse(higherIsBetter(metric), metric)
  })
})

describe("loadCaution", () => {
  it("warns when the highest load seen is above twice the cores, naming it", () => {
    const text = loadCaution([3.1, 12.14], 2)
    assert.isDefined(text)
    assert.include(text, "12.1 on 2 cores")
  })

  it("says nothing at or below twice the cores", () => {
    assert.isUndefined(loadCaution([1.2, 4], 2))
    assert.isUndefined(loadCaution([7.9], 4))
  })
})
