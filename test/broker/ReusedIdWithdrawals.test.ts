/**
 * ReusedIdWithdrawals (src/broker/ReusedIdWithdrawals.ts) against a naive reference: a list of every withdrawal
 * noted, per key the newest MAX_PER_KEY, scanned newest first for one that names a given-back message (`names`).
 * Fingerprints are reduced to their target, which is all `sameFingerprint` needs to tell two apart here. No clock.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { MAX_PER_KEY, names, ReusedIdWithdrawals, type Withdrawn } from "../../src/broker/ReusedIdWithdrawals.ts"
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

describe("ReusedIdWithdrawals", () => {
  it("finds what the naive list of withdrawals finds, for any notes and give-backs", () => {
    fc.assert(fc.property(
      fc.array(fc.tuple(key, withdrawn), { maxLength: 20 }),
      fc.array(fc.record({ key, sessions: fc.uniqueArray(session, { minLength: 1, maxLength: 2 }), target: session, receivedAt: fc.integer({ min: 0, max: 4 }) }), { maxLength: 10 }),
      (notes, givenBack) => {
        const set = new ReusedIdWithdrawals(same)
        const reference: Array<readonly [string, Withdrawn]> = []
        for (const [k, w] of notes) {
          set.note(k, w, 0)
          reference.push([k, w])
        }
        for (const g of givenBack) {
          const given = { sessionKeys: g.sessions, receivedAt: g.receivedAt, fingerprint: () => fingerprint(g.target) }
          const kept = reference.filter(([k]) => k === g.key).map(([, w]) => w).slice(-MAX_PER_KEY)
          const expected = kept.reverse().find((w) => names(w, given, same))?.outcome
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

  it("judges only keys a second send reused", () => {
    const set = new ReusedIdWithdrawals(same)
    assert.isFalse(set.isReused("k1"))
    set.markReused("k1", 10)
    assert.isTrue(set.isReused("k1"))
    set.expire(10)
    assert.isFalse(set.isReused("k1"), "kept past its cutoff")
  })
})
