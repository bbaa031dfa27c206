/**
 * bench/workloads.ts's selection by `--only`: the opt-in workloads
 * (`w64-steady`, `fanin-steady`, `idle-10k-settled`: long runs for one
 * question) run only when named in full, never by default or through a
 * prefix such as `w64` or `fanin`.
 */
import { assert, describe, it } from "@effect/vitest"
import { defaultSizes, selectWorkloads, workloads } from "../../bench/workloads.ts"

const names = (only: ReadonlyArray<string>): Array<string> => selectWorkloads(workloads(defaultSizes), only).map((w) => w.name)

describe("selectWorkloads", () => {
  it("leaves the opt-in workloads out of the default run", () => {
    const all = names([])
    assert.include(all, "w64")
    assert.include(all, "idle-10k")
    assert.notInclude(all, "w64-steady")
    assert.notInclude(all, "fanin-steady")
    assert.notInclude(all, "idle-10k-settled")
  })

  it("does not select an opt-in workload by a prefix", () => {
    assert.deepStrictEqual(names(["w64"]), ["w64"])
    assert.deepStrictEqual(names(["fanin"]), ["fanin"])
    assert.deepStrictEqual(names(["idle"]), ["idle-1k", "idle-10k", "idle-50k"])
  })

  it("selects an opt-in workload named in full", () => {
    assert.deepStrictEqual(names(["w64", "w64-steady"]), ["w64", "w64-steady"])
    assert.deepStrictEqual(names(["idle-10k-settled"]), ["idle-10k-settled"])
    assert.deepStrictEqual(names(["fanin", "fanin-steady"]), ["fanin", "fanin-steady"])
  })
})
