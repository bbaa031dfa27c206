/**
 * The workflow parent hosted on the simulated bus (src/testing/workflow/BusParent.ts):
 * the real `makeParentSession` as a bus session's host, its background children
 * sending over the simulated broker with its faults, and C-ORD-25 checked on it;
 * every message the parent accepted reaches its model once, also across the
 * parent's process restarting with a `ParentJournal` (C-DLV-14 for a parent).
 * And seed 63116 under `--strict`: mail written to P's connection that died
 * unread, lost with the memory-mode broker that crashed before P came back,
 * is lost to that crash, not lost in flight (helper simwb).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type BusWorkflowOp, generateBusWorkflowWorkload, runBusWorkflow } from "../../src/testing/workflow/BusParent.ts"
import { checkModel, checkTerminals, makeRecorder } from "../../src/testing/workflow/BusParentModel.ts"
import { busWorkflowSoak } from "../../src/testing/workflow/BusParentSoak.ts"

/** A busy parent; C1 sends twice and a progress update (all accepted), the broker crashes and comes back, then C1's terminal. */
const scripted: ReadonlyArray<BusWorkflowOp> = [
  { _tag: "busy", busy: true, pauseMs: 0 },
  { _tag: "send", child: "C1", delivery: "queue", pauseMs: 0 },
  { _tag: "send", child: "C1", delivery: "steer", pauseMs: 5 },
  { _tag: "progress", child: "C1", pauseMs: 5 },
  { _tag: "send", child: "C2", delivery: "queue", pauseMs: 5 },
  { _tag: "crash", downMs: 500, pauseMs: 50 },
  { _tag: "terminal", child: "C1", pauseMs: 3000 },
  { _tag: "busy", busy: false, pauseMs: 10 }
]

/**
 * A busy parent holds C1's two queued messages and progress update in its idle queue when its process
 * ends; the restarted one (its journal over the same file) gets them back. C1's connection then drops, and
 * it registers again with its grant, which the restarted parent's client restored (issuedGrants).
 */
const restarting: ReadonlyArray<BusWorkflowOp> = [
  { _tag: "busy", busy: true, pauseMs: 0 },
  { _tag: "send", child: "C1", delivery: "queue", pauseMs: 0 },
  { _tag: "send", child: "C1", delivery: "steer", pauseMs: 5 },
  { _tag: "progress", child: "C1", pauseMs: 5 },
  { _tag: "restart", downMs: 500, pauseMs: 50 },
  { _tag: "drop", who: "C1", side: "client", pauseMs: 100 },
  { _tag: "send", child: "C1", delivery: "queue", pauseMs: 3000 },
  { _tag: "terminal", child: "C1", pauseMs: 100 },
  { _tag: "busy", busy: false, pauseMs: 10 }
]

/**
 * A seed sweep's limit. The sweeps are CPU-bound: on the 2-core VM at load 20 (several suites at once, 2026-12-07)
 * two of them took 28 and 40 s and the other two passed 60 s, the limit then; the suite must stay green loaded.
 */
const SWEEP_TIMEOUT_MS = 180_000

