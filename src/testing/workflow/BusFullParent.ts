/**
 * The parent of the bus-hosted workflow world (`BusFull.ts`): bus session
 * `P`, whose host is the real `makeParentSession` (built in each session
 * generation's Scope, with the run's `busySteer`), and the engine's side of
 * its children — the run table `resolveSource` reads, `F1`'s foreground
 * `subagent` call (`parent.foreground.attach`), the foreground parallel
 * group `F2`–`F4` (the real `makeParallelGroup`, whose one release every
 * member's responder shares), and the terminal notices the engine hands the
 * barrier. The parent's model is the workflow ledger: every port records
 * where a message ended, and the ledger checks `wf-terminal-order` on it.
 *
 * It owns the engine's table of children and the parent's busy flag; both
 * change only in synchronous steps of the driver or of the engine's fibers.
 */
import { Clock, Deferred, Effect, Scope } from "effect"
import type { InboundMessage } from "../../client/events.ts"
import type { SessionInfo } from "../../protocol/frames.ts"
import type { Inbound } from "../../session/Host.ts"
import { inboundEntry, inboundMessageOf, type SourceResolver } from "../../workflow/InboundAdapter.ts"
import type { EntrySource } from "../../workflow/InboundEntry.ts"
import { makeParallelGroup } from "../../workflow/ParallelRelease.ts"
import * as ParentJournal from "../../workflow/ParentJournal.ts"
import { makeParentSession, type ParentAgent, type ParentEntry, type ParentSession } from "../../workflow/ParentSession.ts"
import type { TerminalBatch, TerminalNotice } from "../../workflow/TerminalBarrier.ts"
import type { AgentHost } from "../SimAgent.ts"
import { type BusFullCore, spawnEngine } from "./BusFullCore.ts"
import { FULL_CHILDREN } from "./BusFullWorkload.ts"

/** One child as the engine sees it. */
export interface FullChild {
  readonly name: string
  /** Its bus session id (the same across restarts); the driver sets it once the world is up. */
  id: string
  runs: number
  /** `attached`: its foreground call holds it; `waiting`: a group member behind the concurrency limit. */
  call: "none" | "waiting" | "attached"
  /** Released from foreground supervision by a commit: its terminal goes through the barrier. */
  detached: boolean
  /** Ends the child's task (its run's end) while a call or a group holds it. */
  finished: Deferred.Deferred<void> | undefined
}

/** An ask from a child that reached the parent's model. */
interface SeenAsk {
  readonly label: string
  readonly messageId: string
}

/** The parent and the engine's view of its children. */
export interface FullParent {
  readonly children: ReadonlyMap<string, FullChild>
  readonly host: AgentHost
  /** The current generation's parent session, once built. */
  readonly current: () => ParentSession<string> | undefined
  readonly setBusy: (busy: boolean) => Effect.Effect<void>
  /** `F1` in the parent's foreground until it detaches or its run ends. */
  readonly foreground: (child: FullChild, unavailable: boolean) => Effect.Effect<void>
  /** A foreground parallel group of `members`, `concurrency` at once. */
  readonly group: (members: ReadonlyArray<FullChild>, concurrency: number) => Effect.Effect<void>
  /** The child's run ends; a background (or detached) child's terminal goes to the barrier. */
  readonly terminal: (child: FullChild) => Effect.Effect<void>
  /** A subagent call (the foreground child, or the group) holds the parent now. */
  readonly inCall: () => boolean
  /** The oldest ask in the model that is not answered yet (its message id), taken. */
  readonly nextAsk: () => SeenAsk | undefined
  /** The run the child is in now. */
  readonly runIdOf: (child: string) => string
  /** `wf-skipped-launched`: a member skipped by its group's release that was launched anyway. */
  readonly checkGroups: () => void
  /** `wf-lost`: a terminal the parent's barrier took that never reached its model. */
  readonly checkTerminals: () => void
  readonly tally: { detached: number; groups: number; skipped: number; foregroundCalls: number; passive: number }
}

/**
 * Builds the parent; `P`'s host is `host`. With `journalFile`, each of its session generations keeps a
 * `ParentJournal` over that file (made in the generation's Scope), as a parent that reloads must.
 */
