/**
 * The stage of the bus-hosted workflow world (`BusFull.ts`): the engine's
 * real `Runs` and `Stages` services (in the engine's Scope) with one stage,
 * `s1`, whose stage session is bus session `Stage`. Its host does what
 * `stageHostDeliver` does — `Stages.deliver`, a failure being the session
 * runtime's cue to retry (C-ORD-5, C-DLV-12) — and records each step in the
 * workflow ledger, so every message `Peer` and `Worker` send it crosses the
 * simulated broker before `Stages.deliver` routes it. The stage's ports:
 * its session (a busy flag, and an insert the workflow ledger records), its
 * foreground handoff (a `ForegroundDetach` holding `Worker` while the
 * engine runs it in the stage's foreground), the parent chat, the retained
 * conversation (a post-mortem turn answers the asker over the bus), and
 * `replyError`, which answers the asker over the bus through the stage
 * session's runtime (`reply` with `replyError`). A second late-ask listener
 * on the stage session (a companion `ClosedStage` sharing the service's
 * claims) sees every late ask too (C-ORD-9).
 *
 * It owns the stage's phase, busy flag and retained flag as the engine
 * sees them; they change only in synchronous steps.
 */
import { Cause, Deferred, Effect, Exit, Scope } from "effect"
import type { InboundMessage } from "../../client/events.ts"
import type { Inbound } from "../../session/Host.ts"
import type { IntercomSessionService } from "../../session/IntercomSession.ts"
import { type ClosedStage, makeClosedStage } from "../../workflow/ClosedStage.ts"
import { PostMortemUnavailable } from "../../workflow/errors.ts"
import { type ForegroundDetach, makeForegroundDetach } from "../../workflow/ForegroundDetach.ts"
import { inboundMessageOf } from "../../workflow/InboundAdapter.ts"
import { makeLateAskClaims } from "../../workflow/LateAskClaims.ts"
import { Runs } from "../../workflow/Runs.ts"
import { type StageEntry, stageMessage } from "../../workflow/StageEntry.ts"
import { type StagePorts, Stages, type StagesService } from "../../workflow/Stages.ts"
import type { AgentHost } from "../SimAgent.ts"
import { type BusFullCore, spawnEngine } from "./BusFullCore.ts"
import { FULL_STAGE } from "./BusFullWorkload.ts"

/** Where the stage is, as the engine sees it. */
export type FullStagePhase = "new" | "open" | "closing" | "closed"

/** The engine's side of the stage. */
export interface FullStageEngine {
  readonly phase: () => FullStagePhase
  readonly open: Effect.Effect<void>
  readonly setBusy: (busy: boolean) => Effect.Effect<void>
  /** `Worker` in the stage's foreground until it detaches (it stays attached after close: nothing more reaches the stage). */
  readonly foreground: (unavailable: boolean) => Effect.Effect<void>
  readonly close: Effect.Effect<void>
  readonly retainedGone: Effect.Effect<void>
  readonly tally: { snapshots: number; stageDetached: number }
}

/** The stage's bus session host, and (once the script built it) its engine. */
export interface FullStage {
  /** The stage session's host: every message goes through `Stages.deliver` (and late asks through the companion too). */
  readonly host: AgentHost
  /** Builds the engine's services in the engine's Scope; `childId` is `Worker`'s bus id, for its foreground targets. */
  readonly start: (childId: string) => Effect.Effect<FullStageEngine>
}

const labelOf = (core: BusFullCore, entry: StageEntry): string =>
  entry._tag === "Message" ? core.alias(entry.inbound.message.id) : entry.id

/** Describes a failure for the trace. */
const describe = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  return failure instanceof Error ? failure.message : String(failure)
}

