/**
 * A deep answered copy dropped before its deadline is remembered, and its
 * durable debt stored, with its OWN edge's deadline — its receipt plus its
 * timeout, which every edge has, a staged ask's too — never one looked up by
 * the ask's key, which after the asker reused the id past the replay window
 * names the later ask's edge and would store the debt with the later ask's
 * reply (review revac AC2). StaleAsks over a real StoreJournal, with a
 * MailAsks fake answering as Asks would.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AskEdge } from "../../src/broker/AskEdges.ts"
import { DeliveryRecords } from "../../src/broker/DeliveryRecords.ts"
import type { MailAsks } from "../../src/broker/MailDelivery.ts"
import type { Mail } from "../../src/broker/Peer.ts"
import { StaleAsks } from "../../src/broker/StaleAsks.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"

const HOUR = 3_600_000
const TIMEOUT = 3 * HOUR

const askAt = (receivedAt: number): Mail => ({
  recordKey: "scope\u0000alice\u0001q1",
  senderKey: "scope\u0000alice",
  senderId: "alice",
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: "q1", timestamp: receivedAt, content: { text: "?" }, expectsReply: true },
  brokerReceivedAt: receivedAt,
  spaceKey: "scope",
  targetKey: "scope\u0000bob",
  targetId: "bob",
  targetIdentity: undefined,
  queuedAt: receivedAt,
  askTimeoutMs: TIMEOUT
})

/** Bob's reply `id` to `ask`, closing its edge (deadline brokerReceivedAt + timeout, as Asks opens it). */
const replyTo = (ask: Mail, id: string): Mail => {
  const answers: AskEdge = {
    messageKey: ask.recordKey,
    messageId: ask.message.id,
    askerKey: ask.senderKey,
    targetKey: ask.targetKey,
    deadline: ask.brokerReceivedAt + TIMEOUT,
    openedAt: ask.brokerReceivedAt
  }
  return {
    ...ask,
    recordKey: `scope\u0000bob\u0001${id}`,
    senderKey: ask.targetKey,
    senderId: "bob",
    targetKey: ask.senderKey,
    targetId: "alice",
    message: { id, timestamp: ask.brokerReceivedAt + 1, content: { text: "!" }, replyTo: "q1" },
    askTimeoutMs: undefined,
    answers
  }
}

const first = askAt(10)
const reply1 = replyTo(first, "r1")
const second = askAt(10 + HOUR + 60_000) // the id reused past the replay window
const reply2 = replyTo(second, "r2")
const NOW = second.brokerReceivedAt + 120_000 // both asks answered and closed, both before their deadlines

/** Asks as they stand: both edges closed by their replies, none withdrawn, AnsweredAsks naming the later answer. */
const asks: MailAsks = {
  answerLost: () => {},
  isOpen: () => false,
  openStaged: () => {},
  withdrawnEarly: () => false,
  answeredCopy: () => undefined, // deep copies: no reply marked them
  askLost: () => {}
}

describe("a deep copy's debt goes with the reply of the edge it had", () => {
  it("the earlier ask's copy, dropped after the id was reused and answered again, is stored with its own reply", () => {
    const journal = new StoreJournal(() => {}, HOUR)
    journal.putMail(reply1)
    journal.putMail(reply2)
    const records = new DeliveryRecords({ windowMs: HOUR, retentionMs: HOUR, maxRecords: 1_000, maxBytes: 1_000_000 })
    const stale = new StaleAsks({ now: () => NOW, records, journal }, asks, () => {}, () => {})
    stale.drop(first)
    const debts = (journal.take(NOW)?.batch.silencedPuts ?? []).map((row) => [row.replyKey, row.ask.brokerReceivedAt])
    assert.deepStrictEqual(debts, [[reply1.recordKey, first.brokerReceivedAt]], "the earlier ask's debt is not stored with its own reply")
  })
})