describe("bus-hosted workflow parent", () => {
  it.effect("C-ORD-25 over the bus: a busy parent's queued messages and progress update from C1 (its run read from the supervisor channel), accepted before a broker crash, reach its model before C1's terminal", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflow({ seed: 7 }, scripted)
      assert.deepStrictEqual(report.violations, [])
      assert.isTrue(report.ok, report.bus.violations.map((v) => v.message).join("\n"))
      assert.strictEqual(report.accepted, 4)
      assert.strictEqual(report.supervisorChannel, 1)
      assert.strictEqual(report.checked, 3)
      assert.strictEqual(report.terminals, 1)
      assert.isTrue(report.bus.trace.some((line) => line.includes("3 claimed message(s), then the terminal of run-C1-1")))
      assert.isTrue(report.bus.trace.some((line) => line.includes("broker #1 crashed")))
    }))

  it.effect("broken build barrier-without-prelude: the same script is caught by wf-bus-terminal-order", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflow({ seed: 7, broken: "barrier-without-prelude" }, scripted)
      assert.isFalse(report.ok)
      assert.strictEqual(report.violations.length, 3)
      assert.match(report.violations[0] ?? "", /^wf-bus-terminal-order: run-C1-1's message .* surfaced after it$/)
      assert.deepStrictEqual(report.bus.violations, [])
    }))

  it.effect("broken build barrier-without-prelude is caught by the random workloads within 30 seeds", () =>
    Effect.gen(function*() {
      let caught: number | undefined
      for (let seed = 1; seed <= 30 && caught === undefined; seed++) {
        const report = yield* runBusWorkflow({ seed, ops: 20, broken: "barrier-without-prelude" })
        if (report.violations.length > 0) caught = seed
      }
      assert.isDefined(caught)
    }))

  it.effect("a seed replays exactly: the same workload and the same trace", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(generateBusWorkflowWorkload(11, 20), generateBusWorkflowWorkload(11, 20))
      const first = yield* runBusWorkflow({ seed: 11, ops: 20 })
      const second = yield* runBusWorkflow({ seed: 11, ops: 20 })
      assert.deepStrictEqual(first.bus.trace, second.bus.trace)
    }))

  it.effect("found by the soak, seed 250 (memory mode): a supervisorSend whose ack its stalled sender never read is re-sent to a restarted broker and reaches P twice on the wire, once at its host", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflow({ seed: 250 })
      assert.strictEqual(report.bus.durability, "memory")
      // The second copy came from a later broker after a crash: counted as re-sent, not a violation.
      assert.deepStrictEqual(report.bus.violations, [])
      assert.isAbove(report.bus.messages.redelivered, 0)
      // No duplicate-delivery: the session runtime's de-duplication hands it to the workflow parent once.
      assert.deepStrictEqual(report.violations, [])
    }))

  it.effect("C-DLV-14 for a parent: what its idle queue held when its process ended reaches the restarted parent's model once, before C1's terminal; C1 registers again after the restart", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflow({ seed: 7 }, restarting)
      assert.deepStrictEqual(report.violations, [])
      assert.isTrue(report.ok, report.bus.violations.map((v) => v.message).join("\n"))
      assert.strictEqual(report.restarts, 1)
      assert.strictEqual(report.restored, 3)
      // The three from before the restart (each counted once) and the one C1 sent after registering again.
      assert.strictEqual(report.accepted, 4)
      assert.strictEqual(report.checked, 4)
      assert.isTrue(report.bus.trace.some((line) => line.includes("3 message(s) the last process's idle queue held are handed over again")))
      assert.isTrue(report.bus.trace.some((line) => line.includes("4 claimed message(s), then the terminal of run-C1-1")))
    }))

  it.effect("a reload (the parent's generation replaced inside its process) hands what the old generation's idle queue held to the new one, once", () =>
    Effect.gen(function*() {
      const reloading = restarting.map((op): BusWorkflowOp => op._tag === "restart" ? { _tag: "reload", pauseMs: op.pauseMs } : op)
      const report = yield* runBusWorkflow({ seed: 7 }, reloading)
      assert.deepStrictEqual(report.violations, [])
      assert.isTrue(report.ok, report.bus.violations.map((v) => v.message).join("\n"))
      assert.deepStrictEqual([report.restarts, report.reloads, report.restored, report.accepted], [0, 1, 3, 4])
    }))

  it.effect("broken build journal-without-marks: an idle parent's agent takes C1's and C2's messages, the restarted parent gets them again, caught by wf-bus-duplicate (the bus ledger counts a restore, not a copy)", () =>
    Effect.gen(function*() {
      const script: ReadonlyArray<BusWorkflowOp> = [
        { _tag: "send", child: "C1", delivery: "queue", pauseMs: 0 },
        { _tag: "send", child: "C2", delivery: "steer", pauseMs: 5 },
        { _tag: "restart", downMs: 200, pauseMs: 100 },
        { _tag: "busy", busy: false, pauseMs: 100 }
      ]
      const marked = yield* runBusWorkflow({ seed: 7 }, script)
      assert.isTrue(marked.ok, [...marked.violations, ...marked.bus.violations.map((v) => v.message)].join("\n"))
      assert.strictEqual(marked.restored, 0)
      const report = yield* runBusWorkflow({ seed: 7, broken: "journal-without-marks" }, script)
      assert.strictEqual(report.restored, 2)
      assert.deepStrictEqual(report.bus.violations, [])
      assert.strictEqual(report.violations.filter((violation) => violation.startsWith("wf-bus-duplicate: ")).length, 2, report.violations.join("\n"))
    }))

  it.effect("broken build parent-without-journal: the same script is caught by wf-bus-lost", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflow({ seed: 7, broken: "parent-without-journal" }, restarting)
      assert.isFalse(report.ok)
      assert.strictEqual(report.restored, 0)
      assert.isTrue(report.violations.some((violation) => violation.startsWith("wf-bus-lost: ")), report.violations.join("\n"))
    }))

  it.effect("seeds 1–40 with parent restarts and in-process reloads (20 ops): every bus invariant, wf-bus-terminal-order and the model's once-each hold, and restarts hand messages over again", () =>
    Effect.gen(function*() {
      const summary = yield* busWorkflowSoak({ from: 1, seeds: 40, ops: 20, maxFailures: 1, parentRestarts: true })
      const failure = summary.failures[0]
      assert.isUndefined(
        failure,
        failure === undefined ? "" : `seed ${failure.seed}: ${[...failure.violations, ...failure.bus.violations.map((v) => `${v.kind}: ${v.message}`)].join("\n")}`
      )
      assert.isAbove(summary.restarts, 10)
      assert.isAbove(summary.reloads, 10)
      assert.isAbove(summary.restored, 0)
    }), SWEEP_TIMEOUT_MS)

  // P's message is re-sent after a broker crash to P's next client, which is killed before it confirmed it (the
  // session confirms what it handled); the broker then sends it a third time. Not a duplicate on the wire: the
  // first confirmation died with the broker that read it, the second was never written.
  it.effect("seed 1301 with parent restarts: a third copy after a crash and an unconfirmed read is no duplicate-on-wire", () =>
    Effect.gen(function*() {
      const summary = yield* busWorkflowSoak({ from: 1301, seeds: 1, ops: 40, maxFailures: 1, parentRestarts: true })
      const failure = summary.failures[0]
      assert.isUndefined(
        failure,
        failure === undefined ? "" : [...failure.violations, ...failure.bus.violations.map((v) => `${v.kind}: ${v.message}`)].join("\n")
      )
    }))

  // P (granted received-v1) dropped its connection with C1's m8 and C2's m9, m10 written and unread; the memory-mode
  // broker #1 crashed 21 ms later, before P came back, and its custody copy went with it (docs/protocol.md: memory
  // custody covers a connection's death, not the broker's). The ledger called them lost in flight (helper simwb).
  it.effect("seed 63116 --strict (memory mode): mail written to P's dead connection, whose broker crashed before P came back, is lost to the crash, not lost in flight", () =>
    Effect.gen(function*() {
      const report = yield* runBusWorkflow({ seed: 63116, strictInFlight: true })
      const trace = report.bus.trace.join("\n")
      assert.strictEqual(report.bus.durability, "memory")
      assert.match(
        trace,
        /frame\(s\) toward P lost with link #1 \(messages m8, m9, m10\)[\s\S]*broker #1 crashed[\s\S]*P connected: link #11 to broker #2/,
        trace
      )
      assert.deepStrictEqual(report.bus.violations.map((violation) => violation.kind), [], trace)
      assert.deepStrictEqual(report.violations, [], trace)
      assert.strictEqual(report.bus.messages.lostInFlight, 0, trace)
      assert.isAtLeast(report.bus.messages.lostToCrash, 3, trace)
      assert.isTrue(report.ok, trace)
    }), 60_000)

  // `--tolerate` reaches the bus world (sim-cli.ts): seed 2, cut short (10 ops, no settling), ends with sessions
  // not reconnected and views behind, which fail the run unless tolerated; the parent's own checks still judge it.
  it.effect("tolerate: seed 2 judged before the world settled fails on its bus violations, and passes with those kinds tolerated, counted", () =>
    Effect.gen(function*() {
      const plain = yield* runBusWorkflow({ seed: 2, ops: 10, settleMs: 0 })
      const kinds = [...new Set(plain.bus.violations.map((violation) => violation.kind))]
      assert.includeMembers(kinds, ["not-reconnected", "membership-view"])
      assert.isFalse(plain.ok)
      const tolerant = yield* runBusWorkflow({ seed: 2, ops: 10, settleMs: 0, tolerate: kinds })
      assert.deepStrictEqual(tolerant.violations, [])
      assert.strictEqual(tolerant.bus.tolerated, plain.bus.violations.length)
      assert.isTrue(tolerant.ok, tolerant.bus.trace.join("\n"))
    }), 60_000)

  for (const from of [1, 51, 101, 151]) {
    it.effect(`seeds ${from}–${from + 49} (20 ops, broker crashes, drops, stalls): every bus invariant and wf-bus-terminal-order hold`, () =>
      Effect.gen(function*() {
        const summary = yield* busWorkflowSoak({ from, seeds: 50, ops: 20, maxFailures: 1 })
        const failure = summary.failures[0]
        assert.isUndefined(
          failure,
          failure === undefined ? "" : `seed ${failure.seed}: ${[...failure.violations, ...failure.bus.violations.map((v) => `${v.kind}: ${v.message}`)].join("\n")}`
        )
        assert.strictEqual(summary.runs, 50)
        // The sweep exercises the rule: messages were checked against their run's terminal.
        assert.isAbove(summary.checked, 50)
      }), SWEEP_TIMEOUT_MS)
  }
})

