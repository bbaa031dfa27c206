/**
 * The store journal's part for the `expired` owed for asks that went
 * silently as answered (SilencedJournal.ts): a debt is stored once, ends
 * with its reply (a delete only when it was stored), and a failed commit
 * gives its changes back without bringing back a debt that ended since.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Mail } from "../../src/broker/Peer.ts"
import { SilencedJournal } from "../../src/broker/SilencedJournal.ts"
import type { MailCommit } from "../../src/store/MailStore.ts"

const ask: Mail = {
  recordKey: "scope\u0000alice\u0001q1",
  senderKey: "scope\u0000alice",
  senderId: "alice",
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: "q1", timestamp: 1, content: { text: "?" }, expectsReply: true },
  brokerReceivedAt: 10,
  spaceKey: "scope",
  targetKey: "scope\u0000bob",
  targetId: "bob",
  targetIdentity: undefined,
  queuedAt: 10,
  askTimeoutMs: 60_000
}
const REPLY = "scope\u0000bob\u0001r1"

const batchOf = (journal: SilencedJournal): MailCommit => ({
  records: [],
  mailPuts: [],
  mailDeletes: [],
  edgePuts: [],
  edgeDeletes: [],
  ...journal.take()
})

describe("SilencedJournal", () => {
  it("a reply gone before its debt was taken leaves nothing to store, and nothing to delete", () => {
    const journal = new SilencedJournal()
    journal.put(REPLY, ask, 100)
    assert.isFalse(journal.gone(REPLY))
    assert.isTrue(journal.isEmpty)
  })

  it("a stored debt is deleted when its reply goes", () => {
    const journal = new SilencedJournal()
    journal.put(REPLY, ask, 100)
    assert.deepStrictEqual(batchOf(journal).silencedPuts, [{ replyKey: REPLY, at: 100, ask }])
    assert.isTrue(journal.gone(REPLY))
    assert.deepStrictEqual(batchOf(journal).silencedDeletes, [REPLY])
  })

  it("a failed commit puts its debt back, unless its reply went since: then neither put nor delete", () => {
    const kept = new SilencedJournal()
    kept.put(REPLY, ask, 100)
    kept.failed(batchOf(kept))
    assert.deepStrictEqual(batchOf(kept).silencedPuts, [{ replyKey: REPLY, at: 100, ask }])

    const ended = new SilencedJournal()
    ended.put(REPLY, ask, 100)
    const failed = batchOf(ended)
    assert.isTrue(ended.gone(REPLY)) // a delete, as far as it knows: the put was taken
    ended.failed(failed)
    assert.isTrue(ended.isEmpty)
  })
})