export const makeFullParent = (
  core: BusFullCore,
  busySteer: "steer" | "queue",
  options: { readonly journalFile?: string | undefined } = {}
): FullParent => {
  const { ledger } = core
  const children = new Map<string, FullChild>(
    FULL_CHILDREN.map((name) => [name, { name, id: name, runs: 1, call: "none", detached: false, finished: undefined }])
  )
  let busy = false
  let calls = 0
  let parent: ParentSession<string> | undefined
  const seenAsks: Array<SeenAsk> = []
  const askIds = new Map<string, string>()
  const terminalsSurfaced = new Set<string>()
  /** Runs whose terminal the barrier took (`parent.terminal` succeeded). */
  const terminalsTaken: Array<string> = []
  const groups: Array<{ readonly launched: Set<string>; skipped: ReadonlyArray<string> }> = []
  const tally = { detached: 0, groups: 0, skipped: 0, foregroundCalls: 0, passive: 0 }

  const runIdOf = (name: string) => `run-${name}-${children.get(name)?.runs ?? 1}`
  const resolveSource: SourceResolver = (from: SessionInfo): EntrySource | undefined =>
    from.name !== undefined && children.has(from.name)
      ? { subagentRunId: runIdOf(from.name), subagentAgent: from.name }
      : undefined

  /** The parent's model took the entry. */
  const reached = (entry: ParentEntry) => {
    const label = core.alias(entry.messageId)
    ledger.ended(label, "model")
    const askId = askIds.get(label)
    if (askId !== undefined) {
      askIds.delete(label)
      seenAsks.push({ label, messageId: askId })
    }
  }
  const agent: ParentAgent<string> = {
    isIdle: Effect.sync(() => !busy && calls === 0),
    deliverBatch: (batch) => Effect.sync(() => batch.forEach(reached)),
    surface: (entry) => Effect.sync(() => reached(entry)),
    passive: (entry) =>
      Effect.sync(() => {
        tally.passive++
        if (core.broken !== "passive-dropped") reached(entry)
      }),
    dispatchTerminal: (batch: TerminalBatch<InboundMessage, string>) =>
      Effect.sync(() => {
        const runId = batch.terminal.runId
        core.note(`P: model ← ${batch.prelude.length} claimed message(s), then the terminal of ${runId}`)
        batch.prelude.forEach(reached)
        if (terminalsSurfaced.has(runId)) ledger.violate("wf-duplicate", `run ${runId}'s terminal reached the parent twice`)
        terminalsSurfaced.add(runId)
        ledger.terminalSurfaced(runId, batch.terminal.terminalAt)
      })
  }

  const host: AgentHost = (context) =>
    Effect.gen(function*() {
      const journal = options.journalFile === undefined ? undefined : yield* Effect.orDie(ParentJournal.make(options.journalFile))
      // `journal-without-marks` (a broken build) leaves out the journal's agent wrapper: nothing is marked consumed.
      const wrapped = journal === undefined || core.broken === "journal-without-marks" ? agent : journal.agent(agent)
      const made = yield* makeParentSession(wrapped, {
        generation: context.generation,
        busySteer,
        resolveSource,
        ...(journal === undefined ? {} : { onDropped: journal.dropped })
      })
      parent = made
      const deliver = (inbound: Inbound) =>
        Effect.suspend(() => {
          const label = core.alias(inbound.message.id)
          // One handed over again (restored by the journal after a reload) keeps its first record (WorkflowLedger.accepted).
          const source = inboundEntry(inboundMessageOf(inbound), { resolveSource }).source
          ledger.accepted(label, inbound.from.name ?? inbound.from.id, "parent", {
            ask: inbound.expectsReply,
            runId: source?.subagentRunId
          })
          if (inbound.expectsReply) askIds.set(label, inbound.message.id)
          return core.broken === "deliver-twice" ? Effect.andThen(made.deliver(inbound), made.deliver(inbound)) : made.deliver(inbound)
        })
      return journal === undefined ? deliver : { deliver, journal: journal.journal }
    })

  const wake = Effect.suspend(() => parent === undefined ? Effect.void : parent.idle)

  /** Holds `child` in the parent's foreground (in the current Scope) until its release or its run's end. */
  const holdInForeground = (child: FullChild, release: Effect.Effect<void>, unavailable: boolean) =>
    Effect.gen(function*() {
      const current = parent
      if (current === undefined) return
      const finished = yield* Deferred.make<void>()
      child.finished = finished
      child.call = "attached"
      const responder = yield* current.foreground.attach({ targets: [child.name, child.id], release })
      if (unavailable) yield* responder.setUnavailable(true)
      core.note(`engine: ${child.name} runs in P's foreground${unavailable ? " (its responder does not answer)" : ""}`)
      yield* Deferred.await(finished)
    })

  const endCall = Effect.andThen(
    Effect.sync(() => {
      calls--
    }),
    wake
  )

  return {
    children,
    host,
    current: () => parent,
    tally,
    runIdOf,
    setBusy: (value) =>
      Effect.gen(function*() {
        busy = value
        core.note(`engine: parent ${value ? "busy" : "idle"}`)
        if (!value) yield* wake
      }),
    foreground: (child, unavailable) =>
      Effect.gen(function*() {
        // A detached run goes on in the background until its terminal: no second call on it meanwhile.
        if (child.call !== "none" || child.detached || parent === undefined) return
        calls++
        tally.foregroundCalls++
        const released = yield* Deferred.make<void>()
        const call = Effect.scoped(Effect.gen(function*() {
          yield* Effect.raceFirst(
            holdInForeground(child, Effect.asVoid(Deferred.succeed(released, undefined)), unavailable),
            Deferred.await(released)
          )
        })).pipe(
          Effect.andThen(Effect.sync(() => {
            child.call = "none"
            child.finished = undefined
            if (Deferred.isDoneUnsafe(released)) {
              child.detached = true
              tally.detached++
              core.note(`engine: ${child.name} detached; P's subagent call returns`)
            }
          })),
          Effect.ensuring(endCall)
        )
        yield* spawnEngine(core, call)
      }),
    group: (members, concurrency) =>
      Effect.gen(function*() {
        if (parent === undefined || members.some((member) => member.call !== "none" || member.detached)) return
        calls++
        tally.groups++
        const launched = new Set<string>()
        const record: { readonly launched: Set<string>; skipped: ReadonlyArray<string> } = { launched, skipped: [] }
        groups.push(record)
        for (const member of members) member.call = "waiting"
        const tasks = members.map((member) => (release: Effect.Effect<void>) =>
          Effect.scoped(Effect.suspend(() => {
            launched.add(member.name)
            return holdInForeground(member, release, false)
          })).pipe(Effect.ensuring(Effect.sync(() => {
            member.call = "none"
            member.finished = undefined
          }))))
        core.note(`engine: ${members.map((member) => member.name).join(", ")} run as P's foreground parallel group, ${concurrency} at once`)
        const group = yield* makeParallelGroup(tasks, { concurrency }).pipe(Scope.provide(core.scope))
        const call = group.aggregate.pipe(
          Effect.tap((slots) =>
            Effect.sync(() => {
              const skipped: Array<string> = []
              slots.forEach((slot, index) => {
                const member = members[index]
                if (member === undefined) return
                if (slot._tag === "Detached") {
                  member.detached = true
                  tally.detached++
                } else if (slot._tag === "Skipped") {
                  skipped.push(member.name)
                  member.call = "none"
                  tally.skipped++
                }
              })
              record.skipped = skipped
              // The broken build launches what the release skipped (C-ORD-22 left out).
              if (core.broken === "launch-skipped") for (const name of skipped) launched.add(name)
              core.note(`engine: P's group call returns: ${slots.map((slot, index) => `${members[index]?.name} ${slot._tag}`).join(", ")}`)
            })
          ),
          Effect.ensuring(endCall)
        )
        yield* spawnEngine(core, call)
      }),
    terminal: (child) =>
      Effect.gen(function*() {
        if (child.call === "waiting") return yield* Effect.sync(() => core.note(`engine: ${child.name} has not started; no terminal`))
        const runId = runIdOf(child.name)
        const supervised = child.call === "attached" && !child.detached
        const finished = child.finished
        child.runs++
        if (finished !== undefined) yield* Deferred.succeed(finished, undefined)
        if (supervised) {
          // Its foreground call returns with the result: no terminal notice (C-ORD-25 is about background children).
          core.note(`engine: ${runId} ends in P's foreground; the call returns its result`)
          return
        }
        child.detached = false
        const current = parent
        if (current === undefined) return
        const terminalAt = yield* Clock.currentTimeMillis
        const notice: TerminalNotice<string> = {
          owner: "P",
          runId,
          source: child.name,
          terminalAt,
          status: "completed",
          child: { ids: [child.id], names: [child.name] },
          notice: runId
        }
        const outcome = core.broken === "barrier-without-prelude"
          ? yield* Effect.exit(agent.dispatchTerminal({ prelude: [], terminal: notice }))
          : yield* Effect.exit(current.terminal(notice))
        core.note(`engine: terminal of ${runId} ${outcome._tag === "Success" ? "handed over" : "refused"}`)
        if (outcome._tag === "Success" && core.broken !== "barrier-without-prelude") terminalsTaken.push(runId)
      }),
    inCall: () => calls > 0,
    nextAsk: () => seenAsks.shift(),
    checkTerminals: () => {
      for (const runId of terminalsTaken) {
        if (!terminalsSurfaced.has(runId)) ledger.violate("wf-lost", `run ${runId}'s terminal, taken by the parent's barrier, never reached its model`)
      }
    },
    checkGroups: () => {
      for (const group of groups) {
        for (const name of group.skipped) {
          if (group.launched.has(name)) {
            ledger.violate("wf-skipped-launched", `${name} was skipped when its foreground group was released and was launched anyway`)
          }
        }
      }
    }
  }
}
