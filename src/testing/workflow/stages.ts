/**
 * The workflow world's stages: the real `Runs` and `Stages` services of
 * `effect-intercom/workflow`, with simulated stage sessions (a busy flag and
 * a model-visible queue that is the ledger), each stage's own foreground
 * child and detach handshake, the parent chat, retained conversations for
 * post-mortem turns, and a second late-ask listener sharing the service's
 * claims (C-ORD-9).
 *
 * Inbound entries are delivered with the session runtime's retry: a non-ask
 * that fails admission is tried again every 100 ms.
 */
import { Cause, Clock, Effect, Exit, type Scope } from "effect"
import type { InboundMessage } from "../../client/events.ts"
import type { SessionInfo } from "../../protocol/frames.ts"
import { type ClosedStage, makeClosedStage } from "../../workflow/ClosedStage.ts"
import { PostMortemUnavailable } from "../../workflow/errors.ts"
import type { InboundEntry } from "../../workflow/InboundEntry.ts"
import { makeLateAskClaims } from "../../workflow/LateAskClaims.ts"
import { Runs, type RunsService } from "../../workflow/Runs.ts"
import { type StageEntry, stageMessage, stageNotice } from "../../workflow/StageEntry.ts"
import { type OpenStage, type StagePorts, Stages, type StagesService } from "../../workflow/Stages.ts"
import { type ForegroundSlot, makeForegroundSlot, type SimChild } from "./foreground.ts"
import { spawn, type WorldCore } from "./links.ts"

/** Where a simulated stage is. */
export type SimStagePhase = "new" | "open" | "closing" | "closed"

/** One simulated stage. */
export interface SimStage {
  readonly id: string
  phase: SimStagePhase
  busy: boolean
  /** How many of the next inserts the stage session refuses. */
  refuseInserts: number
  /** Post-mortem turns fail while this is set (the retained conversation is gone). */
  retainedGone: boolean
  generation: number
  open: OpenStage | undefined
  readonly slot: ForegroundSlot
  readonly child: SimChild
  readonly ports: StagePorts
  readonly companion: ClosedStage
  /** Entries sent to the stage, for redelivery. */
  readonly sent: Array<StageEntry>
}

/** The stages of one run. */
export interface SimStages {
  readonly stages: ReadonlyArray<SimStage>
  readonly service: StagesService
  readonly openStage: (stage: SimStage) => Effect.Effect<void>
  readonly reload: (stage: SimStage) => Effect.Effect<void>
  /** A message (or a notice) reaches the stage; returns its label. */
  readonly send: (stage: SimStage, from: "peer" | "child" | "notice", ask: boolean) => Effect.Effect<string>
  /** A blocking ask reaches a closed stage, through both listeners (and again, when redelivered). */
  readonly lateAsk: (stage: SimStage, redeliver: boolean, companionFirst: boolean) => Effect.Effect<string>
  /** An earlier non-ask is delivered again to a closed stage. */
  readonly redeliver: (stage: SimStage, index: number) => Effect.Effect<void>
  readonly close: (stage: SimStage) => Effect.Effect<void>
}

const RUN_ID = "run-1"
const ADMIT_RETRY_MS = 100
const ADMIT_RETRIES = 600

const info = (id: string, name: string): SessionInfo => ({
  id,
  name,
  cwd: "/work",
  model: "sim",
  pid: 1,
  startedAt: 0,
  lastActivity: 0,
  endpointEpoch: `epoch-${id}`
})
const PEER = info("id-peer", "peer")

/** The label of a stage entry: its message or notice id. */
export const labelOf = (entry: StageEntry): string => entry._tag === "Message" ? entry.inbound.message.id : entry.id

const toInbound = (entry: StageEntry): InboundEntry<string> =>
  entry._tag === "Message"
    ? {
      messageId: entry.inbound.message.id,
      senderId: entry.inbound.from.id,
      senderName: entry.inbound.from.name,
      timestamp: entry.inbound.message.timestamp,
      expectsReply: entry.inbound.message.expectsReply === true,
      payload: entry.inbound.message.id
    }
    : { messageId: entry.id, senderId: entry.source ?? "engine", timestamp: 0, expectsReply: false, payload: entry.id }

