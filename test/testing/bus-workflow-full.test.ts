/**
 * The whole workflow layer on the simulated bus (src/testing/workflow/BusFull.ts):
 * a parent hosted by makeParentSession with background, foreground and
 * parallel-group children, a stage session hosted by Stages, asks over the
 * broker, and the bus's faults; the workflow ledger's invariants checked on it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runBusWorkflowFull } from "../../src/testing/workflow/BusFull.ts"
import { busFullSoak } from "../../src/testing/workflow/BusFullSoak.ts"
import { BUS_FULL_BROKEN_BUILDS, type BusFullBrokenBuild, type BusFullOp, generateBusFullWorkload } from "../../src/testing/workflow/BusFullWorkload.ts"
import type { WorkflowViolationKind } from "../../src/testing/workflow/WorkflowLedger.ts"

/**
 * Every part at least once: a busy stage closes while its foreground child's
 * message is in the handshake, then takes two late asks (a post-mortem turn,
 * then — its retained conversation gone — a replyError over the bus); a busy
 * parent gets C1's messages and ask, C2's passive message, F1's message through the detach
 * handshake, and F2's, whose commit releases the parallel group (F4 skipped);
 * the broker crashes; C1's terminal claims its two messages; the parent goes
 * idle, and answers C1's ask while the broker is down again.
 */
const scripted: ReadonlyArray<BusFullOp> = [
  { _tag: "stage-open", pauseMs: 0 },
  { _tag: "stage-busy", busy: true, pauseMs: 0 },
  { _tag: "stage-foreground", unavailable: true, pauseMs: 0 },
  { _tag: "busy", busy: true, pauseMs: 10 },
  { _tag: "send", child: "C1", delivery: "queue", pauseMs: 10 },
  { _tag: "send", child: "C1", delivery: "steer", pauseMs: 10 },
  { _tag: "ask", child: "C1", pauseMs: 10 },
  { _tag: "send", child: "C2", delivery: "passive", pauseMs: 10 },
  { _tag: "foreground", unavailable: false, pauseMs: 10 },
  { _tag: "send", child: "F1", delivery: "steer", pauseMs: 10 },
  { _tag: "group", concurrency: 2, pauseMs: 100 },
  { _tag: "send", child: "F2", delivery: "queue", pauseMs: 10 },
  { _tag: "stage-send", from: "child", ask: false, pauseMs: 100 },
  { _tag: "stage-close", pauseMs: 10 },
  { _tag: "stage-send", from: "peer", ask: true, pauseMs: 500 },
  { _tag: "retained-gone", pauseMs: 500 },
  { _tag: "stage-send", from: "peer", ask: true, pauseMs: 10 },
  { _tag: "crash", downMs: 500, pauseMs: 500 },
  { _tag: "terminal", child: "C1", pauseMs: 3000 },
  { _tag: "busy", busy: false, pauseMs: 10 },
  { _tag: "crash", downMs: 1000, pauseMs: 10 },
  { _tag: "answer", pauseMs: 10 }
]

const scriptedConfig = { seed: 3, busySteer: "queue", durability: "durable" } as const

/** Which invariant each broken build breaks. */
const CAUGHT_BY: Readonly<Record<BusFullBrokenBuild, WorkflowViolationKind>> = {
  "barrier-without-prelude": "wf-terminal-order",
  "publish-before-drain": "wf-snapshot-early",
  "close-without-drain": "wf-lost-at-close",
  "unshared-late-ask-claims": "wf-late-ask",
  "passive-dropped": "wf-lost",
  "deliver-twice": "wf-duplicate",
  "launch-skipped": "wf-skipped-launched",
  "journal-without-marks": "wf-duplicate"
}

const failureText = (report: { readonly violations: ReadonlyArray<{ kind: string; message: string }>; readonly bus: { readonly violations: ReadonlyArray<{ kind: string; message: string }> } }) =>
  [...report.violations, ...report.bus.violations].map((v) => `${v.kind}: ${v.message}`).join("\n")

