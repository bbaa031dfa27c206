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
import { BrokerStamps } from "../../src/broker/BrokerStamps.ts"
import { DeliveryRecords } from "../../src/broker/DeliveryRecords.ts"
import type { MailAsks } from "../../src/broker/MailDelivery.ts"
import { StaleAsks } from "../../src/broker/StaleAsks.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { first, HOUR, reply1, reply2, second } from "../support/reusedAsk.ts"

const NOW = second.brokerReceivedAt + 120_000 // both asks answered and closed, both before their deadlines

/** Asks as they stand: both edges closed by their replies, none withdrawn, AnsweredAsks naming the later answer. */
const asks: MailAsks = {
  answerLost: () => false,
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
    const stale = new StaleAsks({ now: () => NOW, records, journal, stamps: new BrokerStamps(() => NOW) }, asks, () => {}, () => {})
    stale.drop(first)
    const debts = (journal.take(NOW)?.batch.silencedPuts ?? []).map((row) => [row.replyKey, row.ask.brokerReceivedAt])
    assert.deepStrictEqual(debts, [[reply1.recordKey, first.brokerReceivedAt]], "the earlier ask's debt is not stored with its own reply")
  })
})
