/**
 * bench/trace-lines.ts: what bench/compile-trace.ts reads from the broker's
 * stamped `--trace-opt` / `--trace-deopt` lines.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseStamped } from "../../bench/trace-lines.ts"

describe("parseStamped", () => {
  it("reads a completed compile job's function, tier, OSR mark and times, stamped with its arrival", () => {
    const { jobs, deopts } = parseStamped([
      "100.5\t[completed compiling 0x1a <JSFunction pipeline (sfi = 0x2b)> (target TURBOFAN_JS) - took 0.250, 21.500, 0.125 ms]",
      "101\t[completed compiling 0x1a <JSFunction (sfi = 0x2b)> (target MAGLEV) OSR - took 0.000, 0.378, 0.005 ms]",
      "102\t[completed compiling 0x1a <JSFunction get inTable (sfi = 0x2b)> (target MAGLEV) - took 0.001, 0.100, 0.002 ms]"
    ].join("\n"))
    assert.deepStrictEqual(jobs, [
      { at: 100.5, name: "pipeline", tier: "TURBOFAN_JS", osr: false, prepare: 0.25, execute: 21.5, finalize: 0.125 },
      { at: 101, name: "(anonymous)", tier: "MAGLEV", osr: true, prepare: 0, execute: 0.378, finalize: 0.005 },
      { at: 102, name: "get inTable", tier: "MAGLEV", osr: false, prepare: 0.001, execute: 0.1, finalize: 0.002 }
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
      code: "TURBOFAN_JS"
    }])
  })
})