describe("bus-hosted workflow parent: the model's checks", () => {
  it("wf-bus-lost and wf-bus-duplicate: every accepted message reaches the model once, unless dropped as finished-run progress", () => {
    const recorder = makeRecorder(["C1"])
    for (const id of ["once", "twice", "never", "dropped"]) recorder.acceptedIds.add(id)
    recorder.dropped.add("dropped")
    recorder.model.push("once", "twice", "twice", "terminal:run-C1-1")
    assert.deepStrictEqual(checkModel(recorder), [
      "wf-bus-duplicate: message twice reached the parent's model 2 times",
      "wf-bus-lost: message never, accepted by the parent's host, never reached its model"
    ])
  })

  it("wf-bus-terminal-lost: every terminal the barrier took reaches the model once", () => {
    const recorder = makeRecorder(["C1", "C2"])
    recorder.handedTerminals.push("run-C1-1", "run-C2-1", "run-C1-2")
    recorder.model.push("terminal:run-C1-1", "m1", "terminal:run-C1-2", "terminal:run-C1-2")
    assert.deepStrictEqual(checkTerminals(recorder), [
      "wf-bus-terminal-lost: run-C2-1's terminal, taken by the parent, never reached its model",
      "wf-bus-duplicate: run-C1-2's terminal reached the parent's model 2 times"
    ])
  })
})
