/**
 * Workflow stages, the engine-facing service that routes every entry for a
 * stage to the right place for its moment (C-ORD-1…9, C-ORD-34, C-ORD-35).
 *
 * Per stage it owns: the resolved group (C-GRP-8…11), a generation slot
 * (one `StageAdmission` actor per generation, each in its own Scope), and
 * the stage's closed-stage router. `deliver` sends an entry to the current
 * generation while the stage is open; once the generation answers `Closed`
 * (or the stage has completed) the entry goes to the closed-stage router,
 * which never reopens the stage. The router reads the ports of the stage's
 * latest generation when it routes, so a post-mortem turn runs in the
 * conversation of the generation that completed (C-ORD-7). `open` on a stage
 * that is open starts a new generation, retiring the previous one and
 * everything in flight in it (its waiting non-asks fail `StageRetired`, to
 * be retried into the new generation). A completed stage cannot be opened
 * again.
 *
 * The stage table is plain state of the service, changed only by
 * synchronous code between two yields. Every stage lives in its run's
 * Scope (`Runs`), so ending the run retires it. The stage is then kept as
 * ended (the newest 1000 ended stages are remembered): an entry for it goes
 * to its closed-stage router, whose Scope has closed, so it is handled once
 * — a late ask gets the C-ORD-8 replyError, anything else one attempt at the
 * parent chat, then it is given up with a warning — and never fails for a
 * retry that could not end. An older ended stage is forgotten but for its
 * id (one string per ended stage, the newest 100,000 of them: `StagesSettings`):
 * an entry for it fails with `StageForgotten`, which `stageHostDeliver` gives up with a
 * warning (and an ask's replyError, when it has that port) instead of
 * failing for a retry that could never succeed. A stage id never opened
 * fails with `UnknownWorkflowItem`.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer, Scope } from "effect"
import {
  type ClosedOutcome,
  type ClosedStage,
  makeClosedStage,
  NO_CONVERSATION_REASON,
  type ParentChat,
  type RetainedConversation
} from "./ClosedStage.ts"
import {
  InvalidWorkflowId,
  PostMortemUnavailable,
  type StageAdmissionError,
  StageForgotten,
  StageRetired,
  UnknownWorkflowItem
} from "./errors.ts"
import { makeGenerationSlot, type GenerationSlot } from "./GenerationScope.ts"
import { type GroupDecision, resolveStageGroup, type StageGroupLevels, type ToolAccess } from "./groupResolution.ts"
import { DEFAULT_CLAIM_MEMORY, type LateAskClaims, makeLateAskClaims } from "./LateAskClaims.ts"
import { Runs } from "./Runs.ts"
import {
  type Admission,
  admissionFailed,
  type ForegroundHandoff,
  makeStageAdmission,
  type ReplyErrorPort,
  type StageAdmission,
  type StageSession
} from "./StageAdmission.ts"
import type { StageEntry } from "./StageEntry.ts"

/**
 * What an engine says about a stage it opens.
 *
 * @category models
 * @since 0.1.0
 */
export interface StageSpec {
  readonly runId: string
  /** Unique within the service; not blank. */
  readonly stageId: string
  /** The parallel set the stage is an item of, if any (C-GRP-9). */
  readonly parallelSetId?: string | undefined
  /** The stage's `group` options below the run level (C-GRP-10); the run's comes from `Runs`. */
  readonly groups?: Omit<StageGroupLevels, "run"> | undefined
  /** The stage's tools; only an intercom-capable stage gets a group (C-GRP-11). Default: every tool. */
  readonly tools?: ToolAccess | undefined
}

/**
 * The ports an engine supplies for one stage.
 *
 * @category ports
 * @since 0.1.0
 */
export interface StagePorts {
  /** The stage session of the generation being opened. */
  readonly session: StageSession
  /** The foreground handoff of that generation. */
  readonly handoff: ForegroundHandoff
  /** Answers a failed ask with a correlated replyError. */
  readonly replyError: ReplyErrorPort
  /** The parent/main chat: where notifications go after close (C-ORD-6). */
  readonly parent: ParentChat
  /** The retained conversation for post-mortem turns (C-ORD-7); absent when none is kept. */
  readonly retained?: RetainedConversation | undefined
}

