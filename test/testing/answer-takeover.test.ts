/**
 * An ask answered by a takeover in the simulation (`expired-after-answer`,
 * ledger/askExpiry.ts): B's client and the broker stop reading B, A asks B,
 * B stops (unread) and starts again — a new client instance that takes B
 * over while the old connection's close waits for a slow write — and
 * answers A's question; the old connection then gives the question back
 * past its deadline. A had its reply: the broker must not tell it the ask
 * expired (helper replyclose: it once did). Then the generated op that
 * builds this order (`--answer-takeover`): its own draw stream, and a
 * pinned seed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawAnswerTakeover } from "../../src/testing/simulation/answerTakeover.ts"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { generateWorkload, type Op, runWorkload } from "../../src/testing/Workload.ts"

/** Two sessions (A, B), nothing varied, no pressure, no controls. */
const plain = { vary: false, pressure: false, sessions: 2, controls: false } as const

const answerTakeover: ReadonlyArray<Op> = [
  { _tag: "AnswerTakeover", after: 100, asker: 0, target: 1, timeoutMs: 2600, slowMs: 3400, notSession: [] }
]

const kinds = (report: { readonly violations: ReadonlyArray<{ readonly kind: string }> }) =>
  report.violations.map((violation) => violation.kind)

describe("an ask answered by a takeover while the old connection holds its question is never told expired", () => {
  it.effect("A's ask, answered by B's new instance, its question given back past the deadline by B's old close: A is not told it expired", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, answerTakeover, plain)
      const trace = report.trace.join("\n")
      assert.match(trace, /A ask1 \(m1\) replied by m3 from B/, trace)
      // The slow message, held by the old connection, reaches B's new instance: the old close gave it back.
      assert.match(trace, /B ← m2 from A/, trace)
      assert.notMatch(trace, /A told m1 expired/, trace)
      assert.notMatch(trace, /B ← m1/, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
    }))
})

describe("the AnswerTakeover op (--answer-takeover, simulation/answerTakeover.ts)", () => {
  it("is drawn from a stream of its own: the other ops of a seed stay as they were", () => {
    const without = generateWorkload(29004, 4, {})
    const withIt = generateWorkload(29004, 4, { answerTakeover: true })
    assert.isFalse(without.some((op) => op._tag === "AnswerTakeover"))
    const drawn = drawAnswerTakeover(29004, 4, without.length).map(([, op]) => op)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "AnswerTakeover"), drawn)
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "AnswerTakeover"), without)
  })

  // Seed 29004 of `--answer-takeover`: A's client and the broker stop reading A, B asks A, A stops and
  // starts again and answers; A's old connection gives the question back past its deadline. With helper
  // replyclose's broker change reverted (not committed) it fails with expired-after-answer: B read the
  // expired receipt after the reply.
  it.effect("seed 29004 answers an ask from a takeover, the old copy back past its deadline, and the run passes", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 29004, tolerate: KNOWN_ISSUES }, undefined, { answerTakeover: true })
      const trace = report.trace.join("\n")
      assert.notMatch(trace, /answer takeover: skipped/, trace)
      assert.match(trace, /B ask\d+ \(m\d+\) replied by m\d+ from A "answer-takeover/, trace)
      assert.notMatch(trace, /B told m\d+ expired/, trace)
      assert.isTrue(report.ok, trace)
    }))
})
