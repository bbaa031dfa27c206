/**
 * A stale ask in the simulation (`ask-expired-untold`, ledger/askExpiry.ts):
 * B's client stops reading, A asks B, A's wait times out (its session sends
 * `cancel_ask`, after the deadline), then B's connection drops and gives the
 * question back past its deadline. The broker owes A the question's
 * `expired` receipt (review revq Q1: it once counted that `cancel_ask` as a
 * withdrawal and dropped the copy silently). Then the generated op that
 * builds this order (`--stale-ask`): its own draw stream, and a pinned seed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawStaleAsk } from "../../src/testing/simulation/staleAsk.ts"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { generateWorkload, type Op, runWorkload } from "../../src/testing/Workload.ts"

/** Two sessions (A, B), nothing varied, no pressure, no controls. */
const plain = { vary: false, pressure: false, sessions: 2, controls: false } as const

const staleAsk: ReadonlyArray<Op> = [
  { _tag: "StaleAsk", after: 100, asker: 0, target: 1, timeoutMs: 2000, lateMs: 100, side: "client", notSession: [] }
]

const kinds = (report: { readonly violations: ReadonlyArray<{ readonly kind: string }> }) =>
  report.violations.map((violation) => violation.kind)

describe("an ask whose question comes back past its deadline ends with its asker told it expired", () => {
  it.effect("A's timed-out ask, its question given back by B's drop after A's cancel_ask, gets A the expired receipt (intact: no violation)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, staleAsk, plain)
      const trace = report.trace.join("\n")
      assert.match(trace, /A ask1 ended: ReplyTimeout/, trace)
      assert.match(trace, /B's connection drops on the client side/, trace)
      assert.match(trace, /A told m1 expired/, trace)
      assert.notMatch(trace, /B ← m1/, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
    }))
})

describe("the StaleAsk op (--stale-ask, simulation/staleAsk.ts)", () => {
  it("is drawn from a stream of its own: the other ops of a seed stay as they were", () => {
    const without = generateWorkload(28300, 4, {})
    const withIt = generateWorkload(28300, 4, { staleAsk: true })
    assert.isFalse(without.some((op) => op._tag === "StaleAsk"))
    const drawn = drawStaleAsk(28300, 4, without.length).map(([, op]) => op)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "StaleAsk"), drawn)
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "StaleAsk"), without)
  })

  // Seed 28300 of `--stale-ask`: C stops reading, A's ask of C times out, C's connection drops after A's
  // cancel_ask and gives the question back. With revq Q1 put back (every cancel_ask a withdrawal; not
  // committed) it fails with ask-expired-untold, its retry hearing `delivered`.
  it.effect("seed 28300 gives a question back past its deadline, its asker told it expired, and the run passes", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 28300, tolerate: KNOWN_ISSUES }, undefined, { staleAsk: true })
      const trace = report.trace.join("\n")
      assert.notMatch(trace, /stale ask: skipped/, trace)
      assert.match(trace, /A told m\d+ expired: Mailbox delivery expired: the recipient's connection closed before it read this question/, trace)
      assert.isTrue(report.ok, trace)
    }))
})