/**
 * An open stage generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface OpenStage {
  readonly runId: string
  readonly stageId: string
  /** The group to start the stage session in; `undefined`: inject none (no intercom, or its home group). */
  readonly group: string | undefined
  readonly decision: GroupDecision
  /** 1 for the stage's first generation, then 2, 3, … */
  readonly generation: number
  readonly admission: StageAdmission
}

/**
 * Where a delivered entry went: into the open stage (`Stage`, with the
 * admission's outcome) or, after close, through the closed-stage router
 * (`AfterClose`).
 *
 * @category models
 * @since 0.1.0
 */
export type StageDelivery =
  | { readonly _tag: "Stage"; readonly admission: Exclude<Admission, { readonly _tag: "Closed" }> }
  | { readonly _tag: "AfterClose"; readonly outcome: ClosedOutcome }

/**
 * The `Stages` service (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export interface StagesService {
  /** Opens a stage, or a new generation of an open one. A completed stage cannot be reopened. */
  readonly open: (spec: StageSpec, ports: StagePorts) => Effect.Effect<OpenStage, InvalidWorkflowId | UnknownWorkflowItem>
  /**
   * Routes an entry for the stage. Fails with `StageAdmissionError` only for
   * a non-ask the open stage could not admit (release it for retry), and
   * with `StageForgotten` for a stage whose run ended so long ago that it is
   * no longer kept (nothing can take the entry: give it up), and with
   * `UnknownWorkflowItem` for a stage never opened. An entry for a stage whose run has ended is
   * handled once by its closed-stage router (see the module header).
   */
  readonly deliver: (
    stageId: string,
    entry: StageEntry
  ) => Effect.Effect<StageDelivery, StageAdmissionError | StageForgotten | UnknownWorkflowItem>
  /**
   * Closes the stage: drains what it admitted (C-ORD-2), then runs
   * `publish` (the terminal snapshot), then retires the generation; later
   * entries go to the closed-stage router. No post-mortem turn runs until
   * `publish` has ended: a late ask that comes meanwhile waits for it (C-ORD-7).
   */
  readonly close: <A, E, R>(
    stageId: string,
    publish: Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | StageRetired | UnknownWorkflowItem, R>
  /** The late-ask claims every stage of this service shares (C-ORD-9). */
  readonly claims: LateAskClaims
}

interface StageRecord {
  readonly runId: string
  readonly slot: GenerationSlot
  readonly closed: ClosedStage
  /**
   * The latest generation's ports: for entries that arrive while no
   * generation is open, and for the closed-stage router, which reads them
   * when it routes (C-ORD-7: the completed generation's conversation).
   */
  ports: StagePorts
  current: OpenStage | undefined
  completed: boolean
  /** The run ended: the stage is kept only so that late entries are handled once. */
  ended: boolean
}

/**
 * How much of ended runs' stages `Stages` remembers.
 *
 * @category models
 * @since 0.1.0
 */
export interface StagesSettings {
  /** Ended stages kept whole (a late entry is handled once), newest first; at least 1. Default 1000. */
  readonly endedStages: number
  /**
   * Ids of ended stages past `endedStages` still known as forgotten (an
   * entry fails `StageForgotten`, which is given up rather than retried);
   * older ids are not known at all, and an entry for one fails
   * `UnknownWorkflowItem` like a stage never opened. Default 100,000 (a few
   * MB of ids); 0 keeps none.
   */
  readonly forgottenStages: number
}

/**
 * The default settings: the newest 1000 ended stages kept, the ids of the
 * next 100,000 remembered as forgotten.
 *
 * @category models
 * @since 0.1.0
 */
export const defaultStagesSettings: StagesSettings = { endedStages: DEFAULT_CLAIM_MEMORY, forgottenStages: 100_000 }

