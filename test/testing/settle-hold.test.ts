/**
 * The `SettleHold` op (`--settle-hold`, simulation/settleHold.ts): an
 * `ask-expiry-v1` asker's deadline comes while the reply to its ask, accepted
 * by the broker, is parked behind the answerer's mail to a slow reader.
 * Scripted, it must reach the broker's held settling answer
 * (`BrokerStats.answersBehindReplies`, summed in `report.paths`) with the
 * ledger's checks holding — `answer-after-timeout` among them, no tolerance
 * needed — and the ask ending as the release lets it; then the generated
 * workloads carry it only with the flag.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { defaultClientTimingRanges } from "../../src/testing/Simulation.ts"
import { drawSettleHold, type SettleHoldDraw } from "../../src/testing/simulation/settleHold.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"

/**
 * A asks B; B's 3 × 9,000 characters to C go first, C's first write takes
 * 3 s; A's deadline comes 1 s after the broker read B's batch (reply parked).
 */
const scripted: SettleHoldDraw = {
  _tag: "SettleHold",
  after: 100,
  asker: 0,
  answerer: 1,
  slow: 2,
  count: 3,
  size: 9000,
  delayMs: 3000,
  lookupMs: 50,
  stallMs: 600,
  leadMs: 1000,
  release: "read",
  eventMs: 0,
  returnMs: 500,
  notSession: []
}

/** A world of four sessions with nothing varied and no pressure: outboxes of 4,096 characters from the flag alone. */
const plain = { vary: false, pressure: false, settleHold: true } as const

describe("the SettleHold op", () => {
  it.effect("reaches a settling answer held behind the parked reply; the asker gets the reply, the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: [] }, [scripted], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.isAtLeast(report.paths.answersBehindReplies, 1, trace)
      // Released once the reply was offered by the answerer's drainer (C read again).
      assert.isAtLeast(report.paths.answersReleasedOffered, 1, trace)
      // A's one ask ended with B's reply, released once C's slow write ended, not in a timeout.
      assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 }, trace)
    }))

  it.effect("the answerer killed while the answer is held: its parked reply is forced out and the answer released with it, the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: [] }, [{ ...scripted, release: "answerer-kill", eventMs: 200 }], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.isAtLeast(report.paths.answersBehindReplies, 1, trace)
      assert.isAtLeast(report.paths.answersReleasedForced, 1, trace)
      assert.strictEqual(report.asks.started, 1, trace)
    }))

  it.effect("the asker's connection dropped while the answer is held: the answer is dropped, the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: [] }, [{ ...scripted, release: "asker-drop", eventMs: 200 }], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      assert.isAtLeast(report.paths.answersBehindReplies, 1, trace)
      assert.isAtLeast(report.paths.answersDropped, 1, trace)
      assert.strictEqual(report.asks.started, 1, trace)
    }))

  it.effect("the asker's connection dropped while the answer is held, with its own timings: it waits for its next connection and gets the reply given back there (seed 24038 --client-timings)", () =>
    Effect.gen(function*() {
      // Seed 24038 of `--settle-hold --client-timings`, shrunk to its settle hold: D asks B (1,702 ms), B's
      // reply m5 is parked behind its mail to D (3 s writes), the broker's reader holds D's settling list
      // unread behind that output, and D's connection drops 654 ms after D's deadline, the list dropped with
      // it. D's client reconnects 170 ms later, within its rejoin grace (6,222 ms), where the broker gives m5
      // back first: the settling round trip, made again there (src/client/SettleRoundTrip.ts), ends the ask
      // with it. It used to end at the drop with ReplyTimeout, m5 reaching D's session late (the ledger's
      // `answer-after-timeout`, `AskRecord.owedWait`).
      const held: SettleHoldDraw = {
        ...scripted,
        after: 0,
        asker: 3,
        answerer: 2,
        slow: 1,
        size: 8316,
        delayMs: 3089,
        lookupMs: 31,
        stallMs: 655,
        leadMs: 1047,
        release: "asker-drop",
        eventMs: 654,
        returnMs: 799
      }
      const report = yield* runWorkload({ seed: 24038, clientTimings: defaultClientTimingRanges, tolerate: [] }, [held], { settleHold: true })
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // Reached: D's settling list dropped unanswered with its connection, D connected again, and only then was its ask answered.
      const dropped = report.trace.findIndex((line) => /the broker dropped \d+ frame\(s\) held on link #\d+ of D at its close \(.*list\)/.test(line))
      const reconnected = report.trace.findIndex((line, index) => index > dropped && line.includes("D connected: link #"))
      const replied = report.trace.findIndex((line) => line.includes("D ask1 (m1) replied by m5 from B"))
      assert.isTrue(dropped >= 0 && reconnected > dropped && replied > reconnected, trace)
      assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 }, trace)
    }))

  it("is in a generated workload only with the flag, drawn from a stream of its own", () => {
    const without = generateWorkload(7, 4)
    const withIt = generateWorkload(7, 4, { settleHold: true })
    assert.isFalse(without.some((op) => op._tag === "SettleHold"))
    const drawn = drawSettleHold(7, 4, without.length).map(([, op]) => op)
    assert.strictEqual(drawn.length, 1)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "SettleHold"), drawn)
    // The other ops are those of the workload without it (and without its custody shape, settle-custody.test.ts), in order.
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "SettleHold" && op._tag !== "SettleCustody"), without)
  })
})
