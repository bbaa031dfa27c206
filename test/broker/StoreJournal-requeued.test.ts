/**
 * `StoreJournal.mailRequeued` (review mailbox S1): mail given back to the
 * mailbox, dated anew there, is stored again with that date under a new seq
 * and its old row deleted — in the commit after a stored row, or in place of a
 * put not yet taken — and a reply's stored `expired` debt stays with it (the
 * same message, not a new one under its id, as `putMail`'s replacement is),
 * ending when the reply leaves the store. Nothing for mail not stored.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AskEdge } from "../../src/broker/AskEdges.ts"
import type { Mail } from "../../src/broker/Peer.ts"
import { StoreJournal, type TakenBatch } from "../../src/broker/StoreJournal.ts"

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

const edge: AskEdge = {
  messageKey: ask.recordKey,
  messageId: "q1",
  askerKey: ask.senderKey,
  targetKey: ask.targetKey,
  deadline: 60_010,
  openedAt: 10
}

/** Bob's reply r1 to q1, queued at 20. */
const reply: Mail = {
  ...ask,
  recordKey: "scope\u0000bob\u0001r1",
  senderKey: ask.targetKey,
  senderId: "bob",
  targetKey: ask.senderKey,
  targetId: "alice",
  message: { id: "r1", timestamp: 1, content: { text: "!" }, replyTo: "q1" },
  queuedAt: 20,
  askTimeoutMs: undefined,
  answers: edge
}

/** Takes the journal's batch and marks it stored. */
const commit = (journal: StoreJournal, now = 1_000): TakenBatch => {
  const taken = journal.take(now)
  assert.isDefined(taken, "nothing to commit")
  journal.committed(taken!)
  return taken!
}

describe("StoreJournal.mailRequeued", () => {
  it("stores a stored row again with its new date under a new seq, deleting the old one", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    journal.putMail(reply)
    const first = commit(journal)
    assert.strictEqual(first.batch.mailPuts.length, 1)
    const oldSeq = first.batch.mailPuts[0]!.seq
    journal.mailRequeued({ ...reply, queuedAt: 500 })
    const second = commit(journal)
    assert.deepStrictEqual(second.batch.mailDeletes, [oldSeq])
    assert.deepStrictEqual(second.batch.mailPuts.map((put) => [put.mail.recordKey, put.mail.queuedAt]), [[reply.recordKey, 500]])
    assert.isAbove(second.batch.mailPuts[0]!.seq, oldSeq)
  })

  it("replaces a put not yet taken: one row, with the new date, behind mail put before the return", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    journal.putMail(reply)
    journal.putMail(ask)
    journal.mailRequeued({ ...reply, queuedAt: 500 })
    const taken = commit(journal)
    assert.deepStrictEqual(taken.batch.mailDeletes, [])
    assert.deepStrictEqual(taken.batch.mailPuts.map((put) => [put.mail.recordKey, put.mail.queuedAt]), [[ask.recordKey, 10], [reply.recordKey, 500]])
  })

  it("keeps a reply's stored debt: not deleted by the requeue, deleted when the reply leaves the store", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    journal.putMail(reply)
    commit(journal)
    journal.askSilenced(reply, ask, 100)
    assert.deepStrictEqual(commit(journal).batch.silencedPuts?.map((put) => put.replyKey), [reply.recordKey])
    journal.mailRequeued({ ...reply, queuedAt: 500 })
    assert.deepStrictEqual(commit(journal).batch.silencedDeletes ?? [], [], "the requeue ended the debt")
    journal.mailGone(reply.senderKey, reply.message.id)
    assert.deepStrictEqual(commit(journal).batch.silencedDeletes, [reply.recordKey], "the debt outlived its reply")
  })

  it("does nothing for mail not stored", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    journal.mailRequeued(reply)
    assert.isUndefined(journal.take(1_000))
  })
})
