/**
 * bench:profile's side-by-side table of functions (bench/profile-compare.ts)
 * and its `--relay-flags` (bench/profile-options.ts): each target's sample
 * count beside its µs, counts under 50 marked, and the relay started with
 * the flags asked for. No timing is tested.
 */
import { assert, describe, it } from "@effect/vitest"
import { functionsSideBySide } from "../../bench/profile-compare.ts"
import { parseArgs, resolveSpecs } from "../../bench/profile-options.ts"
import { emptyCounts, type Owner } from "../../bench/profile-cpuprofile.ts"
import type { Measured } from "../../bench/profile-split.ts"
import { zeroGroupCpu } from "../../bench/profile-proc.ts"

/** 10 units, 1,000 µs of main-thread user CPU, `busy` busy samples: one sample is 1,000 / busy / 10 µs per unit. */
const measured = (busy: number, functions: ReadonlyArray<readonly [string, Owner, number]>): Measured => {
  const counts = emptyCounts()
  counts.samples = busy
  counts.byOwner.ours = busy
  for (const [name, owner, count] of functions) counts.byFunction.set(name, { owner, count })
  const cpu = zeroGroupCpu()
  return { units: 10, cpu: { ...cpu, main: { user: 1000, sys: 0 } }, counts }
}

describe("functions side by side", () => {
  it("gives every target's samples and µs for each function among any target's largest, marking counts under 50", () => {
    const relay = measured(200, [["/tmp/x1/raw-relay.mjs:101 onSend", "ours", 120], ["writev (native)", "native", 40]])
    const ours = measured(500, [["src/protocol/decode.ts:57 parseFrameText", "ours", 300], ["writev (native)", "native", 60]])
    const t = functionsSideBySide([
      { label: "relay", measured: relay, unprofiled: undefined },
      { label: "memory", measured: ours, unprofiled: undefined }
    ], 2)
    assert.deepStrictEqual(t.header, ["function", "owner", "relay: samples / µs", "memory: samples / µs"])
    // relay: 0.5 µs per sample; memory: 0.2. Ordered by the largest µs in any column.
    assert.deepStrictEqual(t.rows, [
      ["raw-relay.mjs:101 onSend", "ours", "120 / 60.00", "–"],
      ["src/protocol/decode.ts:57 parseFrameText", "ours", "–", "300 / 60.00"],
      ["writev (native)", "native", "~40 / 20.00", "60 / 12.00"]
    ])
  })
})

describe("--relay-flags", () => {
  it("starts the raw relay with the flags given, after the Node binary and before its script", () => {
    const opts = parseArgs(["--only", "w64", "--targets", "raw", "--relay-flags=--max-semi-space-size=4,--no-opt"])
    assert.deepStrictEqual(opts.relayFlags, ["--max-semi-space-size=4", "--no-opt"])
    const argv = resolveSpecs(opts).get("raw")?.argv("/tmp/d", undefined) ?? []
    assert.deepStrictEqual(argv.slice(0, 3), [process.execPath, "--max-semi-space-size=4", "--no-opt"])
    assert.match(argv[3] ?? "", /raw-relay\.mjs$/)
  })

  it("leaves the relay without Node flags when not given", () => {
    const argv = resolveSpecs(parseArgs(["--targets", "raw"])).get("raw")?.argv("/tmp/d", undefined) ?? []
    assert.strictEqual(argv[0], process.execPath)
    assert.match(argv[1] ?? "", /raw-relay\.mjs$/)
  })
})
