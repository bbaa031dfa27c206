/**
 * `StoreJournal`'s mail and replay records over random operations, against a
 * model: whatever the journal's batches do to a store (some commits failing
 * and retried), once everything is committed the store holds exactly the
 * mail accepted and not yet gone, each under the seq it was accepted with,
 * and each key's latest replay record. A commit holds a key's records in the
 * order they were made, a rewrite included, so the store's later one wins.
 * Two senders use the same message ids: the journal tells their mail apart
 * (ByMessage.ts). An ask put again under its old row's seq (`putAgain`) while that
 * row's delete failed to commit is left stored by the retried commit.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { Outcome } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { Effect } from "effect"
import { resolveCoreOptions } from "../../src/broker/options.ts"
import { type Mail, Peer } from "../../src/broker/Peer.ts"
import { PeerReader } from "../../src/broker/PeerReader.ts"
import { PeerWriter } from "../../src/broker/PeerWriter.ts"
import { makeRouterSignals, Router } from "../../src/broker/Router.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import type { HeldAck } from "../../src/broker/JournalEntries.ts"
import { StoreJournal, type TakenBatch } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"

const SENDER = "scope\u0000alice"
const SENDER_B = "scope\u0000carol"

/** A message as `sender:id`: senders `a` (alice) and `b` (carol) share ids `k1` and `k2`. */
const senderOf = (k: string) => k.startsWith("b:") ? SENDER_B : SENDER
const idOf = (k: string) => k.slice(2)

/** The session every message here is for. */
const TARGET = "scope\u0000bob"

const mailFor = (recordKey: string): Mail => ({
  recordKey,
  senderKey: senderOf(recordKey),
  senderId: "alice",
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: idOf(recordKey), timestamp: 1, content: { text: "hi" } },
  brokerReceivedAt: 1,
  spaceKey: "scope",
  targetKey: TARGET,
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
              journal.mailGone(senderOf(o.key), idOf(o.key), TARGET)
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

  it("stores a withdrawn ask with the next commit, puts it back when that commit fails, and deletes one pushed out", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    journal.askWithdrawn("k1", 5)
    journal.askWithdrawn("k2", 6)
    const first = journal.take(10) ?? assert.fail("nothing taken")
    assert.deepStrictEqual(first.batch.withdrawalPuts, [{ messageKey: "k1", at: 5 }, { messageKey: "k2", at: 6 }])
    // Meanwhile k2 is pushed out of the bound; the failed commit's k1 goes back, k2 is deleted.
    journal.withdrawalGone("k2")
    journal.failed(first, "disk full")
    const second = journal.take(11) ?? assert.fail("nothing taken")
    assert.deepStrictEqual(second.batch.withdrawalPuts, [{ messageKey: "k1", at: 5 }])
    assert.deepStrictEqual(second.batch.withdrawalDeletes, ["k2"])
    journal.committed(second)
    // A withdrawal pushed out before it was taken is never stored at all.
    journal.askWithdrawn("k3", 12)
    journal.withdrawalGone("k3")
    assert.isUndefined(journal.take(13))
  })
})

/**
 * Mail given back to the mailbox (`mailGivenBack`, the copy dated when): its
 * row takes that date under its seq, marked given back — the put itself when
 * it was not taken yet, else the row written again (`mailUpdates`) — through
 * failed commits, and never once the mail is gone.
 */
