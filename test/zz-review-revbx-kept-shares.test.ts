/**
 * Review revbx probes (KeptShares' settled order, merge wdkeep 9ec4af38).
 * Each test states what a doc line claims; on main both FAIL — the findings.
 */
import { describe, expect, it } from "@effect/vitest"
import { KeptShares } from "../src/broker/KeptShares.ts"

interface Item {
  readonly n: number
}

describe("review revbx: KeptShares' settled order", () => {
  // bx1: the merge, docs/architecture.md and linkKept's JSDoc say a full list drops "the oldest" (brief:
  // "longest-kept") settled withdrawal; `settle` appends as newest, so the order is by settle time.
  it("bx1: of one receiver's settled withdrawals the longest kept goes first", () => {
    const shares = new KeptShares<Item>()
    const keptFirst = { n: 0 }
    const keptSecond = { n: 1 }
    shares.join(keptFirst, "a")
    shares.join(keptSecond, "a")
    // The newer one's message is dropped by the mailbox first; the older one's later.
    shares.settle(keptSecond)
    shares.settle(keptFirst)
    expect(shares.largestOldest()).toBe(keptFirst)
  })

  // bx2: the module header (KeptShares.ts:10-15) still says "a receiver holding fewer than they do loses
  // none" (review revbh BH1); with the settled order first, a receiver holding ONE settled withdrawal loses
  // it while another holds many more still waiting.
  it("bx2: a receiver holding fewer than the largest loses none (header, BH1)", () => {
    const shares = new KeptShares<Item>()
    for (let n = 0; n < 3; n++) shares.join({ n }, "flood")
    const innocent = { n: 10 }
    shares.join(innocent, "innocent")
    shares.settle(innocent)
    expect([shares.of("flood"), shares.of("innocent")]).toEqual([3, 1])
    expect(shares.largestReceiver).toBe("flood")
  })
})
