/**
 * ReusedIdWithdrawals (src/broker/ReusedIdWithdrawals.ts) against a naive reference: a list of every withdrawal
 * noted, per key the newest MAX_PER_KEY, scanned newest first with plain loops for one that names a given-back
 * message — matched here by its own comparisons, not the module's `names`, so a matching bug there shows. Then
 * which give-backs it judges: keys a second send reused, and none received no later than a withdrawal it dropped
 * (review revmodel probe 1). Fingerprints are reduced to their target, which is all `sameFingerprint` needs to tell
 * two apart here. The clock is a plain number.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { MAX_KEYS, MAX_PER_KEY, names, ReusedIdWithdrawals, type Withdrawn } from "../../src/broker/ReusedIdWithdrawals.ts"
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

describe("ReusedIdWithdrawals", () => {
  it("finds the withdrawal a plain newest-first scan of every note finds (per key the newest MAX_PER_KEY), for any notes and give-backs", () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(key, withdrawn), { maxLength: 20 }),
      fc.array(fc.record({ key, sessions: fc.uniqueArray(session, { minLength: 1, maxLength: 2 }), target: session, receivedAt: fc.integer({ min: 0, max: 4 }) }), { maxLength: 10 }),
      (notes, givenBack) => {
        const set = new ReusedIdWithdrawals(same)
        for (const [k, w] of notes) set.note(k, w, 0)
        for (const g of givenBack) {
          // The reference: walk every note newest first, counting those under the key, and stop at the first of
          // the newest MAX_PER_KEY that is for one of the message's sessions, no earlier than its receipt, and of
          // its target when a fingerprint was noted.
          let expected: Withdrawn["outcome"] | undefined
          let seen = 0
          for (const [k, w] of [...notes].reverse()) {
            if (seen === MAX_PER_KEY || expected !== undefined) break
            if (k !== g.key) continue
            seen++
            let forSession = false
            for (const s of g.sessions) if (s === w.receiverKey) forSession = true
            const ofTarget = w.fingerprint === undefined || w.fingerprint.targetId === g.target
            if (forSession && g.receivedAt <= w.stamp && ofTarget) expected = w.outcome
          }
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

  it("judges only keys a second send reused, until the mark's cutoff", () => {
    const set = new ReusedIdWithdrawals(same)
    assert.isFalse(set.judges("k1", 0))
    set.markReused("k1", 10)
    assert.isTrue(set.judges("k1", 0))
    set.expire(10)
    assert.isFalse(set.judges("k1", 0), "kept past its cutoff")
  })

  it("does not judge a give-back received no later than the newest stamp of a withdrawal pushed out by other keys' (revmodel 1)", () => {
    const set = new ReusedIdWithdrawals(same)
    set.markReused("k1", 0)
    set.note("k1", cancelled("b", 5), 0)
    for (let n = 0; n < MAX_KEYS - 1; n++) set.note(`other ${n}`, cancelled("q", 1), 0)
    assert.isTrue(set.judges("k1", 5), "with k1's withdrawal kept, its give-backs are judged")
    set.note("one more", cancelled("q", 1), 0)
    assert.isUndefined(set.fateOf("k1", { sessionKeys: ["b"], receivedAt: 5, fingerprint: () => fingerprint("b") }), "set-up: k1's withdrawal was pushed out")
    assert.isFalse(set.judges("k1", 5), "received at the dropped withdrawal's stamp")
    assert.isFalse(set.judges("k1", 2), "received before it")
    assert.isTrue(set.judges("k1", 6), "received after it: no dropped withdrawal could name it")
  })

  it("does not judge a give-back received no later than the newest stamp of a withdrawal aged out (revmodel 1)", () => {
    const set = new ReusedIdWithdrawals(same)
    set.note("k1", cancelled("b", 5), 0)
    set.markReused("k1", 10)
    set.expire(0)
    assert.isFalse(set.judges("k1", 5), "received at the aged-out withdrawal's stamp")
    assert.isTrue(set.judges("k1", 6), "received after it")
  })
})
