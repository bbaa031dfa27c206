/**
 * `ReadAcks` (StoreJournal.holdAckUntilRead) over random operations: every
 * acknowledgement held comes out exactly once — by its read, its reply's
 * read, a commit, or handed back to wait for a commit — an ask's own read
 * never releases it, and a commit releases nothing it has not stored — with
 * two senders using the same message ids, each held apart (ByMessage.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { ReadAcks } from "../../src/broker/ReadAcks.ts"

interface Ack {
  readonly num: number
  readonly key: string
  readonly senderKey: string
  readonly id: string
  readonly byReceipt: boolean
  readonly upTo: number
  answered: Ack | undefined
}

/** A message as `sender:id`: senders `a` and `b` share ids `k1` and `k2`. */
const key = fc.constantFrom("a:k1", "a:k2", "b:k1", "b:k2", "b:k3")
const senderOf = (k: string) => k.slice(0, 1)
const idOf = (k: string) => k.slice(2)
const op = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("hold" as const), key, byReceipt: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("change" as const) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("answered" as const), ask: key, reply: key }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("read" as const), key }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("stored" as const), back: fc.integer({ min: 0, max: 3 }) }) }
)

describe("ReadAcks", () => {
  it("releases every acknowledgement exactly once, an ask never by its own read, a commit only what it stored", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const acks = new ReadAcks<Ack>()
        const out = new Map<number, string>()
        const made: Array<Ack> = []
        let appended = 0
        let nextId = 0
        const release = (how: string, released: ReadonlyArray<Ack>) => {
          for (const ack of released) {
            assert.isFalse(out.has(ack.num), `ack ${ack.num} released twice (${out.get(ack.num)}, then ${how})`)
            out.set(ack.num, how)
          }
        }
        for (const step of ops) {
          switch (step.op) {
            case "hold": {
              const ack: Ack = {
                num: nextId++,
                key: step.key,
                senderKey: senderOf(step.key),
                id: idOf(step.key),
                byReceipt: step.byReceipt,
                upTo: appended,
                answered: undefined
              }
              made.push(ack)
              release("handed back", acks.hold(ack))
              break
            }
            case "change":
              appended++
              break
            case "answered":
              if (step.ask !== step.reply) {
                release("handed back", acks.answered(senderOf(step.ask), idOf(step.ask), senderOf(step.reply), idOf(step.reply)))
              }
              break
            case "read": {
              const released = acks.read(senderOf(step.key), idOf(step.key))
              for (const ack of released) {
                // Its own read releases a plain message or a reply; an ask goes only with the reply that answered it.
                if (ack.key === step.key) assert.isTrue(ack.byReceipt, `ask ${ack.num} released by its own read`)
                else assert.isFalse(ack.byReceipt, `ack ${ack.num} released by another message's read`)
              }
              release("read", released)
              break
            }
            case "stored": {
              const upTo = Math.max(0, appended - step.back)
              const released = acks.stored(upTo)
              for (const ack of released) assert.isAtMost(ack.upTo, upTo, `ack ${ack.num} released before it was stored`)
              release("stored", released)
            }
          }
        }
        release("stored", acks.stored(Number.MAX_SAFE_INTEGER))
        assert.strictEqual(acks.size, 0)
        for (const ack of made) assert.isTrue(out.has(ack.num), `ack ${ack.num} was never released`)
      }),
      { numRuns: 1_000 }
    )
  })
})
