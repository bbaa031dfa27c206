/**
 * An ask answered by a takeover in the simulation (`expired-after-answer`,
 * ledger/askExpiry.ts): B's client and the broker stop reading B, A asks B,
 * B stops (unread) and starts again — a new client instance that takes B
 * over while the old connection's close waits for a slow write — and
 * answers A's question; the old connection then gives the question back
 * past its deadline. A had its reply: the broker must not tell it the ask
 * expired (helper replyclose: it once did), and the ledger counts that
 * copy, dropped, as answered, not lost in flight (`--strict`). Then the generated op that
 * builds this order (`--answer-takeover`): its own draw stream, a pinned
 * seed, and one seed pinned to reach each of its cases (the run's tally of
 * the op, `SimReport.insertedOps`, says it did, not skipped). Last, the op
 * that builds the mailbox case (`--answer-mailbox`): its draw stream and a
 * pinned seed that reaches it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawAnswerMailbox } from "../../src/testing/simulation/answerMailbox.ts"
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

  it.effect("under --strict the question's copy the old close gave back is counted answered, not lost in flight", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, strictInFlight: true }, answerTakeover, plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.strictEqual(report.messages.answered, 1, trace)
      assert.strictEqual(report.messages.lostInFlight, 0, trace)
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

describe("the AnswerTakeover op reaches its case where it once skipped it (SimReport.insertedOps)", () => {
  const reachedIn = (seed: number, kase: string) =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed, tolerate: KNOWN_ISSUES }, undefined, { answerTakeover: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.insertedOps["answer takeover"], { reached: 1, skipped: 0 }, trace)
      assert.include(trace, `answer takeover: reached its case (${kase}): the broker took T's answer`, trace)
      assert.isTrue(report.ok, trace)
    })

  // Seed 31018: C's ask of B ends 15 ms after the call (its client returns Sent, not waiting for the reply), so
  // the op's one look 20 ms in found no open question and skipped it; it now watches for the question's write
  // step by step, and the broker takes B's answer all the same.
  it.effect("seed 31018 reaches the base case: T's new instance answers, the old close comes past the deadline", () =>
    reachedIn(31018, "the old close past the deadline"))

  // Seed 31016: the broker was down (a crash) at the op's time and the question was not written within 20 ms,
  // so the op used to skip it; it now waits for the broker and both sessions to be connected.
  it.effect("seed 31016 reaches the variant: the old close gives the question back to the new connection, unwritten when T answers", () =>
    reachedIn(31016, "the question given back"))
})

describe("the AnswerMailbox op (--answer-mailbox, simulation/answerMailbox.ts)", () => {
  it("is drawn from a stream of its own: the other ops of a seed stay as they were", () => {
    const without = generateWorkload(35004, 4, {})
    const withIt = generateWorkload(35004, 4, { answerMailbox: true })
    assert.isFalse(without.some((op) => op._tag === "AnswerMailbox"))
    const drawn = drawAnswerMailbox(35004, 4, without.length).map(([, op]) => op)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "AnswerMailbox"), drawn)
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "AnswerMailbox"), without)
  })

  // Seed 35004 (outboxes of 1): D stages 34 replace messages to A and a replace reply to A's question, then is
  // killed inside the reply's window; the question goes back to the mailbox and the reply, waiting for room in
  // A's slowed outbox, is accepted after; D starts again past the deadline. With the mailbox drop of
  // Asks.answeredBy removed (helper replyclose's `askClosed` with the reply; not committed) it fails with
  // expired-after-answer: A read the expired receipt after the reply.
  it.effect("seed 35004 reaches the mailbox case (a staged reply accepted, the question in the mailbox) and the run passes", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 35004, tolerate: KNOWN_ISSUES }, undefined, { answerMailbox: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.insertedOps["answer mailbox"], { reached: 1, skipped: 0 }, trace)
      assert.match(trace, /A ask\d+ \(m\d+\) replied by m\d+ from D "answer-mailbox/, trace)
      assert.notMatch(trace, /A told m\d+ expired/, trace)
      assert.isTrue(report.ok, trace)
    }))
})
