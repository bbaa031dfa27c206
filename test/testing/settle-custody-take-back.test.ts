/**
 * The `SettleCustody` op's take-back variant (`SettleCustodyDraw.takeBack`,
 * simulation/settleCustody.ts, review settle4): D's reply to A's ask waits
 * on A's old connection, never confirmed, when another instance takes A's
 * session over and A's own client takes it back before that connection's
 * close; A's deadline comes meanwhile. The broker must hold A's settling
 * answer until the old close gives the reply back
 * (`BrokerStats.custodyAwaitedReplies`, summed in `report.paths`), and the
 * ledger's checks hold — `answer-after-timeout` among them. Scripted, and
 * in two pinned seeds of `--settle-hold` (one of each way the reply waits),
 * each asserting the broker got there, so it cannot silently stop doing so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawSettleCustody, type SettleCustodyDraw } from "../../src/testing/simulation/settleCustody.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"

/** A (0) asks D (1); 300 ms later another instance takes A over and A's client takes it back; A's deadline at 1.5 s. */
const scripted: SettleCustodyDraw = {
  _tag: "SettleCustody",
  after: 100,
  asker: 0,
  answerer: 1,
  count: 1,
  delayMs: 4500,
  stallMs: 4000,
  timeoutMs: 1500,
  closeMs: 0,
  close: "stop",
  returnMs: 0,
  notSession: [],
  takeBack: { written: "custody", takeoverMs: 300 }
}

/** A world of four sessions with nothing varied and no pressure. */
const plain = { vary: false, pressure: false, settleHold: true } as const

describe("the SettleCustody op's take-back variant", () => {
  for (const written of ["custody", "write"] as const) {
    it.effect(`the reply ${written === "custody" ? "written to" : "in a slow write to"} A's old connection: the settling answer waits for that close, the ledger's checks hold`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed: 1, tolerate: [] }, [{ ...scripted, takeBack: { written, takeoverMs: 300 } }], plain)
        const trace = report.trace.join("\n")
        assert.deepStrictEqual(report.violations, [], trace)
        assert.isAtLeast(report.paths.custodyHoldsTaken, 1, trace)
        assert.isAtLeast(report.paths.custodyHoldsCarried, 1, trace)
        assert.isAtLeast(report.paths.custodyAwaitedReplies, 1, trace)
        assert.isAtLeast(report.paths.answersReleasedCustody, 1, trace)
        assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 }, trace)
      }))
  }

  // Seeds of `--settle-hold` whose take-back variant reached the case (review settle4: without its fix, each
  // failed with answer-after-timeout).
  for (const [seed, written] of [[23015, "custody"], [23006, "write"]] as const) {
    it.effect(`seed ${seed} (the reply ${written === "custody" ? "written" : "in a slow write"}): the settling answer waited for the old close, the ledger's checks hold`, () =>
      Effect.gen(function*() {
        const op = generateWorkload(seed, 4, { settleHold: true }).find((each) => each._tag === "SettleCustody")
        assert.deepStrictEqual(op?._tag === "SettleCustody" ? op.takeBack?.written : undefined, written, "the seed no longer draws the variant")
        const report = yield* runWorkload({ seed, tolerate: [] }, undefined, { settleHold: true })
        const trace = report.trace.join("\n")
        assert.deepStrictEqual(report.violations, [], trace)
        assert.isAtLeast(report.paths.custodyAwaitedReplies, 1, trace)
      }))
  }

  // Seed 16843 of `--settle-hold --delivery`, shrunk to its two ops: D's broker-side writes are slow (133 ms each)
  // from before the ask, so D's client has not read the ask's acknowledgement when it stops reading, and C's reply
  // is still in the rest of D's outbox, not in its slow write, at the other instance's takeover: it goes to that
  // instance (a base client: the write is its delivery), and D's client, back on a new connection, sends its ask
  // again. The broker routes a reply to whoever holds the session; it now tells D's client so
  // (`reply-elsewhere-v1`, AnsweredAsks.ts), and the ask ends AskAnsweredElsewhere rather than wait out its
  // timeout (before, it timed out, and the ledger excused the reply: `handedElsewhere`).
  const seed16843 = [
    { _tag: "DelayWrites", after: 0, session: 3, side: "broker", delayMs: 133, forMs: 7302 },
    {
      _tag: "SettleCustody",
      after: 0,
      asker: 3,
      answerer: 2,
      count: 2,
      delayMs: 4416,
      timeoutMs: 1356,
      closeMs: 376,
      stallMs: 3988,
      close: "stop",
      returnMs: 1875,
      notSession: [],
      takeBack: { written: "write", takeoverMs: 274 }
    }
  ] as const
  const endedElsewhere = /D ask\d+ ended: AskAnsweredElsewhere/
  const handedToOther = /ask\d+ of D ended AskAnsweredElsewhere: m\d+ went for good to D\/own\d+/

  it.effect("seed 16843 shrunk: the reply went to the other instance, and D's resent ask ends AskAnsweredElsewhere, not in a timeout", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 16843, tolerate: [] }, seed16843, { delivery: true, settleHold: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.match(trace, /D ← m\d+ from C \(own-connection\) "settled 2"/)
      assert.match(trace, endedElsewhere)
      assert.match(trace, handedToOther)
      assert.strictEqual(report.asks.timedOut, 0, trace)
      // Counted as answered elsewhere, not folded into the failures.
      assert.strictEqual(report.asks.answeredElsewhere, 1, trace)
      assert.strictEqual(report.asks.failed, 0, trace)
    }))

  it.effect("seed 16843 of --settle-hold --delivery: the reply went to the other instance, D's ask ends AskAnsweredElsewhere, the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 16843, tolerate: [] }, undefined, { delivery: true, settleHold: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.match(trace, endedElsewhere)
      assert.match(trace, handedToOther)
    }))

  it("is drawn in about half the seeds, from a stream of its own, with A's deadline after the takeover", () => {
    const drawn = Array.from({ length: 200 }, (_, seed) => drawSettleCustody(seed, 4, 40)[0]![1])
    const variants = drawn.filter((op) => op.takeBack !== undefined)
    assert.isAbove(variants.length, 60)
    assert.isBelow(variants.length, 140)
    for (const op of variants) {
      const takeoverMs = op.takeBack?.takeoverMs ?? 0
      assert.isAtLeast(op.timeoutMs, takeoverMs + 900)
      assert.isAtMost(op.timeoutMs, takeoverMs + 1700)
    }
  })
})
