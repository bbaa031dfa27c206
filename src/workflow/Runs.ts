/**
 * Workflow runs, the engine-facing service that owns each run's lifetime
 * and its generated groups.
 *
 * A run is a Scope (a child of the service's): everything of the run —
 * its stages' generations and closed-stage routers — lives in it, so
 * ending the run interrupts all of it. The run also owns the generated
 * groups of its `Generated` group decisions: one UUID per key (C-GRP-9),
 * so every item of one parallel set lands in the same group.
 *
 * The run table is plain state of the service, changed only by synchronous
 * code between two yields.
 *
 * @since 0.1.0
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { InvalidWorkflowId, UnknownWorkflowItem } from "./errors.ts"
import type { GroupDecision, GroupOption } from "./groupResolution.ts"

/**
 * What an engine says about a run it starts.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunSpec {
  /** Unique among the service's live runs; not blank. */
  readonly runId: string
  /** The run-level `group` option, the least specific level of C-GRP-10. */
  readonly group?: GroupOption
}

/**
 * A started run.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunHandle {
  readonly runId: string
  readonly group: GroupOption
  /** The run's Scope: its stages and retries live in it and end with it. */
  readonly scope: Scope.Scope
}

/**
 * The `Runs` service (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface RunsService {
  /** Starts a run. `InvalidWorkflowId` if the id is blank or already live. */
  readonly start: (spec: RunSpec) => Effect.Effect<RunHandle, InvalidWorkflowId>
  /** A live run. */
  readonly get: (runId: string) => Effect.Effect<RunHandle, UnknownWorkflowItem>
  /**
   * The group name a decision of this run stands for: the named group, the
   * run's generated group for the key (made on first use, then shared), or
   * `undefined` for `NoGroup`/`HomeGroup` (nothing to inject).
   */
  readonly groupFor: (runId: string, decision: GroupDecision) => Effect.Effect<string | undefined, UnknownWorkflowItem>
  /** Ends a run: closes its Scope, which retires every stage generation and retry of the run. */
  readonly end: (runId: string) => Effect.Effect<void, UnknownWorkflowItem>
}

/**
 * Options of `Runs.make`.
 *
 * @category models
 * @since 0.1.0
 */
export interface RunsOptions {
  /** Makes a generated group's name; default: a random UUID. */
  readonly newGroupId?: Effect.Effect<string> | undefined
}

interface RunRecord {
  readonly handle: RunHandle
  readonly closeable: Scope.Closeable
  readonly generated: Map<string, string>
}

const make = (options: RunsOptions = {}): Effect.Effect<RunsService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const parent = yield* Effect.scope
    const newGroupId = options.newGroupId ?? Effect.sync(() => globalThis.crypto.randomUUID())
    const runs = new Map<string, RunRecord>()

    const find = (runId: string): Effect.Effect<RunRecord, UnknownWorkflowItem> =>
      Effect.suspend(() => {
        const run = runs.get(runId)
        return run === undefined ? Effect.fail(new UnknownWorkflowItem({ kind: "run", id: runId })) : Effect.succeed(run)
      })

    return {
      start: (spec) =>
        Effect.gen(function*() {
          const runId = spec.runId.trim()
          if (runId === "") return yield* new InvalidWorkflowId({ kind: "run", id: spec.runId, reason: "it is blank" })
          if (runs.has(runId)) return yield* new InvalidWorkflowId({ kind: "run", id: runId, reason: "a run with this id is live" })
          const closeable = Scope.forkUnsafe(parent)
          const handle: RunHandle = { runId, group: spec.group, scope: closeable }
          runs.set(runId, { handle, closeable, generated: new Map() })
          return handle
        }),
      get: (runId) => Effect.map(find(runId), (run) => run.handle),
      groupFor: (runId, decision) =>
        Effect.flatMap(find(runId), (run): Effect.Effect<string | undefined> => {
          switch (decision._tag) {
            case "NoGroup":
            case "HomeGroup":
              return Effect.succeed(undefined)
            case "Named":
              return Effect.succeed(decision.group)
            case "Generated": {
              const known = run.generated.get(decision.key)
              if (known !== undefined) return Effect.succeed(known)
              return Effect.map(newGroupId, (fresh) => {
                // Another caller may have made one while this one was being made: the first stays.
                const first = run.generated.get(decision.key)
                if (first !== undefined) return first
                run.generated.set(decision.key, fresh)
                return fresh
              })
            }
          }
        }),
      end: (runId) =>
        Effect.flatMap(find(runId), (run) => {
          runs.delete(runId)
          return Scope.close(run.closeable, Exit.void)
        })
    }
  })

/**
 * Workflow runs (see the module header). `Runs.make` builds one in the
 * current Scope (closing it ends every run); `Runs.layer` holds one.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Runs } from "effect-intercom/workflow"
 *
 * const program = Effect.gen(function*() {
 *   const runs = yield* Runs
 *   yield* runs.start({ runId: "run-1", group: "auto" })
 *   const group = yield* runs.groupFor("run-1", { _tag: "Generated", key: "parallel-1" }) // a UUID, shared by the set
 *   yield* runs.end("run-1")
 * })
 * program.pipe(Effect.provide(Runs.layer()), Effect.runPromise)
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class Runs extends Context.Service<Runs, RunsService>()("effect-intercom/workflow/Runs") {
  /** Builds the service in the current Scope. */
  static readonly make: (options?: RunsOptions) => Effect.Effect<RunsService, never, Scope.Scope> = make
  /** A Layer holding one `Runs` for the Layer's lifetime. */
  static readonly layer = (options?: RunsOptions): Layer.Layer<Runs> => Layer.effect(Runs, make(options))
}