describe("StoreJournal given-back mail", () => {
  const givenBack = (mail: Mail, at: number): Mail => ({ ...mail, queuedAt: at })
  const shapes = (taken: TakenBatch | undefined) => ({
    puts: (taken?.batch.mailPuts ?? []).map((p) => [p.seq, p.mail.queuedAt, p.givenBack]),
    updates: (taken?.batch.mailUpdates ?? []).map((u) => [u.seq, u.mail.queuedAt, u.givenBack]),
    deletes: taken?.batch.mailDeletes ?? []
  })

  it("a put not taken yet carries the new date and the mark; nothing is written again", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const mail = mailFor("a:k1")
    journal.putMail(mail)
    journal.mailGivenBack(givenBack(mail, 50))
    assert.deepStrictEqual(shapes(journal.take(60)), { puts: [[1, 50, 2]], updates: [], deletes: [] })
  })

  it("a stored row is written again under its seq, also after a failed commit, the latest give-back winning", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const mail = mailFor("a:k1")
    journal.putMail(mail)
    journal.committed(journal.take(10) ?? assert.fail("nothing taken"))
    journal.mailGivenBack(givenBack(mail, 50))
    const first = journal.take(60)
    assert.deepStrictEqual(shapes(first), { puts: [], updates: [[1, 50, 2]], deletes: [] })
    // Given back again while that commit runs, and the commit fails: the later date is written.
    journal.mailGivenBack(givenBack(mail, 70))
    journal.failed(first ?? assert.fail("nothing taken"), "disk full")
    assert.deepStrictEqual(shapes(journal.take(80)), { puts: [], updates: [[1, 70, 2]], deletes: [] })
  })

  it("a put taken, failed, and given back meanwhile is put again with the later date and the mark", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const mail = mailFor("a:k1")
    journal.putMail(mail)
    const first = journal.take(10) ?? assert.fail("nothing taken")
    journal.mailGivenBack(givenBack(mail, 50))
    journal.failed(first, "disk full")
    assert.deepStrictEqual(shapes(journal.take(60)), { puts: [[1, 50, 2]], updates: [], deletes: [] })
  })

  it("mail gone after it was given back is deleted, not written again", () => {
    const journal = new StoreJournal(() => {}, 3_600_000)
    const mail = mailFor("a:k1")
    journal.putMail(mail)
    journal.committed(journal.take(10) ?? assert.fail("nothing taken"))
    journal.mailGivenBack(givenBack(mail, 50))
    journal.mailGone(SENDER, "k1", TARGET)
    assert.deepStrictEqual(shapes(journal.take(60)), { puts: [], updates: [], deletes: [1] })
  })

  it.effect("an ask put again under its old row's seq while that row's delete fails to commit: the retried commit leaves the row, marked", () =>
    Effect.gen(function*() {
      const store = makeMemory(makeMemoryMailState())
      const journal = new StoreJournal(() => {}, 3_600_000)
      const mail = mailFor("a:k1")
      journal.putMail(mail)
      const put = journal.take(10) ?? assert.fail("nothing taken")
      yield* store.commit(put.batch)
      journal.committed(put)
      // Dropped as answered; its delete is taken, and while that commit runs the ask is put back under its seq.
      const seq = journal.storedSeq(SENDER, "k1", TARGET)
      journal.mailGone(SENDER, "k1", TARGET)
      const drop = journal.take(20) ?? assert.fail("nothing taken")
      journal.putAgain(givenBack(mail, 50), seq ?? assert.fail("no seq"))
      journal.failed(drop, "disk full")
      const retried = journal.take(60)
      assert.deepStrictEqual(shapes(retried), { puts: [[1, 50, 2]], updates: [], deletes: [1] })
      yield* store.commit(retried?.batch ?? assert.fail("nothing taken"))
      const loaded = yield* store.load(0)
      assert.deepStrictEqual(loaded.mail.map((m) => [m.seq, m.mail.queuedAt, m.givenBack]), [[1, 50, 2]])
    }))
})

/** A peer for the journal to hold acknowledgements for (it only keeps it), on a connection that does nothing. */
const makePeer = (): Peer => {
  const router = new Router(resolveCoreOptions({ idleExit: null }), () => 0, Effect.runSync(makeRouterSignals(false)))
  const fork = () => Effect.runFork(Effect.void)
  const connection: Connection = {
    id: 1,
    trustedLocal: true,
    read: Effect.never,
    writeAll: () => Effect.void,
    write: () => undefined,
    unfinishedWrite: () => undefined,
    readProgress: () => ({ frames: 0, pending: 0, reading: false }),
    readPending: () => 0,
    end: Effect.void,
    destroy: Effect.void
  }
  return new Peer(
    connection,
    0,
    (peer) => new PeerReader(router, peer, { release: () => {} }, fork),
    (peer) => new PeerWriter(router, peer, fork)
  )
}

/**
 * The acknowledgements held until read (`holdAckUntilRead`): a plain message's
 * or a reply's waits on its mail's journal entry when its put was the last
 * (the Router's order), an ask's in ReadAcks; both over random puts, reads,
 * answers and commits (some failing), two senders sharing ids.
 */
