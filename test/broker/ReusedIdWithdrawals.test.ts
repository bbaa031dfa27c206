/**
 * ReusedIdWithdrawals (src/broker/ReusedIdWithdrawals.ts) against a naive reference: a list of every withdrawal
 * noted, scanned newest first with plain loops for one that names a given-back message under a reused key —
 * matched here by its own comparisons, not the module's `names`, so a matching bug there shows; withdrawals noted
 * before the key's reuse count as those after. Then which give-backs it judges, that no bound drops a reused key's
 * withdrawals, and which sends it refuses instead (`mayRefuse`, `refusesReuse`; review revmodel probes 1, 2, 4).
 * Fingerprints are reduced to their target, which is all `sameFingerprint` needs to tell two apart here. The clock
 * is a plain number.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { KEPT_MS, MAX_KEYS, MAX_PER_KEY, names, ReusedIdWithdrawals, type Withdrawn } from "../../src/broker/ReusedIdWithdrawals.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import type { Fingerprint } from "../../src/store/records.ts"

const fingerprint = (targetId: string): Fingerprint => ({
  targetId,
  textLength: 1,
  textHash: 1,
  attachmentsLength: 0,
  attachmentsHash: 0,
  replyTo: undefined,
  expectsReply: undefined,
  supersedes: undefined,
  retryOf: undefined,
  replyErrorLength: -1,
  replyErrorHash: 0
})
const same = (a: Fingerprint, b: Fingerprint): boolean => a.targetId === b.targetId
const session = fc.constantFrom("b", "y", "z")
const key = fc.constantFrom("k1", "k2")
const withdrawn = fc.record({
  receiverKey: session,
  fingerprint: fc.option(session.map(fingerprint), { nil: undefined }),
  stamp: fc.integer({ min: 0, max: 4 }),
  cancelled: fc.boolean()
}).map(({ cancelled, ...rest }): Withdrawn => ({
  ...rest,
  outcome: { ok: false, code: cancelled ? DeliveryCode.DeliveryCancelled : DeliveryCode.DeliverySuperseded, reason: "r", retryable: false }
}))

/** A cancel of the message for `receiverKey`, with no fingerprint known, at `stamp`. */
const cancelled = (receiverKey: string, stamp: number): Withdrawn => ({
  receiverKey,
  fingerprint: undefined,
  stamp,
  outcome: { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "r", retryable: false }
})

/** A give-back of a message for `session` of target `session`, received at `receivedAt`. */
const givenBack = (session: string, receivedAt: number) => ({ sessionKeys: [session], receivedAt, fingerprint: () => fingerprint(session) })

