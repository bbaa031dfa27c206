/**
 * KeptShares' settled order as its header and docs/architecture.md state it
 * (review revbx BX1, BX2): of one receiver's settled withdrawals the one
 * settled EARLIEST goes first (`settle` appends: O(1)), not the one kept
 * longest; and a settled one goes before any still waiting whoever holds
 * it, so a receiver's one settled withdrawal goes while another receiver
 * holds more still waiting.
 */
import { describe, expect, it } from "@effect/vitest"
import { KeptShares } from "../../src/broker/KeptShares.ts"

interface Item {
  readonly n: number
}

describe("KeptShares' settled order", () => {
  it("of one receiver's settled withdrawals the earliest settled goes first, not the longest kept", () => {
    const shares = new KeptShares<Item>()
    const keptFirst = { n: 0 }
    const keptSecond = { n: 1 }
    shares.join(keptFirst, "a")
    shares.join(keptSecond, "a")
    // The newer one's message is dropped by the mailbox first; the older one's later.
    shares.settle(keptSecond)
    shares.settle(keptFirst)
    expect(shares.largestOldest()).toBe(keptSecond)
  })

  it("a receiver's one settled withdrawal goes before another receiver's more numerous waiting ones", () => {
    const shares = new KeptShares<Item>()
    for (let n = 0; n < 3; n++) shares.join({ n }, "flood")
    const settled = { n: 10 }
    shares.join(settled, "settledOne")
    shares.settle(settled)
    expect([shares.of("flood"), shares.of("settledOne")]).toEqual([3, 1])
    expect(shares.largestReceiver).toBe("settledOne")
    expect(shares.largestOldest()).toBe(settled)
  })
})