describe("StoreJournal held acknowledgements", () => {
  const kind = fc.constantFrom("plain" as const, "ask" as const, "reply" as const)
  const ackOp = fc.oneof(
    { weight: 5, arbitrary: fc.record({ op: fc.constant("send" as const), key, kind, askKey: key, putOther: fc.boolean() }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant("gone" as const), key }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant("commit" as const), ok: fc.boolean() }) }
  )
  const peer = makePeer()

  it("releases each exactly once: a plain message's or a reply's at its read, an ask's with its reply's read, any at the commit that stores it", () => {
    fc.assert(
      fc.property(fc.array(ackOp, { maxLength: 80 }), (ops) => {
        let phase: { readonly how: "read"; readonly key: string } | { readonly how: "stored"; readonly upTo: number } | undefined
        // Each acknowledgement by its message and the change count it reveals (unique: every send makes changes).
        const name = (ack: HeldAck) => `${ack.senderKey === SENDER_B ? "b" : "a"}:${ack.id}@${ack.upTo}`
        const released = new Map<string, string>()
        const journal = new StoreJournal(() => {}, 3_600_000, () => {}, (ready) => {
          for (const ack of ready) {
            assert.isDefined(phase, "released outside a read or a commit")
            assert.isFalse(released.has(name(ack)), `${name(ack)} released twice`)
            released.set(name(ack), phase!.how)
            if (phase!.how === "stored") assert.isAtMost(ack.upTo, phase!.upTo, "released by a commit before it was stored")
            else {
              const own = `${ack.senderKey === SENDER_B ? "b" : "a"}:${ack.id}` === phase!.key
              // Its own read releases a plain message or a reply; an ask goes with the reply that answered it.
              if (own) assert.isTrue(ack.byReceipt, "an ask released by its own read")
              else assert.isFalse(ack.byReceipt, "a message's acknowledgement released by another's read")
            }
          }
        })
        // The acknowledgement held for each message (by name, and whether a read releases it), and all made.
        const acks = new Map<string, { readonly name: string; readonly byReceipt: boolean }>()
        const made: Array<string> = []
        const held = new Set<string>()
        // A reply's acknowledgement -> the ask's it carries since `answered` (an ask is linked once).
        const links = new Map<string, string>()
        // Each message's latest acknowledgement, read or not (an ask is read before its reply is sent).
        const lastAck = new Map<string, { readonly name: string; readonly byReceipt: boolean }>()
        const linked = new Set<string>()
        let appended = 0
        let now = 1
        let other = 0
        const commit = (ok: boolean) => {
          const taken = journal.take(now++)
          if (taken === undefined) return
          if (!ok) return journal.failed(taken, "disk full")
          phase = { how: "stored", upTo: taken.upTo }
          journal.committed(taken)
          phase = undefined
        }
        for (const o of ops) {
          switch (o.op) {
            case "send": {
              if (held.has(o.key)) break
              journal.putMail(mailFor(o.key))
              appended++
              held.add(o.key)
              // Another message put in between: the acknowledgement is not the last put's.
              if (o.putOther) {
                const k = `a:x${other++}`
                journal.putMail(mailFor(k))
                appended++
                held.add(k)
              }
              journal.recordSent(new OutboundRecord(senderOf(o.key), idOf(o.key), undefined), DELIVERED, now)
              appended++
              journal.holdAckUntilRead(peer, senderOf(o.key), idOf(o.key), o.kind !== "ask")
              const ack = { name: `${o.key}@${appended}`, byReceipt: o.kind !== "ask" }
              made.push(ack.name)
              acks.set(o.key, ack)
              lastAck.set(o.key, ack)
              if (o.kind === "reply" && o.askKey !== o.key) {
                const ask = lastAck.get(o.askKey)
                // The ask's acknowledgement, still held, goes with this reply's from now on.
                if (ask !== undefined && !ask.byReceipt && !released.has(ask.name) && !linked.has(ask.name)) {
                  links.set(ack.name, ask.name)
                  linked.add(ask.name)
                }
                journal.answered(senderOf(o.askKey), idOf(o.askKey), senderOf(o.key), idOf(o.key))
              }
              break
            }
            case "gone": {
              const ack = acks.get(o.key)
              phase = { how: "read", key: o.key }
              journal.mailGone(senderOf(o.key), idOf(o.key), TARGET)
              phase = undefined
              held.delete(o.key)
              // Read: its own acknowledgement (a plain message's or a reply's) is out now, if it was held.
              if (ack !== undefined && ack.byReceipt) assert.isTrue(released.has(ack.name), `${ack.name}: its read did not release it`)
              const ask = ack === undefined ? undefined : links.get(ack.name)
              if (ask !== undefined) assert.isTrue(released.has(ask), `${ask}: its reply's read did not release it`)
              acks.delete(o.key)
              break
            }
            case "commit":
              commit(o.ok)
          }
        }
        commit(true)
        for (const ack of made) assert.isTrue(released.has(ack), `${ack} was never released`)
      }),
      { numRuns: 1_000 }
    )
  })
})

describe("StoreJournal.holdAck", () => {
  /** A journal that records the acknowledgements it releases and counts how often it wakes the writer. */
  const recording = () => {
    const released: Array<string> = []
    let woken = 0
    const journal = new StoreJournal(() => {
      woken++
    }, 3_600_000, () => {}, (ready) => {
      for (const ack of ready) released.push(ack.id)
    })
    return { journal, released, wakes: () => woken }
  }

  // A same-id retry answered from its replay record on a quiet durable broker: nothing was left to
  // commit, so the held acknowledgement waited for a commit that never came (the sender's whole send
  // timeout; found by the kill -9 test, stop 33).
  it("releases an acknowledgement at once when every change it waits for is stored", () => {
    const { journal, released, wakes } = recording()
    const peer = makePeer()
    assert.isTrue(journal.isStored)
    journal.holdAck(peer, "m1", "socket_delivered")
    assert.deepStrictEqual(released, ["m1"])
    assert.strictEqual(wakes(), 0, "nothing to commit: the writer is not woken")
  })

  it("holds an acknowledgement behind unstored changes until the commit that stores them", () => {
    const { journal, released, wakes } = recording()
    const peer = makePeer()
    journal.putMail(mailFor("a:k1"))
    journal.holdAck(peer, "m2", "queued")
    assert.deepStrictEqual(released, [])
    assert.strictEqual(wakes(), 1, "the writer is woken to store what the acknowledgement waits for")
    const taken = journal.take(2)
    assert.isDefined(taken)
    journal.committed(taken!)
    assert.deepStrictEqual(released, ["m2"])
  })
})