/** Builds `count` stages of one run in the current Scope. */
export const makeSimStages = (core: WorldCore, count: number): Effect.Effect<SimStages, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { ledger } = core
    const runs: RunsService = yield* Runs.make({ newGroupId: Effect.succeed("group-1") })
    const service = yield* Stages.make.pipe(Effect.provideService(Runs, runs))
    yield* Effect.orDie(runs.start({ runId: RUN_ID }))

    const makeStage = (index: number): Effect.Effect<SimStage, never, Scope.Scope> =>
      Effect.gen(function*() {
        const id = `s${index + 1}`
        const slot = yield* makeForegroundSlot(core, id)
        const child: SimChild = { name: `w${index + 1}`, id: `id-w${index + 1}`, runId: `run-w${index + 1}`, runs: 1, done: false, detached: false }
        const holder: { stage?: SimStage } = {}
        const ports: StagePorts = {
          session: {
            isBusy: Effect.sync(() => holder.stage?.busy ?? false),
            insert: (entry) =>
              Effect.suspend(() => {
                const stage = holder.stage
                const label = labelOf(entry)
                if (stage !== undefined && stage.refuseInserts > 0) {
                  stage.refuseInserts--
                  ledger.insertRefused(id, label)
                  ledger.note(`   stage ${id} refuses ${label}`)
                  return Effect.fail("the simulated stage session refused the entry")
                }
                ledger.note(`   stage ${id} takes ${label}`)
                ledger.inserted(id, label)
                return Effect.void
              })
          },
          handoff: (entry) => slot.handshake.handoff(toInbound(entry)),
          replyError: (ask, text) =>
            Effect.sync(() => {
              ledger.note(`   ${ask.from.name} is told: ${text}`)
              ledger.ended(ask.message.id, "reply-error")
            }),
          parent: {
            deliver: (entry) =>
              Effect.sync(() => {
                ledger.note(`   parent chat gets ${labelOf(entry)} (stage ${id} closed)`)
                ledger.ended(labelOf(entry), "parent-chat")
              })
          },
          retained: {
            runTurn: (ask) =>
              Effect.suspend(() => {
                if (holder.stage?.retainedGone === true) {
                  return Effect.fail(new PostMortemUnavailable({ reason: "the retained session is gone" }))
                }
                ledger.note(`   stage ${id} runs a post-mortem turn for ${ask.message.id}`)
                ledger.ended(ask.message.id, "post-mortem")
                return Effect.void
              })
          }
        }
        const companion = yield* makeClosedStage({
          owner: `${id}-companion`,
          parent: ports.parent,
          retained: ports.retained,
          replyError: ports.replyError,
          claims: core.broken === "unshared-late-ask-claims" ? makeLateAskClaims() : service.claims
        })
        const stage: SimStage = {
          id,
          phase: "new",
          busy: false,
          refuseInserts: 0,
          retainedGone: false,
          generation: 0,
          open: undefined,
          slot,
          child,
          ports,
          companion,
          sent: []
        }
        holder.stage = stage
        return stage
      })
    const stages: Array<SimStage> = []
    for (let i = 0; i < count; i++) stages.push(yield* makeStage(i))

    const openGeneration = (stage: SimStage) =>
      Effect.gen(function*() {
        const opened = yield* Effect.orDie(service.open({ runId: RUN_ID, stageId: stage.id }, stage.ports))
        stage.open = opened
        stage.generation = opened.generation
      })

    /** Delivers with the session runtime's retry: a non-ask that fails admission is tried again. */
    const deliver = (stage: SimStage, entry: StageEntry, attempt: number): Effect.Effect<void> =>
      Effect.gen(function*() {
        const label = labelOf(entry)
        if (stage.phase === "open") ledger.admitStarted(stage.id, stage.generation, label)
        const exit = yield* Effect.exit(service.deliver(stage.id, entry))
        if (Exit.isSuccess(exit)) {
          const delivery = exit.value
          if (delivery._tag === "AfterClose" && entry._tag === "Message" && entry.inbound.message.expectsReply === true) {
            ledger.markLate(label)
          }
          ledger.note(`   ${label} → stage ${stage.id}: ${delivery._tag === "Stage" ? delivery.admission._tag : delivery.outcome._tag}`)
          return
        }
        const failure = Cause.squash(exit.cause)
        ledger.note(`   ${label} → stage ${stage.id} failed: ${failure instanceof Error ? failure.message : String(failure)}; released for retry`)
        if (attempt >= ADMIT_RETRIES) return ledger.note(`   ${label} given up after ${attempt} tries`)
        yield* Effect.sleep(ADMIT_RETRY_MS)
        yield* deliver(stage, entry, attempt + 1)
      })

    const inboundFrom = (from: SessionInfo, label: string, ask: boolean, now: number): InboundMessage => ({
      from,
      message: { id: label, timestamp: now, content: { text: `text of ${label}` }, ...(ask ? { expectsReply: true } : {}) }
    })

    return {
      stages,
      service,
      openStage: (stage) =>
        Effect.gen(function*() {
          if (stage.phase !== "new") return
          yield* openGeneration(stage)
          stage.phase = "open"
          ledger.note(`stage ${stage.id} opens (generation ${stage.generation})`)
        }),
      reload: (stage) =>
        Effect.gen(function*() {
          if (stage.phase !== "open") return
          const old = stage.generation
          yield* openGeneration(stage)
          ledger.stageRetired(stage.id, old)
          yield* stage.slot.renew
          ledger.note(`stage ${stage.id} reloads: generation ${old} → ${stage.generation}`)
        }),
      send: (stage, from, ask) =>
        Effect.gen(function*() {
          const label = core.nextLabel(from === "notice" ? "n" : "m")
          const now = yield* Clock.currentTimeMillis
          const sender = from === "child" ? info(stage.child.id, stage.child.name) : PEER
          const entry: StageEntry = from === "notice"
            ? stageNotice({ id: label, text: `notice ${label}`, source: "bash" })
            : stageMessage(inboundFrom(sender, label, ask, now))
          const isAsk = from !== "notice" && ask
          ledger.accepted(label, from === "notice" ? "engine" : sender.name ?? sender.id, stage.id, { ask: isAsk })
          ledger.note(`${from === "notice" ? "engine notice" : (sender.name ?? sender.id) + (isAsk ? " asks" : " sends")} ${label} → stage ${stage.id}`)
          stage.sent.push(entry)
          yield* spawn(core, deliver(stage, entry, 0))
          return label
        }),
      lateAsk: (stage, redeliver, companionFirst) =>
        Effect.gen(function*() {
          const label = core.nextLabel("m")
          const now = yield* Clock.currentTimeMillis
          const entry = stageMessage(inboundFrom(PEER, label, true, now))
          ledger.accepted(label, "peer", stage.id, { ask: true, late: true })
          ledger.note(`peer asks ${label} → closed stage ${stage.id}${redeliver ? " (delivered twice)" : ""}`)
          const viaService = Effect.tap(service.deliver(stage.id, entry), (delivery) =>
            Effect.sync(() => ledger.note(`   ${label} (stage listener): ${delivery._tag === "AfterClose" ? delivery.outcome._tag : delivery._tag}`)))
          const viaCompanion = Effect.tap(stage.companion.route(entry), (outcome) =>
            Effect.sync(() => ledger.note(`   ${label} (companion listener): ${outcome._tag}`)))
          const order = companionFirst ? [viaCompanion, viaService] : [viaService, viaCompanion]
          for (const listener of order) yield* spawn(core, listener)
          if (redeliver) for (const listener of order) yield* spawn(core, listener)
          return label
        }),
      redeliver: (stage, index) =>
        Effect.suspend(() => {
          // What the bus can hand the workflow layer twice: the client drops a redelivered id it already
          // handed over, so only the closed-stage router's own retries redeliver (entries it notified).
          const candidates = stage.sent.filter((entry) => ledger.endsOf(labelOf(entry)).includes("parent-chat"))
          const entry = candidates[index % Math.max(1, candidates.length)]
          if (entry === undefined) return Effect.void
          const label = labelOf(entry)
          ledger.note(`${label} is delivered again to closed stage ${stage.id}`)
          return spawn(core, Effect.tap(service.deliver(stage.id, entry), (delivery) =>
            Effect.sync(() => ledger.note(`   ${label} again: ${delivery._tag === "AfterClose" ? delivery.outcome._tag : delivery._tag}`))))
        }),
      close: (stage) =>
        Effect.gen(function*() {
          if (stage.phase !== "open") return
          stage.phase = "closing"
          ledger.closeRequested(stage.id, stage.generation)
          ledger.note(`stage ${stage.id} closes`)
          const publish = Effect.sync(() => {
            ledger.note(`stage ${stage.id} publishes its terminal snapshot`)
            ledger.snapshot(stage.id)
          })
          const closing = core.broken === "publish-before-drain"
            ? Effect.andThen(publish, service.close(stage.id, Effect.void))
            : core.broken === "close-without-drain"
            ? Effect.andThen(Effect.orDie(openGeneration(stage)), service.close(stage.id, publish))
            : service.close(stage.id, publish)
          yield* spawn(core, Effect.ensuring(
            Effect.tapError(closing, (error) => Effect.sync(() => ledger.note(`   stage ${stage.id} close failed: ${String(error)}`))),
            Effect.sync(() => {
              stage.phase = "closed"
            })
          ))
        })
    }
  })
