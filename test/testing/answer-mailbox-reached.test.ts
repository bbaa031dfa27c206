/**
 * The AnswerMailbox op (`--answer-mailbox`, simulation/answerMailbox.ts) counts "reached" on T's own
 * reply (still staged just after T's close, by the ledger's record of it), never on the broker's count
 * of every sender's staged messages: another session's staged `replace` message must not turn a run
 * in which nothing of T's was staged into a reached one (review revah AH1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { type Op, runWorkload } from "../../src/testing/Workload.ts"

// Seed 37000's world: A B C D. T = B (1), A = D (3); slowMs 1, so D's outbox drains at once: B's reply,
// handed on at B's close, is written to D at once (nothing of B's still waits just after the close).
const mailbox: Op = {
  _tag: "AnswerMailbox", after: 0, asker: 3, target: 1, timeoutMs: 6000, slowMs: 1, backAfterMs: 500, notSession: []
}
// C's client writes are slowed, so its one replace send to A reaches the broker inside the op and is still
// staged (its own 1.5 s window) when B is killed: nothing to do with B's reply.
const unrelated: ReadonlyArray<Op> = [
  { _tag: "DelayWrites", after: 0, session: 2, side: "client", delayMs: 700, forMs: 1000 },
  { _tag: "DeliverySend", after: 0, from: 2, to: 0, mode: "replace", thread: 7, count: 1, gapMs: 0 }
]

const tallyOf = (ops: ReadonlyArray<Op>) =>
  runWorkload({ seed: 37000, tolerate: KNOWN_ISSUES }, ops, { answerMailbox: true }).pipe(
    Effect.map((report) => ({ tally: report.insertedOps["answer mailbox"], trace: report.trace.join("\n") }))
  )

describe("the AnswerMailbox op's reached count (simulation/answerMailbox.ts)", () => {
  it.effect("another session's staged replace message does not turn a run that built nothing into reached", () =>
    Effect.gen(function*() {
      const alone = yield* tallyOf([mailbox])
      const beside = yield* tallyOf([...unrelated, mailbox])
      assert.include(beside.trace, "C send A", beside.trace)
      assert.deepStrictEqual(alone.tally, { reached: 0, skipped: 1 }, alone.trace)
      assert.deepStrictEqual(beside.tally, alone.tally, beside.trace)
    }))
})
