/**
 * The mailbox's bounds as a state machine (fast-check): after every `put` the
 * bounds hold, what `put` reports evicted is exactly what left, and a put
 * whose own message goes moves nothing else; and `toBack`, which reorders
 * mail behind what was queued since. And what such a put moved comes back
 * at the age it had, which a clock step back may have made older than its
 * `queuedAt` (review mailbox S2).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type Mail } from "../../src/broker/Peer.ts"
import { Mailbox, type MailboxLimits, mailKeyOf } from "../../src/broker/Mailbox.ts"

const LIMITS: MailboxLimits = { capacity: 6, maxBytes: 6_000, maxBytesPerTarget: 4_000, retentionMs: 60_000 }

const SENDERS = ["s1", "s2", "s3"]
const TARGETS = ["t1", "t2"]

/** A put: who sends, to whom, and how long its text is. */
const putArb = fc.record({
  sender: fc.constantFrom(...SENDERS),
  target: fc.constantFrom(...TARGETS),
  chars: fc.integer({ min: 0, max: 2_600 })
})

const mailOf = (n: number, put: { readonly sender: string; readonly target: string; readonly chars: number }): Mail => ({
  recordKey: `${put.sender}/m${n}`,
  senderKey: put.sender,
  senderId: put.sender,
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id: `m${n}`, timestamp: n, content: { text: "x".repeat(put.chars) } },
  brokerReceivedAt: n,
  spaceKey: "",
  targetKey: put.target,
  targetId: put.target,
  targetIdentity: undefined,
  queuedAt: n,
  askTimeoutMs: undefined
})

/** The same estimate the mailbox makes (its module keeps it private). */
const bytesOf = (mail: Mail): number => 2 * (mail.fromJson.length + mail.message.content.text.length + mail.recordKey.length) + 512

describe("Mailbox.put", () => {
  it("keeps every bound, reports exactly what left, and moves nothing when its own message goes (property)", () => {
    fc.assert(
      fc.property(fc.array(putArb, { minLength: 1, maxLength: 40 }), (puts) => {
        const mailbox = new Mailbox(LIMITS)
        const held = new Map<string, Mail>()
        puts.forEach((put, n) => {
          const mail = mailOf(n, put)
          const before = new Set(held.keys())
          const evicted = mailbox.put(mail)
          const selfEvicted = evicted.some((eviction) => eviction.mail === mail)
          if (selfEvicted) {
            // It went, and alone: everything held before is still there.
            assert.strictEqual(evicted.length, 1)
            for (const key of before) assert.isDefined(mailbox.get(key), `${key} was pushed out for a message that went itself`)
            assert.isUndefined(mailbox.get(mailKeyOf(mail)))
          } else {
            held.set(mailKeyOf(mail), mail)
            for (const eviction of evicted) {
              assert.isTrue(before.has(mailKeyOf(eviction.mail)))
              held.delete(mailKeyOf(eviction.mail))
            }
          }
          // What the mailbox holds is what the reports say it holds.
          assert.strictEqual(mailbox.size, held.size)
          for (const key of held.keys()) assert.isDefined(mailbox.get(key))
          // The bounds.
          const all = [...held.values()]
          assert.isAtMost(all.length, LIMITS.capacity)
          assert.isAtMost(all.reduce((sum, m) => sum + bytesOf(m), 0), LIMITS.maxBytes)
          for (const target of TARGETS) {
            const bytes = all.filter((m) => m.targetKey === target).reduce((sum, m) => sum + bytesOf(m), 0)
            assert.isAtMost(bytes, LIMITS.maxBytesPerTarget)
          }
        })
        // Mail comes out in the order it was queued, whatever was put back.
        for (const target of TARGETS) {
          const taken = mailbox.take(target, undefined, () => true).map((q) => q.mail.queuedAt)
          assert.deepStrictEqual(taken, [...taken].sort((a, b) => a - b))
        }
      }),
      { numRuns: 300 }
    )
  })
})

