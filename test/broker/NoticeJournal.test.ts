/**
 * `NoticeJournal` (StoreJournal's part for owed failure notices): a notice
 * read before its commit never reaches the store; a failed batch gives its
 * changes back, except a notice read meanwhile; numbering goes on after a
 * restart's.
 */
import { assert, describe, it } from "@effect/vitest"
import { NoticeJournal } from "../../src/broker/NoticeJournal.ts"
import type { MailCommit } from "../../src/store/MailStore.ts"

const asBatch = (notices: Pick<MailCommit, "noticePuts" | "noticeDeletes">): MailCommit => ({
  records: [],
  mailPuts: [],
  mailDeletes: [],
  edgePuts: [],
  edgeDeletes: [],
  ...notices
})

describe("NoticeJournal", () => {
  it("a notice read before it was taken is never stored, and names no change", () => {
    const journal = new NoticeJournal()
    const seq = journal.put("alice", "{}", 1)
    assert.isFalse(journal.gone(seq), "nothing to delete")
    assert.isTrue(journal.isEmpty)
    assert.deepStrictEqual(journal.take(), {})
  })

  it("a taken notice read later is deleted by the next batch", () => {
    const journal = new NoticeJournal()
    const seq = journal.put("alice", "{}", 1)
    assert.deepStrictEqual(journal.take().noticePuts?.map((n) => n.seq), [seq])
    assert.isTrue(journal.gone(seq))
    assert.deepStrictEqual(journal.take(), { noticePuts: [], noticeDeletes: [seq] })
  })

  it("a failed batch gives its puts and deletes back, ahead of later ones; a put read meanwhile is dropped with its delete", () => {
    const journal = new NoticeJournal()
    const kept = journal.put("alice", "a", 1)
    const read = journal.put("bob", "b", 2)
    const batch = asBatch({ ...journal.take(), noticeDeletes: [40] })
    journal.gone(read) // read while the batch was being committed
    const later = journal.put("carol", "c", 3)
    journal.failed(batch)
    const again = journal.take()
    assert.deepStrictEqual(again.noticePuts?.map((n) => n.seq), [kept, later])
    assert.deepStrictEqual(again.noticeDeletes, [40])
  })

  it("numbers notices after what a restart found stored", () => {
    const journal = new NoticeJournal()
    journal.restoreSeq(17)
    assert.strictEqual(journal.put("alice", "{}", 1), 17)
    journal.restoreSeq(5)
    assert.strictEqual(journal.put("alice", "{}", 1), 18)
  })
})
