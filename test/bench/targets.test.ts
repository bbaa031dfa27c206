/**
 * The bench's /proc readers (bench/targets.ts) on this process: what the
 * idle workloads report beside their list latency.
 */
import { assert, describe, it } from "@effect/vitest"
import { minorFaults } from "../../bench/targets.ts"

describe("minorFaults", () => {
  it("counts first touches of fresh pages", () => {
    const before = minorFaults(process.pid)
    // Not zero-filled, and past malloc's mmap threshold: no page is backed until it is written.
    const fresh = Buffer.allocUnsafeSlow(16 * 1024 * 1024)
    fresh.fill(1)
    const after = minorFaults(process.pid)
    assert.isTrue(Number.isFinite(before))
    // One fault per 4 KiB page, or per 2 MiB with transparent huge pages.
    assert.isAtLeast(after - before, 8)
  })

  it("is NaN for a process that is not there", () => {
    assert.isNaN(minorFaults(2 ** 22 + 1))
  })
})
