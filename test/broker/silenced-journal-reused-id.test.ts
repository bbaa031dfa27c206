/**
 * The durable debt of a deep answered ask goes with the stored reply of its
 * own edge (SilencedJournal's `replies`, by ask key AND deadline): an ask id
 * reused past the replay window by the same asker is a second ask under the
 * same key, and neither its reply nor that reply's going hides the first
 * ask's still-stored reply (review revac AC1; before, one slot per key).
 * Driven on a bare StoreJournal, as StaleAsks.drop calls it.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AskEdge } from "../../src/broker/AskEdges.ts"
import type { Mail } from "../../src/broker/Peer.ts"
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

const storedDebts = (journal: StoreJournal): ReadonlyArray<string> =>
  (journal.take(second.brokerReceivedAt + 120_000)?.batch.silencedPuts ?? []).map((row) => row.replyKey)

describe("a deep copy's debt with a reused ask id: one reply per edge", () => {
  it("the first ask's reply, still stored, takes its deep copy's debt after the reused id's reply came and was read", () => {
    const journal = new StoreJournal(() => {}, HOUR)
    journal.putMail(reply1)
    journal.putMail(reply2)
    journal.mailGone(reply2.senderKey, reply2.message.id) // alice read the second answer
    journal.askSilencedFor(first, first.brokerReceivedAt + TIMEOUT, second.brokerReceivedAt + 90_000)
    assert.deepStrictEqual(storedDebts(journal), [reply1.recordKey], "no debt stored with the first ask's stored reply")
  })

  it("the first ask's reply, still stored, takes its deep copy's debt while the reused id's reply is stored too", () => {
    const journal = new StoreJournal(() => {}, HOUR)
    journal.putMail(reply1)
    journal.putMail(reply2)
    journal.askSilencedFor(first, first.brokerReceivedAt + TIMEOUT, second.brokerReceivedAt + 90_000)
    assert.deepStrictEqual(storedDebts(journal), [reply1.recordKey], "no debt stored with the first ask's stored reply")
  })
})