describe("ReusedIdWithdrawals", () => {
  it("finds under a reused key the withdrawal a plain newest-first scan of every note finds, for any notes, reuses and give-backs", () => {
    fc.assert(fc.property(
      // Each step notes a withdrawal under a key, or marks the key reused.
      fc.array(fc.oneof(fc.tuple(key, withdrawn), key), { maxLength: 24 }),
      fc.array(fc.record({ key, sessions: fc.uniqueArray(session, { minLength: 1, maxLength: 2 }), target: session, receivedAt: fc.integer({ min: 0, max: 4 }) }), { maxLength: 10 }),
      (steps, givenBacks) => {
        const set = new ReusedIdWithdrawals(same)
        const notes: Array<[string, Withdrawn]> = []
        const reused = new Set<string>()
        for (const step of steps) {
          if (typeof step === "string") {
            set.markReused("s", step, 0)
            reused.add(step)
          } else {
            set.note(step[0], step[1], 0)
            notes.push(step)
          }
        }
        for (const g of givenBacks) {
          // The reference: under a reused key, walk every note newest first and stop at the first that is for one
          // of the message's sessions, no earlier than its receipt, and of its target when a fingerprint was noted.
          let expected: Withdrawn["outcome"] | undefined
          for (const [k, w] of [...notes].reverse()) {
            if (!reused.has(g.key) || expected !== undefined) break
            if (k !== g.key) continue
            let forSession = false
            for (const s of g.sessions) if (s === w.receiverKey) forSession = true
            const ofTarget = w.fingerprint === undefined || w.fingerprint.targetId === g.target
            if (forSession && g.receivedAt <= w.stamp && ofTarget) expected = w.outcome
          }
          assert.strictEqual(set.judges(g.key), reused.has(g.key))
          const given = { sessionKeys: g.sessions, receivedAt: g.receivedAt, fingerprint: () => fingerprint(g.target) }
          assert.deepStrictEqual(set.fateOf(g.key, given), expected)
        }
      }
    ), { seed: 7, numRuns: 500 })
  })

  it("names a message only for its session, received no later than the withdrawal, and of its fingerprint when one is known", () => {
    const w: Withdrawn = { receiverKey: "b", fingerprint: fingerprint("b"), stamp: 2, outcome: { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "r", retryable: false } }
    const given = (sessionKeys: ReadonlyArray<string>, receivedAt: number, target: string) => ({ sessionKeys, receivedAt, fingerprint: () => fingerprint(target) })
    assert.isTrue(names(w, given(["b"], 2, "b"), same))
    assert.isFalse(names(w, given(["y"], 2, "b"), same), "another session's message")
    assert.isFalse(names(w, given(["b"], 3, "b"), same), "received after the withdrawal")
    assert.isFalse(names(w, given(["b"], 1, "y"), same), "another fingerprint")
    assert.isTrue(names({ ...w, fingerprint: undefined }, given(["y", "b"], 1, "y"), same), "no fingerprint known: the session and stamp tell")
  })

  it("judges only keys a second send reused, until a day after their last reuse or withdrawal, dropping their withdrawals with them", () => {
    const set = new ReusedIdWithdrawals(same)
    assert.isFalse(set.judges("k1"))
    set.markReused("s", "k1", 10)
    set.note("k1", cancelled("b", 5), 20)
    assert.isTrue(set.judges("k1"))
    set.expire(10)
    assert.isTrue(set.judges("k1"), "its withdrawal at 20 keeps it")
    set.expire(20)
    assert.isFalse(set.judges("k1"), "kept past its cutoff")
    assert.isUndefined(set.fateOf("k1", givenBack("b", 5)), "its withdrawal kept without its mark")
  })

  it("keeps a reused key's first withdrawal past MAX_PER_KEY more under it (revmodel 2)", () => {
    const set = new ReusedIdWithdrawals(same)
    set.note("k1", cancelled("b", 1), 0)
    set.markReused("s", "k1", 0)
    for (let n = 0; n < MAX_PER_KEY; n++) set.note("k1", cancelled("z", 2 + n), 0)
    assert.strictEqual(set.fateOf("k1", givenBack("b", 1))?.ok, false, "b's message, withdrawn first, found live")
    assert.isUndefined(set.fateOf("k1", givenBack("y", 1)), "another session's message found withdrawn")
  })

  it("keeps a reused key and its withdrawal past MAX_KEYS other keys' withdrawals and reuses (revmodel 1, 4)", () => {
    const set = new ReusedIdWithdrawals(same)
    set.markReused("s", "k1", 0)
    set.note("k1", cancelled("b", 5), 0)
    for (let n = 0; n < MAX_KEYS; n++) set.note(`withdrawn ${n}`, cancelled("q", 1), 0)
    for (let n = 0; n < MAX_KEYS; n++) set.markReused("s", `reused ${n}`, 0)
    assert.isTrue(set.judges("k1"), "k1's reuse mark pushed out")
    assert.strictEqual(set.fateOf("k1", givenBack("b", 5))?.ok, false, "k1's withdrawal pushed out")
  })

  it("refuses every send under a reused key with MAX_PER_KEY withdrawals noted, and no other, until they expire", () => {
    const set = new ReusedIdWithdrawals(same)
    const yes = () => true
    set.markReused("s", "k1", 0)
    for (let n = 0; n < MAX_PER_KEY - 1; n++) set.note("k1", cancelled("z", n), 0)
    assert.isFalse(set.mayRefuse(0), "refused below the bound")
    set.note("k1", cancelled("z", 9), 0)
    assert.isTrue(set.mayRefuse(0))
    assert.isTrue(set.refusesReuse("s", "k1", 0, yes, yes), "a reuse at the bound")
    assert.isTrue(set.refusesReuse("s", "k1", 0, () => false, yes), "a send after the table forgot the id, under a key still judged")
    assert.isFalse(set.refusesReuse("s", "k2", 0, yes, yes), "another key's reuse")
    set.expire(0)
    assert.isFalse(set.mayRefuse(1), "still refusing once the key expired")
  })

  it("refuses a sender's new reuse once MAX_KEYS of its own keys are reused, but not another sender's, nor a send that is no reuse nor under a key already reused", () => {
    const set = new ReusedIdWithdrawals(same)
    for (let n = 0; n < MAX_KEYS - 1; n++) set.markReused("s", `reused ${n}`, 0)
    set.markReused("other", "o1", 0)
    assert.isFalse(set.mayRefuse(0))
    set.markReused("s", "k1", 0)
    assert.isTrue(set.mayRefuse(0))
    assert.isTrue(set.refusesReuse("s", "k2", 0, () => true, () => false), "a new reuse")
    assert.isFalse(set.refusesReuse("other", "o2", 0, () => true, () => false), "another sender's new reuse (revnotes8 D1)")
    assert.isFalse(set.refusesReuse("s", "k2", 0, () => false, () => false), "a send under an id the table does not hold")
    assert.isFalse(set.refusesReuse("s", "k1", 0, () => true, () => false), "a reuse of a key kept")
    assert.strictEqual(set.reusedIds, MAX_KEYS + 1)
    set.expire(0)
    assert.isFalse(set.mayRefuse(1), "still refusing once the sender's keys expired")
    assert.strictEqual(set.reusedIds, 0)
  })

  it("refuses, for a day, a reuse of a key whose withdrawal the table holds after other keys' pushed its note out", () => {
    const set = new ReusedIdWithdrawals(same)
    const yes = () => true
    set.note("k1", cancelled("b", 1), 0)
    for (let n = 0; n < MAX_KEYS - 1; n++) set.note(`withdrawn ${n}`, cancelled("q", 1), 0)
    assert.isFalse(set.mayRefuse(0), "refusing with every note kept")
    set.note("one more", cancelled("q", 1), 5)
    assert.isTrue(set.mayRefuse(5))
    assert.isTrue(set.refusesReuse("s", "k1", 5, yes, yes), "k1's reuse, its withdrawal on the table and its note gone")
    assert.isFalse(set.refusesReuse("s", "k1", 5, yes, () => false), "k1's reuse with no withdrawal on the table")
    assert.isFalse(set.refusesReuse("s", "one more", 5, yes, yes), "a reuse of a key whose note is kept")
    assert.isFalse(set.mayRefuse(5 + KEPT_MS), "refusing past a day")
  })
})
