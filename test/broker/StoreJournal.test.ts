/**
 * `StoreJournal`'s mail and replay records over random operations, against a
 * model: whatever the journal's batches do to a store (some commits failing
 * and retried), once everything is committed the store holds exactly the
 * mail accepted and not yet gone, each under the seq it was accepted with,
 * and each key's latest replay record. A commit holds a key's records in the
 * order they were made, a rewrite included, so the store's later one wins.
 * Two senders use the same message ids: the journal tells their mail apart
 * (ByMessage.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { Outcome } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecords.ts"
import type { Mail } from "../../src/broker/Peer.ts"
import { StoreJournal, type TakenBatch } from "../../src/broker/StoreJournal.ts"

const SENDER = "scope\u0000alice"
const SENDER_B = "scope\u0000carol"

/** A message as `sender:id`: senders `a` (alice) and `b` (carol) share ids `k1` and `k2`. */
const senderOf = (k: string) => k.startsWith("b:") ? SENDER_B : SENDER
const idOf = (k: string) => k.slice(2)

const mailFor = (recordKey: string): Mail => ({
  recordKey,
  senderKey: senderOf(recordKey),
  senderId: "alice",
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: idOf(recordKey), timestamp: 1, content: { text: "hi" } },
  brokerReceivedAt: 1,
  spaceKey: "scope",
  targetKey: "scope\u0000bob",
  targetId: "bob",
  targetIdentity: undefined,
  queuedAt: 1,
  askTimeoutMs: undefined
})

const DELIVERED: Outcome = { ok: true, delivery: "socket_delivered" }
const QUEUED: Outcome = { ok: true, delivery: "queued" }

const key = fc.constantFrom("a:k1", "a:k2", "a:k3", "b:k1", "b:k2", "b:k4")
const op = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("put" as const), key }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("gone" as const), key }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("sent" as const), key }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("rewrite" as const), key }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("commit" as const), ok: fc.boolean() }) }
)

describe("StoreJournal", () => {
  it("stores the mail not yet gone under its seq, and each key's latest record, through failed commits", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const journal = new StoreJournal(() => {}, 3_600_000)
        // The store: mail by seq (its record key), records by key (their outcome's delivery, in commit order).
        const mail = new Map<number, string>()
        const records = new Map<string, string>()
        // The model: mail held (accepted, not gone) by key, each key's latest record.
        const held = new Set<string>()
        const latest = new Map<string, string>()
        const seqOf = new Map<string, number>()
        let now = 1
        const apply = (taken: TakenBatch) => {
          for (const r of taken.batch.records) {
            records.set(r.key, r.outcome.ok ? r.outcome.delivery : "failed")
          }
          for (const put of taken.batch.mailPuts) {
            assert.isFalse(mail.has(put.seq), `seq ${put.seq} put twice`)
            mail.set(put.seq, put.mail.recordKey)
            seqOf.set(put.mail.recordKey, put.seq)
          }
          for (const seq of taken.batch.mailDeletes) mail.delete(seq)
          journal.committed(taken)
        }
        const commit = (ok: boolean) => {
          const taken = journal.take(now++)
          if (taken === undefined) return
          if (ok) apply(taken)
          else journal.failed(taken, "disk full")
        }
        for (const o of ops) {
          switch (o.op) {
            case "put":
              if (held.has(o.key)) break
              journal.putMail(mailFor(o.key))
              held.add(o.key)
              break
            case "gone":
              journal.mailGone(senderOf(o.key), idOf(o.key))
              held.delete(o.key)
              break
            case "sent": {
              const record = new OutboundRecord(SENDER, o.key, undefined)
              journal.recordSent(record, QUEUED, now)
              latest.set(`${SENDER}\u0001${o.key}`, "queued")
              break
            }
            case "rewrite":
              journal.record(SENDER, `${SENDER}\u0001${o.key}`, new OutboundRecord(SENDER, o.key, undefined), DELIVERED, now)
              latest.set(`${SENDER}\u0001${o.key}`, "socket_delivered")
              break
            case "commit":
              commit(o.ok)
          }
        }
        commit(true)
        assert.isTrue(journal.isStored)
        assert.deepStrictEqual([...mail.values()].sort(), [...held].sort(), "the mail stored is the mail held")
        for (const [seq, k] of mail) assert.strictEqual(seqOf.get(k), seq)
        assert.strictEqual(journal.mailHeld, held.size)
        assert.deepStrictEqual(new Map([...records].sort()), new Map([...latest].sort()), "each key's latest record")
      }),
      { numRuns: 500 }
    )
  })

  it("keeps a key's records in the order they were made, a rewrite after the first included", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const record = new OutboundRecord(SENDER, "m1", undefined)
    journal.recordSent(record, QUEUED, 5)
    journal.record(SENDER, `${SENDER}\u0001m1`, record, DELIVERED, 6)
    const taken = journal.take(10)
    assert.deepStrictEqual(
      taken?.batch.records.map((r) => [r.key, r.outcome.ok && r.outcome.delivery, r.at]),
      [[`${SENDER}\u0001m1`, "queued", 5], [`${SENDER}\u0001m1`, "socket_delivered", 6]]
    )
    // The sent record carries its id, so the replay block need not take the key apart.
    assert.strictEqual(taken?.batch.records[0]?.id, "m1")
  })
})
