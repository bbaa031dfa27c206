/**
 * bench/tail-causes.ts: what a V8 trace line says happened, and which causes
 * a round trip overlapped (the attribution `bench/ask-tail.ts` reports).
 */
import { assert, describe, it } from "@effect/vitest"
import { addTraceLine, causesOf, LINE_SLACK_MS, type Traces } from "../../bench/tail-causes.ts"

const emptyTraces = (): Traces => ({ compiles: [], finalizes: [], deopts: [] })

describe("addTraceLine", () => {
  it("reads a completed compile's background and finalize intervals, ending at the line", () => {
    const traces = emptyTraces()
    addTraceLine(
      traces,
      "[completed compiling 0x1 <JSFunction f (sfi = 0x2)> (target TURBOFAN_JS) - took 0.250, 2.000, 0.500 ms]",
      100
    )
    assert.deepStrictEqual(traces.finalizes, [{ from: 99.5, to: 100 }])
    assert.deepStrictEqual(traces.compiles, [{ from: 97.5, to: 99.5 }])
    assert.deepStrictEqual(traces.deopts, [])
  })

  it("stamps a bailout as a deopt and ignores the other trace lines", () => {
    const traces = emptyTraces()
    addTraceLine(traces, "[bailout (kind: deopt-eager, reason: wrong map): begin. deoptimizing 0x1 <JSFunction f>", 42)
    addTraceLine(traces, "[marking 0x1 <JSFunction f (sfi = 0x2)> for optimization to MAGLEV, ConcurrencyMode::kConcurrent, reason: hot and stable]", 43)
    addTraceLine(traces, "[compiling method 0x1 <JSFunction f (sfi = 0x2)> (target MAGLEV), mode: ConcurrencyMode::kConcurrent]", 44)
    addTraceLine(traces, "[completed optimizing 0x1 <JSFunction f (sfi = 0x2)> (target TURBOFAN_JS)]", 45)
    assert.deepStrictEqual(traces, { compiles: [], finalizes: [], deopts: [42] })
  })
})

describe("causesOf", () => {
  const events = (over: Partial<{ gcTarget: Array<{ from: number; to: number }>; gcClients: Array<{ from: number; to: number }>; traces: Traces }>) => ({
    rounds: 100,
    gcTarget: over.gcTarget ?? [],
    gcClients: over.gcClients ?? [],
    traces: over.traces ?? emptyTraces()
  })

  it("finds nothing for a late trip that overlapped nothing", () => {
    const trip = { index: 50, from: 10, to: 11 }
    assert.deepStrictEqual([...causesOf(trip, events({ gcTarget: [{ from: 5, to: 9.9 }], gcClients: [{ from: 11.1, to: 12 }] }))], [])
  })

  it("names each collection and compile interval the trip overlapped, and the run's first tenth", () => {
    const trip = { index: 9, from: 10, to: 11 }
    const traces: Traces = { compiles: [{ from: 8, to: 10.2 }], finalizes: [{ from: 10.5, to: 10.6 }], deopts: [] }
    const found = causesOf(trip, events({ gcTarget: [{ from: 10.9, to: 12 }], gcClients: [{ from: 9, to: 10 }], traces }))
    assert.deepStrictEqual([...found].sort(), ["background compile", "clients' GC", "compile finalize", "first tenth", "target GC"])
  })

  it("counts a trace line that arrives up to LINE_SLACK_MS after the trip's end as inside it", () => {
    const trip = { index: 50, from: 10, to: 11 }
    const inside = causesOf(trip, events({ traces: { ...emptyTraces(), deopts: [11 + LINE_SLACK_MS] } }))
    const after = causesOf(trip, events({ traces: { ...emptyTraces(), deopts: [11 + LINE_SLACK_MS + 0.01] } }))
    assert.deepStrictEqual([...inside], ["deopt"])
    assert.deepStrictEqual([...after], [])
  })
})
