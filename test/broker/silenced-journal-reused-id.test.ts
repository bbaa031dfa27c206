/**
 * The durable debt of a deep answered ask goes with the stored reply of its
 * own edge (SilencedJournal's `replies`, by ask key AND deadline): an ask id
 * reused past the replay window by the same asker is a second ask under the
 * same key, and neither its reply nor that reply's going hides the first
 * ask's still-stored reply (review revac AC1; before, one slot per key).
 * Driven on a bare StoreJournal, as StaleAsks.drop calls it.
 */
import { assert, describe, it } from "@effect/vitest"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { first, HOUR, reply1, reply2, second, TIMEOUT } from "../support/reusedAsk.ts"

const storedDebts = (journal: StoreJournal): ReadonlyArray<string> =>
  (journal.take(second.brokerReceivedAt + 120_000)?.batch.silencedPuts ?? []).map((row) => row.replyKey)

describe("a deep copy's debt with a reused ask id: one reply per edge", () => {
  it("the first ask's reply, still stored, takes its deep copy's debt after the reused id's reply came and was read", () => {
    const journal = new StoreJournal(() => {}, HOUR)
    journal.putMail(reply1)
    journal.putMail(reply2)
    journal.mailGone(reply2.senderKey, reply2.message.id, reply2.targetKey) // alice read the second answer
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