const make = (settings: StagesSettings): Effect.Effect<StagesService, never, Runs> => Effect.gen(function*() {
  const endedStageMemory = Math.max(1, settings.endedStages)
  const forgottenStageMemory = Math.max(0, settings.forgottenStages)
  const runs = yield* Runs
  const claims = makeLateAskClaims()
  const stages = new Map<string, StageRecord>()
  // Stages whose run ended, oldest first (see the module header).
  const endedStages = new Map<string, StageRecord>()
  // The ids of ended stages no longer kept: an entry for one fails StageForgotten, not UnknownWorkflowItem.
  const forgotten = new Set<string>()

  const find = (stageId: string): Effect.Effect<StageRecord, UnknownWorkflowItem> =>
    Effect.suspend(() => {
      const stage = stages.get(stageId)
      return stage === undefined ? Effect.fail(new UnknownWorkflowItem({ kind: "stage", id: stageId })) : Effect.succeed(stage)
    })

  /** A record for a new stage, living in its run's Scope; when that closes it is kept as ended. */
  const create = (stageId: string, runId: string, scope: Scope.Scope, ports: StagePorts) =>
    Effect.gen(function*() {
      const slot = yield* makeGenerationSlot
      // Registered before the router, so it runs after the router's own finalizer has ended its waits.
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          record.ended = true
          record.current = undefined
          if (stages.get(stageId) === record) stages.delete(stageId)
          endedStages.delete(stageId)
          endedStages.set(stageId, record)
          if (endedStages.size > endedStageMemory) {
            const oldest = endedStages.keys().next()
            if (oldest.done !== true) {
              endedStages.delete(oldest.value)
              forgotten.add(oldest.value)
            }
          }
          if (forgotten.size > forgottenStageMemory) {
            const oldest = forgotten.values().next()
            if (oldest.done !== true) forgotten.delete(oldest.value)
          }
        })
      )
      // The router reads the latest generation's ports when it routes, not the first generation's.
      const closed = yield* makeClosedStage({
        owner: stageId,
        parent: { deliver: (entry) => Effect.suspend(() => record.ports.parent.deliver(entry)) },
        retained: {
          runTurn: (ask) =>
            Effect.suspend(() => {
              const retained = record.ports.retained
              return retained === undefined
                ? Effect.fail(new PostMortemUnavailable({ reason: NO_CONVERSATION_REASON }))
                : retained.runTurn(ask)
            })
        },
        replyError: (ask, text) => Effect.suspend(() => record.ports.replyError(ask, text)),
        claims
      })
      const record: StageRecord = { runId, slot, closed, ports, current: undefined, completed: false, ended: false }
      return record
    }).pipe(Scope.provide(scope))

  const open = (spec: StageSpec, ports: StagePorts): Effect.Effect<OpenStage, InvalidWorkflowId | UnknownWorkflowItem> =>
    Effect.gen(function*() {
      const stageId = spec.stageId.trim()
      if (stageId === "") return yield* new InvalidWorkflowId({ kind: "stage", id: spec.stageId, reason: "it is blank" })
      const run = yield* runs.get(spec.runId)
      let record = stages.get(stageId)
      if (record !== undefined && record.runId !== run.runId) {
        return yield* new InvalidWorkflowId({ kind: "stage", id: stageId, reason: `it belongs to run '${record.runId}'` })
      }
      if (record?.completed === true) {
        return yield* new InvalidWorkflowId({ kind: "stage", id: stageId, reason: "the stage has completed and is never reopened" })
      }
      if (record === undefined) {
        const created = yield* create(stageId, run.runId, run.scope, ports)
        // A concurrent `open` of the same stage may have registered it meanwhile: the first stays.
        record = stages.get(stageId) ?? created
        stages.set(stageId, record)
        // A stage of an ended run with this id is replaced by the live one.
        endedStages.delete(stageId)
        forgotten.delete(stageId)
      }
      const decision = resolveStageGroup(
        { ...spec.groups, run: run.group },
        { runId: run.runId, id: stageId, parallelSetId: spec.parallelSetId },
        spec.tools ?? {}
      )
      const group = yield* runs.groupFor(run.runId, decision)
      const owner = record
      owner.ports = ports
      // The previous generation stays `current` until this one replaces it: entries keep
      // going to it (and fail StageRetired once it is retired, to be retried here).
      const generation = yield* owner.slot.next
      const admission = yield* makeStageAdmission(ports).pipe(Scope.provide(generation.scope))
      const opened: OpenStage = { runId: run.runId, stageId, group, decision, generation: generation.generation, admission }
      owner.current = opened
      return opened
    })

  const deliver = (stageId: string, entry: StageEntry) =>
    Effect.gen(function*() {
      const record = stages.get(stageId) ?? endedStages.get(stageId)
      if (record === undefined) {
        if (forgotten.has(stageId)) return yield* new StageForgotten({ stageId })
        return yield* new UnknownWorkflowItem({ kind: "stage", id: stageId })
      }
      const current = record.current
      // Once the run ended, nothing goes to a generation: the router handles the entry once (C-ORD-8 for an ask).
      if (!record.ended && current !== undefined) {
        const admission = yield* current.admission.admit(entry)
        if (admission._tag !== "Closed") return { _tag: "Stage", admission } satisfies StageDelivery
      } else if (!record.ended && !record.completed) {
        // The first generation is still being opened: not admitted; a non-ask is retried.
        const admission = yield* admissionFailed(entry, new StageRetired(), record.ports.replyError)
        return { _tag: "Stage", admission } satisfies StageDelivery
      }
      // C-ORD-6…9: after close (or the run's end), never back into the stage.
      const outcome = yield* record.closed.route(entry)
      return { _tag: "AfterClose", outcome } satisfies StageDelivery
    })

  const close = <A, E, R>(stageId: string, publish: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const record = yield* find(stageId)
      const current = record.current
      if (current === undefined) return yield* new StageRetired()
      // Close and snapshot hold off post-mortem turns: a late ask that comes once admission has
      // closed is a closed-stage ask, and its turn runs after the snapshot is published (C-ORD-7).
      const published = yield* record.closed.publishing(Effect.andThen(current.admission.close, publish))
      record.completed = true
      record.current = undefined
      yield* record.slot.retire
      return published
    })

  return { open, deliver, close, claims }
})

