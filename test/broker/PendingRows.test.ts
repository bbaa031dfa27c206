/**
 * PendingRows on its own: a table's changes between commits, and what a
 * failed commit gives back (the journals built on it are tested in
 * NoticeJournal.test.ts and SilencedJournal.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { PendingRows } from "../../src/broker/PendingRows.ts"

interface Row {
  readonly key: string
  readonly value: number
}
const row = (key: string, value = 0): Row => ({ key, value })
const make = () => new PendingRows<string, Row>((r) => r.key)

describe("PendingRows", () => {
  it("a row ended before it was taken is never stored, and adds no delete", () => {
    const rows = make()
    rows.put("a", row("a"))
    expect(rows.gone("a")).toBe(false)
    expect(rows.isEmpty).toBe(true)
    expect(rows.take()).toBeUndefined()
  })

  it("a row ended after it was taken is deleted at the next take", () => {
    const rows = make()
    rows.put("a", row("a"))
    expect(rows.take()).toEqual({ puts: [row("a")], deletes: [] })
    expect(rows.gone("a")).toBe(true)
    expect(rows.take()).toEqual({ puts: [], deletes: ["a"] })
  })

  it("a row put again after its delete was queued cancels the delete", () => {
    const rows = make()
    rows.gone("a")
    rows.put("a", row("a", 2))
    expect(rows.take()).toEqual({ puts: [row("a", 2)], deletes: [] })
  })

  it("a failed batch comes back in front of what came since; a row ended since is not put again", () => {
    const rows = make()
    rows.put("a", row("a"))
    rows.put("b", row("b"))
    const taken = rows.take()
    rows.put("c", row("c"))
    rows.gone("b")
    rows.failed(taken?.puts, taken?.deletes)
    expect(rows.take()).toEqual({ puts: [row("a"), row("c")], deletes: [] })
  })

  it("a failed batch's delete comes back, unless the row was put again since", () => {
    const rows = make()
    rows.gone("a")
    rows.gone("b")
    const taken = rows.take()
    rows.put("b", row("b", 1))
    rows.failed(taken?.puts, taken?.deletes)
    expect(rows.take()).toEqual({ puts: [row("b", 1)], deletes: ["a"] })
  })
})