describe("Mailbox.toBack", () => {
  it("puts the mail named behind what was queued since, in the order named: flushed after it, evicted after it", () => {
    const mailbox = new Mailbox({ ...LIMITS, capacity: 3 })
    const sent = mailOf(1, { sender: "s1", target: "t1", chars: 0 })
    mailbox.put(sent)
    const keys = mailbox.keysFor("t1", (mail) => mail.senderKey === "s1")
    assert.deepStrictEqual(keys, [mailKeyOf(sent)])
    // Older mail of the same sender comes back (requeued), after the mail sent meanwhile.
    mailbox.put(mailOf(2, { sender: "s1", target: "t1", chars: 0 }))
    mailbox.put(mailOf(3, { sender: "s1", target: "t1", chars: 0 }))
    mailbox.toBack(keys)
    // Over the capacity, the oldest in queue order goes: s1/m2 now, not the mail put behind.
    const evicted = mailbox.put(mailOf(4, { sender: "s1", target: "t1", chars: 0 })).map((eviction) => eviction.mail.recordKey)
    assert.deepStrictEqual(evicted, ["s1/m2"])
    assert.deepStrictEqual(mailbox.take("t1", undefined, () => true).map((q) => q.mail.recordKey), ["s1/m3", "s1/m1", "s1/m4"])
  })
})

describe("Mailbox.put's put-back (review mailbox S2)", () => {
  it("puts mail that made room back at the age a clock step back gave it, not at its queuedAt clamped to the newest reading", () => {
    // q (t1) queued at 10 s; the clock steps back to 5 s (x, to t2, dates q 5 s); at 7 s s3's big z, to t1, pushes q
    // out of t1's bytes, then goes itself over the overall bytes: q comes back.
    const mailbox = new Mailbox(LIMITS)
    const q = { ...mailOf(1, { sender: "s1", target: "t1", chars: 200 }), queuedAt: 10_000 }
    const x = { ...mailOf(2, { sender: "s2", target: "t2", chars: 1_000 }), queuedAt: 5_000 }
    const z = { ...mailOf(3, { sender: "s3", target: "t1", chars: 1_700 }), queuedAt: 7_000 }
    mailbox.put(q)
    mailbox.put(x)
    const evicted = mailbox.put(z)
    assert.deepStrictEqual(evicted.map((eviction) => [eviction.mail.recordKey, eviction.bound]), [[z.recordKey, "bytes"]], "z was not refused after pushing q out: the test sets up nothing")
    assert.strictEqual(mailbox.get(mailKeyOf(q)), q, "q did not come back: the test sets up nothing")
    // Past a retention after 5 s, not after 7 s: q goes with x.
    assert.deepStrictEqual(mailbox.expire(5_000 + LIMITS.retentionMs + 1).map((mail) => mail.recordKey).sort(), [q.recordKey, x.recordKey].sort())
  })
})

describe("Mailbox.put with a seq (a cancelled copy taken and put back, memory only)", () => {
  it("puts it back at its queuedAt capped at the newest reading: after a clock step back, later than the age it had, never earlier", () => {
    // q queued at 10 s; the clock steps back to 5 s (x dates q 5 s), then reads 8 s (y); q is taken and put back at
    // its place, as WithdrawnCopies.give does: at min(10 s, 8 s), not at the 5 s it had (kept 3 s longer).
    const mailbox = new Mailbox(LIMITS)
    const q = { ...mailOf(1, { sender: "s1", target: "t1", chars: 10 }), queuedAt: 10_000 }
    const x = { ...mailOf(2, { sender: "s2", target: "t2", chars: 10 }), queuedAt: 5_000 }
    const y = { ...mailOf(3, { sender: "s3", target: "t2", chars: 10 }), queuedAt: 8_000 }
    mailbox.put(q)
    mailbox.put(x)
    mailbox.put(y)
    const [taken] = mailbox.take(q.targetKey, undefined, () => true)
    assert.strictEqual(taken?.mail, q, "q was not taken: the test sets up nothing")
    mailbox.put(q, taken?.seq)
    assert.deepStrictEqual(mailbox.expire(5_000 + LIMITS.retentionMs + 1).map((mail) => mail.recordKey), [x.recordKey])
    assert.deepStrictEqual(mailbox.expire(8_000 + LIMITS.retentionMs).map((mail) => mail.recordKey), [])
    assert.deepStrictEqual(mailbox.expire(8_000 + LIMITS.retentionMs + 1).map((mail) => mail.recordKey).sort(), [q.recordKey, y.recordKey].sort())
  })
})
