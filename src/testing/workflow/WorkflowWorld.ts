/**
 * The workflow simulation: a parent session with children, and a run of
 * stages with their own children, built from the real modules of
 * `effect-intercom/workflow` over simulated agents, driven by TestClock and
 * one seed. A script (the scripted-scenario DSL) or a random workload moves
 * it; `WorkflowLedger` checks the workflow invariants as it goes and at the
 * end. See docs/testing.md, "Workflow simulation".
 *
 * Time moves like in the bus simulation: every action is a step, forked
 * behind a 1 ms sleep and the clock advanced by 1 ms, so TestClock runs it
 * and everything it wakes; `advance` lets time pass.
 */
import { type Duration, Effect, FiberSet, Layer, Logger, References, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { makeFiberWatch, ownedBy, watchFibers } from "../FiberWatch.ts"
import type { SimChild } from "./foreground.ts"
import { type WorkflowBrokenBuild, type WorkflowFaults, type WorldCore } from "./links.ts"
import { type ChildMessageKind, makeSimParent, type SimParent } from "./parent.ts"
import { makeSimStages, type SimStage, type SimStages } from "./stages.ts"
import { type Destination, WorkflowLedger, type WorkflowViolation } from "./WorkflowLedger.ts"

/**
 * A workflow world: how many children the parent has, how many stages the
 * run has, and, for testing the invariants, a broken build.
 *
 * @since 0.1.0
 */
export interface WorkflowConfig {
  readonly seed: number
  /** The parent's children (c1, c2, …); default 3. */
  readonly children?: number
  /** The run's stages (s1, s2, …, each with its own child w1, w2, …); default 2. */
  readonly stages?: number
  /** A deliberately broken composition (see `WorkflowBrokenBuild`). */
  readonly broken?: WorkflowBrokenBuild | undefined
  /** How long the healed world settles before the final checks; default 30 s. */
  readonly settleMs?: number
}

/**
 * What a workflow run found.
 *
 * @since 0.1.0
 */
export interface WorkflowReport {
  readonly seed: number
  readonly ok: boolean
  readonly violations: ReadonlyArray<WorkflowViolation>
  readonly trace: ReadonlyArray<string>
  /** What the parent's model saw, in order: message labels and `terminal:<run>`. */
  readonly model: ReadonlyArray<string>
  readonly checks: number
  readonly simulatedMs: number
  readonly tally: WorkflowLedger["tally"]
}

/**
 * The scripted-scenario DSL: every method is one step of the world (it runs,
 * and everything it wakes runs, before the method returns). Call it only
 * from the script's own fiber.
 *
 * @since 0.1.0
 */
export interface WorkflowSim {
  readonly ledger: WorkflowLedger
  readonly parent: {
    readonly busy: (busy: boolean) => Effect.Effect<void>
    /** A new runtime generation of the parent (a reload, C-ORD-16). */
    readonly reload: Effect.Effect<void>
    /** The parent asks a child; returns the ask id. */
    readonly ask: (child: string) => Effect.Effect<string>
    /** The parent runs these children as a foreground parallel group, `concurrency` at once (C-ORD-21, C-ORD-22). */
    readonly foregroundGroup: (children: ReadonlyArray<string>, concurrency: number) => Effect.Effect<void>
    /** What the parent's model saw so far. */
    readonly model: () => ReadonlyArray<string>
    /** What waits in the parent's idle queue (labels). */
    readonly queued: Effect.Effect<ReadonlyArray<string>>
  }
  readonly child: (name: string) => {
    readonly send: (kind?: ChildMessageKind) => Effect.Effect<string>
    readonly reply: Effect.Effect<string | undefined>
    readonly foreground: Effect.Effect<void>
    readonly unavailable: (value: boolean) => Effect.Effect<void>
    readonly terminal: (options?: { readonly requestId?: boolean; readonly duplicate?: boolean }) => Effect.Effect<void>
    readonly resume: Effect.Effect<void>
    readonly detached: () => boolean
    readonly state: SimChild
  }
  readonly stage: (id: string) => {
    readonly open: Effect.Effect<void>
    readonly busy: (busy: boolean) => Effect.Effect<void>
    readonly send: (options?: { readonly from?: "peer" | "child" | "notice"; readonly ask?: boolean }) => Effect.Effect<string>
    readonly foreground: Effect.Effect<void>
    readonly reload: Effect.Effect<void>
    readonly refuseInserts: (count: number) => Effect.Effect<void>
    readonly retainedGone: (gone: boolean) => Effect.Effect<void>
    readonly close: Effect.Effect<void>
    readonly lateAsk: (options?: { readonly redeliver?: boolean; readonly companionFirst?: boolean }) => Effect.Effect<string>
    readonly redeliver: (index: number) => Effect.Effect<void>
    readonly state: SimStage
  }
  readonly faults: {
    /** The next `count` detach frames (requests or acks) are lost. */
    readonly dropFrames: (count: number) => Effect.Effect<void>
    /** The next `count` detach frames arrive after the phase timeout. */
    readonly delayFrames: (count: number) => Effect.Effect<void>
    /** The parent's next hand-over is refused after `after` items. */
    readonly refuseAfter: (after: number) => Effect.Effect<void>
  }
  /** Lets simulated time pass. */
  readonly advance: (duration: Duration.Input) => Effect.Effect<void>
  /**
   * Runs `action` as a step of the world, letting time pass until it is done:
   * for scenarios that drive a module directly.
   */
  readonly perform: <A>(action: Effect.Effect<A>) => Effect.Effect<A>
  /** Where a message ended so far. */
  readonly endsOf: (label: string) => ReadonlyArray<Destination>
  /** The parts, for scenarios that drive a module directly. */
  readonly world: { readonly parent: SimParent; readonly stages: SimStages; readonly core: WorldCore }
}

const STEP_MS = 1
const STEP_LIMIT_MS = 15 * 60_000

/** Where the world's log lines go: its ledger's trace, once the ledger exists. */
interface LogSink {
  note: ((line: string) => void) | undefined
}

/** The world's TestClock, and a logger that writes warnings into the trace. */
const environment = (sink: LogSink) =>
  Layer.mergeAll(
    Layer.fresh(TestClock.layer({ warningDelay: "1 hour" })),
    Layer.succeed(References.MinimumLogLevel, "Warn"),
    Logger.layer([
      Logger.make(({ logLevel, message }) => {
        const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
        sink.note?.(`   log ${logLevel}: ${text}`)
      })
    ])
  )

const makeSim = (config: WorkflowConfig, sink: LogSink): Effect.Effect<WorkflowSim & { readonly finish: Effect.Effect<WorkflowReport> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const clock = yield* Effect.clockWith(Effect.succeed)
    const ledger = new WorkflowLedger(() => clock.currentTimeMillisUnsafe())
    sink.note = (line) => ledger.note(line)
    const fibers = yield* FiberSet.make<unknown, unknown>()
    const faults: WorkflowFaults = { dropFrames: 0, delayFrames: 0, refuseAfter: undefined }
    let labels = 0
    const core: WorldCore = {
      ledger,
      fibers,
      faults,
      broken: config.broken,
      nextLabel: (prefix = "m") => `${prefix}${++labels}`
    }
    ledger.note(`workflow simulation seed ${config.seed}${config.broken === undefined ? "" : ` (broken build: ${config.broken})`}`)
    const parent = yield* makeSimParent(core, config.children ?? 3)
    const stages = yield* makeSimStages(core, config.stages ?? 2)

    const advance = (duration: Duration.Input) => TestClock.adjust(duration)
    const step = <A>(action: Effect.Effect<A>): Effect.Effect<A> =>
      Effect.gen(function*() {
        let result: { readonly value: A } | undefined
        yield* FiberSet.run(fibers, Effect.andThen(Effect.sleep(STEP_MS), Effect.map(action, (value) => {
          result = { value }
        })))
        yield* advance(STEP_MS)
        // An action that waits (a retry, a handshake timeout) keeps the clock moving, in 100 ms steps.
        for (let waited = 0; result === undefined && waited < STEP_LIMIT_MS; waited += 100) yield* advance(100)
        if (result === undefined) return yield* Effect.die(new Error(`a workflow step did not finish within ${STEP_LIMIT_MS / 60_000} simulated minutes`))
        return result.value
      })
    const childNamed = (name: string): SimChild => {
      const found = parent.children.find((child) => child.name === name)
      if (found === undefined) throw new RangeError(`No simulated child named ${name}`)
      return found
    }
    const stageNamed = (id: string): SimStage => {
      const found = stages.stages.find((stage) => stage.id === id)
      if (found === undefined) throw new RangeError(`No simulated stage named ${id}`)
      return found
    }
    const note = (line: string) => Effect.sync(() => ledger.note(line))

    const finish = Effect.gen(function*() {
      yield* step(Effect.gen(function*() {
        ledger.note("finish: faults heal, every agent goes idle")
        faults.dropFrames = 0
        faults.delayFrames = 0
        faults.refuseAfter = undefined
        for (const stage of stages.stages) stage.busy = false
        yield* parent.setBusy(false)
      }))
      const settleMs = config.settleMs ?? 30_000
      for (let waited = 0; waited < settleMs; waited += 500) yield* advance(500)
      ledger.finish()
      return {
        seed: config.seed,
        ok: ledger.found.length === 0,
        violations: ledger.found,
        trace: ledger.lines,
        model: ledger.model,
        checks: ledger.checks,
        simulatedMs: clock.currentTimeMillisUnsafe(),
        tally: ledger.tally
      } satisfies WorkflowReport
    })

    return {
      ledger,
      world: { parent, stages, core },
      advance,
      perform: step,
      endsOf: (label) => ledger.endsOf(label),
      parent: {
        busy: (busy) => step(parent.setBusy(busy)),
        reload: step(Effect.gen(function*() {
          const id = yield* parent.slot.renew
          ledger.note(`parent reloads: runtime generation ${id}`)
        })),
        ask: (name) => step(parent.asks(childNamed(name))),
        foregroundGroup: (names, concurrency) => step(parent.foregroundGroup(names.map(childNamed), concurrency)),
        model: () => ledger.model,
        queued: Effect.map(parent.idleQueue.entries, (entries) => entries.map((entry) => entry.payload))
      },
      child: (name) => {
        const child = childNamed(name)
        return {
          state: child,
          send: (kind = "send") => step(parent.childSends(child, kind)),
          reply: step(parent.childReplies(child)),
          foreground: step(parent.slot.attach(child)),
          unavailable: (value) => step(Effect.andThen(parent.slot.setUnavailable(value), note(`${name} is ${value ? "unavailable" : "available"}`))),
          terminal: (options) => step(parent.terminal(child, options)),
          resume: step(Effect.sync(() => parent.resume(child))),
          detached: () => child.detached
        }
      },
      stage: (id) => {
        const stage = stageNamed(id)
        return {
          state: stage,
          open: step(stages.openStage(stage)),
          busy: (busy) =>
            step(Effect.sync(() => {
              stage.busy = busy
              ledger.note(`stage ${id} is ${busy ? "busy" : "idle"}`)
            })),
          send: (options = {}) => step(stages.send(stage, options.from ?? "peer", options.ask ?? false)),
          foreground: step(stage.slot.attach(stage.child)),
          reload: step(stages.reload(stage)),
          refuseInserts: (count) => step(Effect.sync(() => {
            stage.refuseInserts = count
          })),
          retainedGone: (gone) => step(Effect.sync(() => {
            stage.retainedGone = gone
          })),
          close: step(stages.close(stage)),
          lateAsk: (options = {}) => step(stages.lateAsk(stage, options.redeliver ?? false, options.companionFirst ?? false)),
          redeliver: (index) => step(stages.redeliver(stage, index))
        }
      },
      faults: {
        dropFrames: (count) => step(Effect.andThen(Effect.sync(() => {
          faults.dropFrames = count
          ledger.tally.faults++
        }), note(`fault: the next ${count} detach frame(s) are lost`))),
        delayFrames: (count) => step(Effect.andThen(Effect.sync(() => {
          faults.delayFrames = count
          ledger.tally.faults++
        }), note(`fault: the next ${count} detach frame(s) are late`))),
        refuseAfter: (after) => step(Effect.andThen(Effect.sync(() => {
          faults.refuseAfter = after
          ledger.tally.faults++
        }), note(`fault: the parent's next hand-over is refused after ${after} item(s)`)))
      },
      finish
    }
  })