describe("the whole workflow layer on the bus", () => {
  it.effect("scripted: stage close races a foreground handshake, late asks end once (post-mortem, then a replyError over the bus), F1 detaches, one commit releases the group and skips F4, C1's terminal claims its messages across a broker crash, and its ask is answered over the broker across another", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflowFull(scriptedConfig, scripted)
      const trace = report.bus.trace.join("\n")
      assert.isTrue(report.ok, failureText(report))
      assert.strictEqual(report.tally.snapshots, 1)
      assert.strictEqual(report.tally.lateAsks, 2)
      assert.strictEqual(report.tally.postMortems, 1)
      assert.strictEqual(report.tally.replyErrors, 1)
      assert.strictEqual(report.tally.skipped, 1)
      assert.strictEqual(report.tally.passive, 1)
      // F1, then F2 and F3 together.
      assert.strictEqual(report.tally.detached, 3)
      assert.include(trace, "engine: F1 detached; P's subagent call returns")
      assert.include(trace, "F2 Detached, F3 Detached, F4 Skipped")
      assert.include(trace, "2 claimed message(s), then the terminal of run-C1-1")
      assert.include(trace, "broker #1 crashed")
      // The answer is written while broker #2 is down and reaches C1 through broker #3.
      assert.isBelow(trace.indexOf("broker #2 crashed"), trace.indexOf("P reply"))
      assert.isBelow(trace.indexOf("P reply"), trace.indexOf("broker #3 started"))
      assert.match(trace, /Peer ask Stage "Peer question \d+" → ReplyFailed/)
      assert.match(trace, /C1 ask P "C1 question \d+" → replied by m\d+/)
      // The stage's snapshot came after the message its close drained.
      assert.isBelow(trace.indexOf("stage s1 takes"), trace.indexOf("publishes its terminal snapshot"))
    }), 60_000)

  for (const broken of BUS_FULL_BROKEN_BUILDS) {
    it.effect(`broken build ${broken}: the scripted run is caught by ${CAUGHT_BY[broken]}`, () =>
      Effect.gen(function*() {
        const report = yield* runBusWorkflowFull({ ...scriptedConfig, broken }, scripted)
        assert.isFalse(report.ok)
        assert.include(report.violations.map((v) => v.kind), CAUGHT_BY[broken], failureText(report))
      }), 60_000)

    it.effect(`broken build ${broken}: caught by ${CAUGHT_BY[broken]} in the random workloads within 30 seeds`, () =>
      Effect.gen(function*() {
        let caught: number | undefined
        for (let seed = 1; seed <= 30 && caught === undefined; seed++) {
          const report = yield* runBusWorkflowFull({ seed, broken })
          if (report.violations.some((v) => v.kind === CAUGHT_BY[broken])) caught = seed
        }
        assert.isDefined(caught)
      }), 120_000)
  }

  it.effect("a seed replays exactly: the same workload and the same trace", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(generateBusFullWorkload(5, 30), generateBusFullWorkload(5, 30))
      const first = yield* runBusWorkflowFull({ seed: 5, ops: 30 })
      const second = yield* runBusWorkflowFull({ seed: 5, ops: 30 })
      assert.deepStrictEqual(first.bus.trace, second.bus.trace)
    }), 60_000)

  // `--tolerate` reaches the bus world (sim-cli.ts): seed 4, cut short (10 ops, no settling), ends with a session
  // not reconnected and views behind, which fail the run unless tolerated; the workflow ledger still judges it.
  it.effect("tolerate: seed 4 judged before the world settled fails on its bus violations, and passes with those kinds tolerated, counted", () =>
    Effect.gen(function*() {
      const plain = yield* runBusWorkflowFull({ seed: 4, ops: 10, settleMs: 0 })
      const kinds = [...new Set(plain.bus.violations.map((violation) => violation.kind))]
      assert.includeMembers(kinds, ["not-reconnected", "membership-view"])
      assert.isFalse(plain.ok)
      const tolerant = yield* runBusWorkflowFull({ seed: 4, ops: 10, settleMs: 0, tolerate: kinds })
      assert.deepStrictEqual(tolerant.violations, [])
      assert.strictEqual(tolerant.bus.tolerated, plain.bus.violations.length)
      assert.isTrue(tolerant.ok, tolerant.bus.trace.join("\n"))
    }), 60_000)

  for (const from of [1, 11]) {
    it.effect(`seeds ${from}–${from + 9} (40 ops, broker crashes, drops, stalls): every bus invariant and every workflow invariant hold`, () =>
      Effect.gen(function*() {
        const summary = yield* busFullSoak({ from, seeds: 10, maxFailures: 1 })
        const failure = summary.failures[0]
        assert.isUndefined(failure, failure === undefined ? "" : `seed ${failure.seed}: ${failureText(failure)}`)
        assert.strictEqual(summary.runs, 10)
        // The sweep exercises the new parts.
        assert.isAbove(summary.tally.stagesClosed ?? 0, 3)
        assert.isAbove(summary.tally.detached ?? 0, 3)
        assert.isAbove(summary.tally.lateAsks ?? 0, 3)
      }), 120_000)
  }

  it.effect("parent reloads: what a busy parent's idle queue held (C1's message and progress, C2's ask) reaches the reloaded parent's model once, through its ParentJournal", () =>
    Effect.gen(function*() {
      const script: ReadonlyArray<BusFullOp> = [
        { _tag: "stage-open", pauseMs: 0 },
        { _tag: "busy", busy: true, pauseMs: 0 },
        { _tag: "send", child: "C1", delivery: "queue", pauseMs: 10 },
        { _tag: "progress", child: "C1", pauseMs: 10 },
        { _tag: "ask", child: "C2", pauseMs: 10 },
        { _tag: "reload", pauseMs: 100 },
        { _tag: "busy", busy: false, pauseMs: 100 }
      ]
      const report = yield* runBusWorkflowFull({ ...scriptedConfig }, script)
      assert.isTrue(report.ok, failureText(report))
      assert.strictEqual(report.tally.reloads, 1)
      assert.strictEqual(report.tally.messages, 3)
      assert.strictEqual(report.bus.trace.filter((line) => line.includes("again, restored by its host's journal")).length, 3)
    }), 60_000)

  it.effect("broken build journal-without-marks: an idle parent's agent takes two messages, a reload hands them over again, caught by wf-duplicate", () =>
    Effect.gen(function*() {
      const script: ReadonlyArray<BusFullOp> = [
        { _tag: "stage-open", pauseMs: 0 },
        { _tag: "send", child: "C1", delivery: "queue", pauseMs: 10 },
        { _tag: "send", child: "C2", delivery: "steer", pauseMs: 10 },
        { _tag: "reload", pauseMs: 100 },
        { _tag: "busy", busy: false, pauseMs: 100 }
      ]
      assert.isTrue((yield* runBusWorkflowFull({ ...scriptedConfig }, script)).ok)
      const report = yield* runBusWorkflowFull({ ...scriptedConfig, broken: "journal-without-marks" }, script)
      assert.strictEqual(report.violations.filter((violation) => violation.kind === "wf-duplicate").length, 2, failureText(report))
    }), 60_000)

  it.effect("seeds 1–30 with parent reloads (40 ops): every bus invariant and every workflow invariant hold, and reloads happen", () =>
    Effect.gen(function*() {
      const summary = yield* busFullSoak({ from: 1, seeds: 30, maxFailures: 1, parentReloads: true })
      const failure = summary.failures[0]
      assert.isUndefined(failure, failure === undefined ? "" : `seed ${failure.seed}: ${failureText(failure)}`)
      assert.isAbove(summary.tally.reloads ?? 0, 5)
    }), 120_000)
})
