/**
 * bench/workloads.ts's selection by `--only`: the opt-in workloads
 * (`w64-steady`, `fanin-steady`, `idle-10k-settled`: long runs for one
 * question; `ask-granted`: the ask with the clients IntercomClient's grants) run only when named in full, never by default or through a
 * prefix such as `w64` or `fanin`.
 */
import { assert, describe, it } from "@effect/vitest"
import { defaultSizes, quickSizes, selectWorkloads, workloads } from "../../bench/workloads.ts"

const names = (only: ReadonlyArray<string>): Array<string> => selectWorkloads(workloads(defaultSizes), only).map((w) => w.name)

describe("selectWorkloads", () => {
  it("leaves the opt-in workloads out of the default run", () => {
    const all = names([])
    assert.include(all, "w64")
    assert.include(all, "idle-10k")
    assert.notInclude(all, "w64-steady")
    assert.notInclude(all, "fanin-steady")
    assert.notInclude(all, "idle-10k-settled")
    assert.notInclude(all, "ask-granted")
  })

  it("does not select an opt-in workload by a prefix", () => {
    assert.deepStrictEqual(names(["w64"]), ["w64"])
    assert.deepStrictEqual(names(["fanin"]), ["fanin"])
    assert.deepStrictEqual(names(["ask"]), ["ask"])
    assert.deepStrictEqual(names(["idle"]), ["idle-1k", "idle-10k", "idle-50k"])
  })

  it("selects an opt-in workload named in full", () => {
    assert.deepStrictEqual(names(["w64", "w64-steady"]), ["w64", "w64-steady"])
    assert.deepStrictEqual(names(["idle-10k-settled"]), ["idle-10k-settled"])
    assert.deepStrictEqual(names(["fanin", "fanin-steady"]), ["fanin", "fanin-steady"])
    assert.deepStrictEqual(names(["ask", "ask-granted"]), ["ask", "ask-granted"])
  })

  it("refuses an entry that selects nothing instead of running the rest without it", () => {
    // A typo beside a real name used to run w64 alone, as if fan-in had been measured.
    assert.throws(() => names(["w64", "fanim"]), /--only: fanim selects no workload/)
    // `idle-50k` is not among the quick sizes' workloads; `--quick --only w64,idle-50k` says so.
    assert.throws(
      () => selectWorkloads(workloads(quickSizes), ["w64", "idle-50k"]),
      /--only: idle-50k selects no workload \(workloads at these sizes: w1 w64 /
    )
    // An opt-in workload is selected only by its full name, so its prefix alone selects nothing.
    assert.throws(() => names(["w64-st"]), /--only: w64-st selects no workload/)
  })
})