/**
 * Runs a script in a fresh workflow world under its own TestClock, then
 * heals it, lets it settle, makes the final checks and closes it.
 *
 * @example
 * const report = yield* runWorkflowScenario({ seed: 1 }, (sim) =>
 *   Effect.gen(function*() {
 *     yield* sim.parent.busy(true)
 *     yield* sim.child("c1").send()
 *     yield* sim.child("c1").terminal()
 *   }))
 * report.model // ["m1", "terminal:run-c1-1"]
 *
 * @since 0.1.0
 */
export const runWorkflowScenario = <E>(
  config: WorkflowConfig,
  script: (sim: WorkflowSim) => Effect.Effect<void, E>
): Effect.Effect<WorkflowReport, E> =>
  Effect.suspend(() => {
    const sink: LogSink = { note: undefined }
    const watch = makeFiberWatch()
    return Effect.scoped(Effect.gen(function*() {
      const sim = yield* makeSim(config, sink)
      yield* script(sim)
      return yield* sim.finish
    })).pipe(
      ownedBy("workflow"),
      watchFibers(watch),
      Effect.provide(environment(sink)),
      // Closing the world must end every fiber it started.
      Effect.map((report): WorkflowReport => {
        const left = watch.live("workflow")
        if (left === 0) return report
        const leak: WorkflowViolation = {
          kind: "wf-fiber-leak",
          message: `${left} fiber(s) of the workflow world outlived it`,
          at: report.simulatedMs
        }
        return { ...report, ok: false, violations: [...report.violations, leak] }
      })
    )
  })
