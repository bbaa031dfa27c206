/**
 * `StoreJournal`'s mail rows when messages under one id wait for several sessions at once (docs/protocol.md, "one
 * message per sender and id"; Mailbox.ts): random puts, drops and commits (some failing, retried) and restarts,
 * against a model. A message is its sender, id and target session; each keeps its own row, so once everything is
 * committed the store holds exactly the messages accepted and not gone. A drop names its message's session
 * (`mailGone`'s target, which every caller gives: a drop by the id alone no longer exists, task byid item 3), and
 * other sessions' messages under the id stay stored. A restart makes a new journal from the store's rows (`restoredMail`), every row of
 * them — none dropped because another row shares its id. No clock: the journal's `take` is given plain numbers.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type { Mail } from "../../src/broker/Peer.ts"
import type { StoredMail } from "../../src/store/MailStore.ts"
import { StoreJournal, type TakenBatch } from "../../src/broker/StoreJournal.ts"

const SENDERS = ["scope\u0000alice", "scope\u0000carol"] as const
const IDS = ["k1", "k2"] as const
const TARGETS = ["scope\u0000bob", "scope\u0000zed", "scope\u0000yan"] as const

/** A message: its sender, id and target session, by index. */
interface Msg {
  readonly sender: 0 | 1
  readonly id: 0 | 1
  readonly target: 0 | 1 | 2
}
const nameOf = (m: Msg): string => `${m.sender}:${m.id}:${m.target}`

const mailFor = (m: Msg): Mail => ({
  recordKey: `${SENDERS[m.sender]}\u0001${IDS[m.id]}`,
  senderKey: SENDERS[m.sender],
  senderId: "alice",
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: IDS[m.id], timestamp: 1, content: { text: nameOf(m) } },
  brokerReceivedAt: 1,
  spaceKey: "scope",
  targetKey: TARGETS[m.target],
  targetId: "bob",
  targetIdentity: undefined,
  queuedAt: 1,
  askTimeoutMs: undefined
})

const msg: fc.Arbitrary<Msg> = fc.record({
  sender: fc.constantFrom<0 | 1>(0, 1),
  id: fc.constantFrom<0 | 1>(0, 1),
  target: fc.constantFrom<0 | 1 | 2>(0, 1, 2)
})
const op = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("put" as const), msg }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("gone" as const), msg }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("commit" as const), ok: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ op: "restart" as const }) }
)

describe("StoreJournal: messages under one id for several sessions", () => {
  it("stores each message not yet gone, its own row apart from the others under its id, through failed commits and restarts", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        let journal = new StoreJournal(() => {}, 3_600_000)
        // The store: rows by seq, with the message each holds.
        const rows = new Map<number, StoredMail>()
        // The model: the messages held (accepted, not gone), by name.
        const held = new Set<string>()
        let now = 1
        const apply = (taken: TakenBatch) => {
          for (const put of taken.batch.mailPuts) {
            assert.isFalse(rows.has(put.seq), `seq ${put.seq} put twice`)
            rows.set(put.seq, put)
          }
          for (const seq of taken.batch.mailDeletes) rows.delete(seq)
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
              if (held.has(nameOf(o.msg))) break
              journal.putMail(mailFor(o.msg))
              held.add(nameOf(o.msg))
              break
            case "gone":
              journal.mailGone(SENDERS[o.msg.sender], IDS[o.msg.id], TARGETS[o.msg.target])
              held.delete(nameOf(o.msg))
              break
            case "commit":
              commit(o.ok)
              break
            case "restart": {
              // Everything committed first, then the store must hold the messages held, one row each.
              commit(true)
              const before = [...rows.values()].map((row) => row.mail.message.content.text).sort()
              assert.deepStrictEqual(before, [...held].sort(), "the rows stored before the restart are the messages held")
              held.clear()
              journal = new StoreJournal(() => {}, 3_600_000)
              let next = 1
              for (const [seq, row] of [...rows].sort((a, b) => a[0] - b[0])) {
                journal.restoredMail(row)
                held.add(row.mail.message.content.text)
                next = seq + 1
              }
              journal.restoreSeq(next)
            }
          }
        }
        commit(true)
        assert.isTrue(journal.isStored)
        const stored = [...rows.values()].map((row) => row.mail.message.content.text).sort()
        assert.deepStrictEqual(stored, [...held].sort(), "the rows stored are the messages held, one each")
        assert.strictEqual(journal.mailHeld, held.size, "the journal knows each row held")
      }),
      { numRuns: 500 }
    )
  })
})
