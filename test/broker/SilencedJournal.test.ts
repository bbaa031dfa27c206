/**
 * The store journal's part for the `expired` owed for asks that went
 * silently as answered (SilencedJournal.ts): a debt is stored once, ends
 * with its reply (a delete only when it was stored), and a failed commit
 * gives its changes back without bringing back a debt that ended since.
 * And the stored replies it finds by the ask each answered (`replyTo`,
 * review revz Z4): only along that ask's own edge, while the reply is stored.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AskEdge } from "../../src/broker/AskEdges.ts"
import { JournalMail } from "../../src/broker/JournalEntries.ts"
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

/** The edge of `ask` with `deadline`, and the journal entry of bob's reply `id` that closed it. */
const replyEntry = (id: string, deadline: number): JournalMail => {
  const edge: AskEdge = {
    messageKey: ask.recordKey,
    messageId: "q1",
    askerKey: ask.senderKey,
    targetKey: ask.targetKey,
    deadline,
    openedAt: deadline - 60_000
  }
  const reply: Mail = {
    ...ask,
    recordKey: `scope\u0000bob\u0001${id}`,
    senderKey: ask.targetKey,
    senderId: "bob",
    targetKey: ask.senderKey,
    targetId: "alice",
    message: { id, timestamp: 1, content: { text: "!" }, replyTo: "q1" },
    askTimeoutMs: undefined,
    answers: edge
  }
  return new JournalMail(1, reply, true)
}

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

  it("a stored reply is found by its ask's key along that ask's edge only, and no longer once it is gone", () => {
    const journal = new SilencedJournal()
    const entry = replyEntry("r1", 60_010)
    journal.replyStored(entry)
    assert.strictEqual(journal.replyTo(ask.recordKey, 60_010), entry)
    assert.isUndefined(journal.replyTo(ask.recordKey, 999_999), "found along another ask's edge under the same id")
    journal.replyGone(entry)
    assert.isUndefined(journal.replyTo(ask.recordKey, 60_010))
  })

  it("a later ask's reply under the same key is found by its own edge; the earlier reply's going leaves it", () => {
    const journal = new SilencedJournal()
    const earlier = replyEntry("r1", 60_010)
    const later = replyEntry("r2", 7_260_010)
    journal.replyStored(earlier)
    journal.replyStored(later)
    journal.replyGone(earlier)
    assert.strictEqual(journal.replyTo(ask.recordKey, 7_260_010), later)
  })
})
