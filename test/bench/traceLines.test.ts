/**
 * bench/trace-lines.ts: what bench/compile-trace.ts reads from the broker's
 * stamped `--trace-opt` / `--trace-deopt` and `--trace-gc-nvp` lines, and
 * its per-function counts against the measured interval.
 */
import { assert, describe, it } from "@effect/vitest"
import { byFunction, parseGcStamped, parseStamped, phaseOf } from "../../bench/trace-lines.ts"

describe("parseStamped", () => {
  it("reads a completed compile job's function, tier, OSR mark and times, stamped with its arrival", () => {
    const { jobs, deopts } = parseStamped([
      "100.5\t[completed compiling 0x1a <JSFunction pipeline (sfi = 0x2b)> (target TURBOFAN_JS) - took 0.250, 21.500, 0.125 ms]",
      "101\t[completed compiling 0x1a <JSFunction (sfi = 0x2b)> (target MAGLEV) OSR - took 0.000, 0.378, 0.005 ms]",
      "102\t[completed compiling 0x1a <JSFunction get inTable (sfi = 0x2b)> (target MAGLEV) - took 0.001, 0.100, 0.002 ms]"
    ].join("\n"))
    assert.deepStrictEqual(jobs, [
      { at: 100.5, name: "pipeline", sfi: "0x2b", tier: "TURBOFAN_JS", osr: false, prepare: 0.25, execute: 21.5, finalize: 0.125 },
      { at: 101, name: "(anonymous)", sfi: "0x2b", tier: "MAGLEV", osr: true, prepare: 0, execute: 0.378, finalize: 0.005 },
      { at: 102, name: "get inTable", sfi: "0x2b", tier: "MAGLEV", osr: false, prepare: 0.001, execute: 0.1, finalize: 0.002 }
    ])
    assert.deepStrictEqual(deopts, [])
  })

  it("reads a deoptimization's kind, reason, function and the code it left, and skips every other line", () => {
    const { jobs, deopts } = parseStamped([
      "7\t[bailout (kind: deopt-eager, reason: Insufficient type feedback for generic named access): begin. deoptimizing 0x1 <JSFunction replayed (sfi = 0x2)>, 0x3 <Code TURBOFAN_JS>, opt id 5, bytecode offset 91",
      "8\t[marking 0x1 <JSFunction f (sfi = 0x2)> for optimization to MAGLEV, ConcurrencyMode::kConcurrent, reason: hot and stable]",
      "9\t[compiling method 0x1 <JSFunction f (sfi = 0x2)> (target MAGLEV), mode: ConcurrencyMode::kConcurrent]",
      "10\t[bailout end. took 0.573 ms]",
      "Intercom broker started (pid: 1)"
    ].join("\n"))
    assert.deepStrictEqual(jobs, [])
    assert.deepStrictEqual(deopts, [{
      at: 7,
      kind: "deopt-eager",
      reason: "Insufficient type feedback for generic named access",
      name: "replayed",
      sfi: "0x2",
      code: "TURBOFAN_JS"
    }])
  })
})

describe("parseGcStamped", () => {
  it("reads a --trace-gc-nvp line's kind, pause and summed background phases, and skips every other line", () => {
    const events = parseGcStamped([
      "5\t[1:0x1]      812 ms: pause=1.5 mutator=3.0 gc=s reduce_memory=0 scavenge=1.2 background.scavenge.parallel=0.75 background.unmapper=0.25",
      "6\t[1:0x1]      900 ms: Scavenge 5.1 (6.0) -> 4.2 (7.0) MB, pooled: 0 MB, 1.50 / 0.00 ms",
      "7\t[1:0x1]      950 ms: pause=4.0 mutator=8.0 gc=mc reduce_memory=0 mark=2.0 background.mark=10.5 background.sweep=2.0"
    ].join("\n"))
    assert.deepStrictEqual(events, [
      { at: 5, kind: "s", pause: 1.5, background: 1 },
      { at: 7, kind: "mc", pause: 4, background: 12.5 }
    ])
  })
})

describe("byFunction", () => {
  const job = (at: number, sfi: string, tier: string, execute: number) =>
    ({ at, name: "f", sfi, tier, osr: false, prepare: 0, execute, finalize: 0 })

  it("phaseOf puts a stamp before, in the first or second half of, or after the interval", () => {
    assert.deepStrictEqual([phaseOf(9, 10, 20), phaseOf(10, 10, 20), phaseOf(15, 10, 20), phaseOf(16, 10, 20), phaseOf(20, 10, 20), phaseOf(21, 10, 20)], [0, 1, 1, 2, 2, 3])
  })

  it("counts one function's jobs and deopts per phase and tier, apart from another function of the same name", () => {
    const rows = byFunction(
      [job(5, "0xa", "MAGLEV", 1), job(12, "0xa", "TURBOFAN_JS", 4), job(18, "0xa", "TURBOFAN_JS", 2), job(25, "0xb", "MAGLEV", 0.5)],
      [{ at: 17, name: "f", sfi: "0xa", kind: "deopt-eager", reason: "wrong map", code: "TURBOFAN_JS" }],
      10,
      20
    )
    assert.deepStrictEqual(rows.map((r) => [r.sfi, r.jobs, r.deopts, r.executeMs, [...r.tiers], [...r.reasons]]), [
      ["0xa", [1, 1, 1, 0], [0, 0, 1, 0], 7, [["MAGLEV", 1], ["TURBOFAN_JS", 2]], [["TURBOFAN_JS deopt-eager: wrong map", 1]]],
      ["0xb", [0, 0, 0, 1], [0, 0, 0, 0], 0.5, [["MAGLEV", 1]], []]
    ])
  })
})
