/**
 * Review revac AC1 (probe; fails on main d057769f). SilencedJournal keeps ONE
 * stored reply per ask key (`replies`, keyed by the ask's record key). An ask
 * id reused after the replay window (an hour) by the same asker is a second
 * ask under the same key; its reply takes the slot over, and when that reply
 * leaves the store the slot is emptied — while the FIRST ask's reply is still
 * stored. The first ask's deep copy, dropped before ITS deadline, then finds
 * no reply (`askSilencedFor` → `replyTo` undefined) and no `expired` debt is
 * stored, contrary to docs/store.md ("for as long as the reply is stored").
 * Driven on a bare StoreJournal, as the broker's StaleAsks.drop calls it.
 */
import { assert, describe, it } from "@effect/vitest"
import type { AskEdge } from "../src/broker/AskEdges.ts"
import type { Mail } from "../src/broker/Peer.ts"
import { StoreJournal } from "../src/broker/StoreJournal.ts"

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

describe("review revac AC1: one reply slot per ask key", () => {
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