/**
 * Workflow stages (see the module header). Needs `Runs`.
 *
 * @example
 * ```ts
 * import { Effect, Layer } from "effect"
 * import type { InboundMessage } from "effect-intercom/client"
 * import { Runs, stageMessage, Stages, type StagePorts } from "effect-intercom/workflow"
 *
 * declare const ports: StagePorts // the engine's stage session, handoff, parent chat, …
 * declare const inbound: InboundMessage // from the stage session's inbound path
 * declare const publishSnapshot: Effect.Effect<void> // the engine's terminal snapshot
 *
 * const program = Effect.gen(function*() {
 *   const runs = yield* Runs
 *   const stages = yield* Stages
 *   yield* runs.start({ runId: "run-1" })
 *   const stage = yield* stages.open({ runId: "run-1", stageId: "review" }, ports)
 *   // stage.group: the group to start the stage session in
 *   yield* stages.deliver("review", stageMessage(inbound))
 *   yield* stages.close("review", publishSnapshot) // drains what was admitted, then publishes
 * })
 * program.pipe(Effect.provide(Stages.layer.pipe(Layer.provideMerge(Runs.layer()))), Effect.runPromise)
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class Stages extends Context.Service<Stages, StagesService>()("effect-intercom/workflow/Stages") {
  /** Builds the service over the `Runs` in context, with the default settings. */
  static readonly make: Effect.Effect<StagesService, never, Runs> = make(defaultStagesSettings)
  /** A Layer holding one `Stages` with the default settings; needs `Runs`. */
  static readonly layer: Layer.Layer<Stages, never, Runs> = Layer.effect(Stages, make(defaultStagesSettings))
  /**
   * A Layer holding one `Stages` that remembers as much of ended runs as
   * `settings` says (the rest from `defaultStagesSettings`); needs `Runs`.
   *
   * @example
   * ```ts
   * // An engine that runs a great many stages keeps fewer forgotten ids.
   * Stages.layerWith({ forgottenStages: 10_000 })
   * ```
   */
  static readonly layerWith = (settings: Partial<StagesSettings>): Layer.Layer<Stages, never, Runs> =>
    Layer.effect(Stages, make({ ...defaultStagesSettings, ...settings }))
}