/** Makes the stage (its host is ready at once; its services start with `start`). */
export const makeFullStage = (core: BusFullCore): FullStage => {
  const { ledger } = core
  let phase: FullStagePhase = "new"
  let busy = false
  let retainedGone = false
  let generation = 0
  /** `Worker` is in the stage's foreground (one call at a time). */
  let attached = false
  let stages: StagesService | undefined
  let companion: ClosedStage | undefined
  let session: (() => IntercomSessionService | undefined) | undefined
  const seen = new Set<string>()

  /** The stage session answers the ask over the bus (a replyError, or a post-mortem turn's answer). */
  const answer = (ask: InboundMessage, text: string, replyError: string | undefined) =>
    Effect.gen(function*() {
      const runtime = session?.()
      if (runtime === undefined) return
      const sent = yield* Effect.exit(runtime.reply({
        message: text,
        replyTo: ask.message.id,
        ...(replyError === undefined ? {} : { replyError })
      }))
      core.note(`Stage: ${replyError === undefined ? "answer" : "replyError"} to ${core.alias(ask.message.id)} ${Exit.isSuccess(sent) ? "sent" : `not sent: ${describe(sent.cause)}`}`)
    })

  const host: AgentHost = (context) =>
    Effect.sync(() => {
      session = context.session
      return (inbound: Inbound): Effect.Effect<void, unknown> =>
        Effect.gen(function*() {
          const service = stages
          const label = core.alias(inbound.message.id)
          if (!seen.has(label)) {
            seen.add(label)
            ledger.accepted(label, inbound.from.name ?? inbound.from.id, FULL_STAGE.stageId, { ask: inbound.expectsReply })
          }
          // Not opened yet: the session runtime retries the hand-off (C-DLV-12), as for a refused one.
          if (service === undefined) return yield* Effect.fail("the stage is not open yet")
          if (phase === "open") ledger.admitStarted(FULL_STAGE.stageId, generation, label)
          const entry = stageMessage(inboundMessageOf(inbound))
          const delivered = yield* Effect.exit(service.deliver(FULL_STAGE.stageId, entry))
          if (Exit.isFailure(delivered)) {
            core.note(`Stage: ${label} → stage ${FULL_STAGE.stageId} failed: ${describe(delivered.cause)}; the runtime retries`)
            return yield* Effect.failCause(delivered.cause)
          }
          const delivery = delivered.value
          core.note(`Stage: ${label} → stage ${FULL_STAGE.stageId}: ${delivery._tag === "Stage" ? delivery.admission._tag : delivery.outcome._tag}`)
          if (delivery._tag === "AfterClose" && inbound.expectsReply) {
            ledger.markLate(label)
            // The second listener (C-ORD-9): with shared claims it finds the ask claimed.
            if (companion !== undefined) {
              const outcome = yield* companion.route(entry)
              core.note(`Stage: ${label} (companion listener): ${outcome._tag}`)
            }
          }
        })
    })

  const start = (childId: string): Effect.Effect<FullStageEngine> =>
    Effect.gen(function*() {
      const runs = yield* Runs.make({ newGroupId: Effect.succeed("group-1") })
      const service = yield* Stages.make.pipe(Effect.provideService(Runs, runs))
      yield* Effect.orDie(runs.start({ runId: FULL_STAGE.runId }))
      const detach: ForegroundDetach = yield* makeForegroundDetach({ generation: "s1-g1" })
      const tally = { snapshots: 0, stageDetached: 0 }
      const ports: StagePorts = {
        session: {
          isBusy: Effect.sync(() => busy),
          insert: (entry) =>
            Effect.sync(() => {
              const label = labelOf(core, entry)
              core.note(`Stage: stage ${FULL_STAGE.stageId} takes ${label}`)
              ledger.inserted(FULL_STAGE.stageId, label)
            })
        },
        handoff: detach.stageHandoff,
        replyError: (ask, text) =>
          Effect.andThen(
            Effect.sync(() => ledger.ended(core.alias(ask.message.id), "reply-error")),
            answer(ask, text, text)
          ),
        parent: {
          deliver: (entry) =>
            Effect.sync(() => {
              core.note(`engine: parent chat gets ${labelOf(core, entry)} (stage ${FULL_STAGE.stageId} closed)`)
              ledger.ended(labelOf(core, entry), "parent-chat")
            })
        },
        retained: {
          runTurn: (ask) =>
            Effect.suspend(() => {
              if (retainedGone) return Effect.fail(new PostMortemUnavailable({ reason: "the retained session is gone" }))
              core.note(`engine: stage ${FULL_STAGE.stageId} runs a post-mortem turn for ${core.alias(ask.message.id)}`)
              ledger.ended(core.alias(ask.message.id), "post-mortem")
              return answer(ask, "post-mortem answer", undefined)
            })
        }
      }
      companion = yield* makeClosedStage({
        owner: `${FULL_STAGE.stageId}-companion`,
        parent: ports.parent,
        retained: ports.retained,
        replyError: ports.replyError,
        claims: core.broken === "unshared-late-ask-claims" ? makeLateAskClaims() : service.claims
      })
      stages = service
      const openGeneration = Effect.gen(function*() {
        const opened = yield* Effect.orDie(service.open({ runId: FULL_STAGE.runId, stageId: FULL_STAGE.stageId }, ports))
        generation = opened.generation
      })
      return {
        phase: () => phase,
        tally,
        open: Effect.gen(function*() {
          if (phase !== "new") return
          yield* openGeneration
          phase = "open"
          core.note(`engine: stage ${FULL_STAGE.stageId} opens (generation ${generation})`)
        }),
        setBusy: (value) =>
          Effect.sync(() => {
            busy = value
            core.note(`engine: stage ${FULL_STAGE.stageId} ${value ? "busy" : "idle"}`)
          }),
        retainedGone: Effect.sync(() => {
          retainedGone = true
          core.note(`engine: stage ${FULL_STAGE.stageId}'s retained conversation is gone`)
        }),
        foreground: (unavailable) =>
          Effect.gen(function*() {
            if (phase !== "open" || attached) return
            attached = true
            const released = yield* Deferred.make<void>()
            const call = Effect.scoped(Effect.gen(function*() {
              const responder = yield* detach.attach({
                targets: [FULL_STAGE.child, childId],
                release: Effect.asVoid(Deferred.succeed(released, undefined))
              })
              if (unavailable) yield* responder.setUnavailable(true)
              core.note(`engine: ${FULL_STAGE.child} runs in stage ${FULL_STAGE.stageId}'s foreground${unavailable ? " (its responder does not answer)" : ""}`)
              yield* Deferred.await(released)
              attached = false
              tally.stageDetached++
              core.note(`engine: ${FULL_STAGE.child} detached from stage ${FULL_STAGE.stageId}`)
            }))
            yield* spawnEngine(core, call)
          }),
        close: Effect.gen(function*() {
          if (phase !== "open") return
          phase = "closing"
          ledger.closeRequested(FULL_STAGE.stageId, generation)
          core.note(`engine: stage ${FULL_STAGE.stageId} closes`)
          const publish = Effect.sync(() => {
            tally.snapshots++
            core.note(`engine: stage ${FULL_STAGE.stageId} publishes its terminal snapshot`)
            ledger.snapshot(FULL_STAGE.stageId)
          })
          const closing = core.broken === "publish-before-drain"
            ? Effect.andThen(publish, service.close(FULL_STAGE.stageId, Effect.void))
            : core.broken === "close-without-drain"
            ? Effect.andThen(openGeneration, service.close(FULL_STAGE.stageId, publish))
            : service.close(FULL_STAGE.stageId, publish)
          yield* spawnEngine(core, Effect.ensuring(
            Effect.tapError(closing, (error) => Effect.sync(() => core.note(`engine: stage ${FULL_STAGE.stageId} close failed: ${String(error)}`))),
            Effect.sync(() => {
              phase = "closed"
            })
          ))
        })
      } satisfies FullStageEngine
    }).pipe(Scope.provide(core.scope))

  return { host, start }
}
