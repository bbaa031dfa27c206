/**
 * The parent's side of the bus-hosted workflow world (`BusParent.ts`): the
 * recorder (the engine's run table, what the parent's host accepted, what
 * reached its agent's model, in order), the agent whose ports write the
 * model, the host that builds `makeParentSession` (with a `ParentJournal`
 * when the parent restarts) in each session generation, and the checks on
 * the model: `wf-bus-terminal-order` (C-ORD-25), `wf-bus-lost` and
 * `wf-bus-duplicate` (C-DLV-14 for a parent), `wf-bus-terminal-lost` (every
 * terminal the barrier took reaches the model).
 *
 * The recorder is plain data written only by synchronous steps of the
 * driver and of the parent's ports.
 */
import { Effect } from "effect"
import type { InboundMessage } from "../../client/events.ts"
import type { SessionInfo } from "../../protocol/frames.ts"
import type { Inbound } from "../../session/Host.ts"
import { inboundEntry, inboundMessageOf, supervisorSourceOf } from "../../workflow/InboundAdapter.ts"
import type { EntrySource } from "../../workflow/InboundEntry.ts"
import * as ParentJournal from "../../workflow/ParentJournal.ts"
import { makeParentSession, type ParentAgent, type ParentEntry, type ParentSession } from "../../workflow/ParentSession.ts"
import type { TerminalBatch } from "../../workflow/TerminalBarrier.ts"
import type { AgentHost } from "../SimAgent.ts"

/** One run's view of the parent: the engine's run table and the parent's model. */
export interface Recorder {
  busy: boolean
  parent: ParentSession<string> | undefined
  readonly runs: Map<string, number>
  readonly childIds: Map<string, string>
  /** Per run id: message ids the parent's host accepted, in order. */
  readonly accepted: Map<string, Array<string>>
  /** What reached the parent's model, in order: message ids and `terminal:<run>`. */
  readonly model: Array<string>
  /** Per run id: what was accepted before the engine handed over its terminal. */
  readonly before: Map<string, ReadonlyArray<string>>
  acceptedCount: number
  /** Per child: the `terminalAt` of its last terminal. */
  readonly lastTerminalAt: Map<string, number>
  /** Messages sent before their child's last terminal but accepted after it (held up by a fault). */
  lateCount: number
  /** Accepted messages whose source the parent read from the supervisor channel's run metadata. */
  supervisorCount: number
  /** Every message the parent's host accepted (in any generation), by id. */
  readonly acceptedIds: Set<string>
  /** Progress the parent dropped for a finished child (C-DLV-17): it reaches no port, by design. */
  readonly dropped: Set<string>
  /** Messages each generation's journal restored, summed. */
  restoredCount: number
  /** Runs whose terminal the engine handed over and the parent's barrier took, in order. */
  readonly handedTerminals: Array<string>
  note: (text: string) => void
}

export const runIdOf = (recorder: Recorder, child: string): string => `run-${child}-${recorder.runs.get(child) ?? 1}`

/** The engine's view of a sender: a child's plain sends carry its current run (C-ORD-24). */
const resolverOf = (recorder: Recorder) => (from: SessionInfo): EntrySource | undefined =>
  from.name !== undefined && recorder.runs.has(from.name)
    ? { subagentRunId: runIdOf(recorder, from.name), subagentAgent: from.name }
    : undefined

export const agentOf = (recorder: Recorder): ParentAgent<string> => {
  const push = (entries: ReadonlyArray<ParentEntry>) => {
    for (const entry of entries) recorder.model.push(entry.messageId)
  }
  return {
    isIdle: Effect.sync(() => !recorder.busy),
    deliverBatch: (batch) => Effect.sync(() => push(batch)),
    surface: (entry) => Effect.sync(() => push([entry])),
    passive: (entry) => Effect.sync(() => push([entry])),
    dispatchTerminal: (batch: TerminalBatch<InboundMessage, string>) =>
      Effect.sync(() => {
        recorder.note(`parent model ← ${batch.prelude.length} claimed message(s), then the terminal of ${batch.terminal.runId}`)
        push(batch.prelude)
        recorder.model.push(`terminal:${batch.terminal.runId}`)
      })
  }
}

/**
 * The parent session's host: records acceptance, then the real workflow composition decides. With
 * `journalFile`, each generation keeps a `ParentJournal` over it (made in the generation's Scope, so the
 * next generation's opens once this one closed); `marks: false` (a broken build) leaves out its agent
 * wrapper, so it never hears what the agent took.
 */
export const parentHost = (
  recorder: Recorder,
  journalFile: string | undefined,
  options: { readonly marks?: boolean } = {}
): AgentHost => (context) =>
  Effect.gen(function*() {
    const resolveSource = resolverOf(recorder)
    const journal = journalFile === undefined ? undefined : yield* Effect.orDie(ParentJournal.make(journalFile))
    const drops = (entries: ReadonlyArray<ParentEntry>) =>
      Effect.sync(() => {
        for (const entry of entries) recorder.dropped.add(entry.messageId)
      })
    const agent = agentOf(recorder)
    // Without marks (a broken build), the journal never hears that the agent took a message.
    const parent = yield* makeParentSession(journal === undefined || options.marks === false ? agent : journal.agent(agent), {
      generation: context.generation,
      busySteer: "queue",
      resolveSource,
      onDropped: journal === undefined ? drops : (entries) => Effect.andThen(drops(entries), journal.dropped(entries))
    })
    recorder.parent = parent
    recorder.note = context.note
    const deliver = (inbound: Inbound) =>
      Effect.suspend(() => {
        // The source as the parent reads it: the supervisor channel's run metadata, else resolveSource.
        const source = inboundEntry(inboundMessageOf(inbound), { resolveSource }).source
        // A message handed over again (a refused hand-off retried, or restored by a restarted parent's
        // journal) was recorded the first time.
        const first = !recorder.acceptedIds.has(inbound.message.id)
        if (first && source !== undefined && source.subagentAgent !== undefined) {
          recorder.childIds.set(source.subagentAgent, inbound.from.id)
          const list = recorder.accepted.get(source.subagentRunId) ?? []
          list.push(inbound.message.id)
          recorder.accepted.set(source.subagentRunId, list)
          recorder.acceptedCount++
          if (supervisorSourceOf(inboundMessageOf(inbound)) !== undefined) recorder.supervisorCount++
          if (inbound.message.timestamp <= (recorder.lastTerminalAt.get(source.subagentAgent) ?? -1)) recorder.lateCount++
        }
        recorder.acceptedIds.add(inbound.message.id)
        return parent.deliver(inbound)
      })
    if (journal === undefined) return deliver
    return {
      deliver,
      journal: {
        ...journal.journal,
        undelivered: Effect.tap(journal.journal.undelivered, (records) =>
          Effect.sync(() => {
            recorder.restoredCount += records.length
            if (records.length > 0) context.note(`journal: ${records.length} message(s) the last process's idle queue held are handed over again`)
          }))
      }
    }
  })

/** C-DLV-14 for a parent: every message its host accepted reaches its model once (or was dropped as C-DLV-17 says). */
export const checkModel = (recorder: Recorder): Array<string> => {
  const violations: Array<string> = []
  const counts = new Map<string, number>()
  for (const label of recorder.model) counts.set(label, (counts.get(label) ?? 0) + 1)
  for (const id of recorder.acceptedIds) {
    const count = counts.get(id) ?? 0
    if (count === 0 && !recorder.dropped.has(id)) {
      violations.push(`wf-bus-lost: message ${id}, accepted by the parent's host, never reached its model`)
    } else if (count > 1) {
      violations.push(`wf-bus-duplicate: message ${id} reached the parent's model ${count} times`)
    }
  }
  return violations
}

/** Every terminal the parent's barrier took reaches its model, once (`wf-bus-terminal-lost`, `wf-bus-duplicate`). */
export const checkTerminals = (recorder: Recorder): Array<string> => {
  const violations: Array<string> = []
  for (const runId of recorder.handedTerminals) {
    const count = recorder.model.filter((label) => label === `terminal:${runId}`).length
    if (count === 0) violations.push(`wf-bus-terminal-lost: ${runId}'s terminal, taken by the parent, never reached its model`)
    if (count > 1) violations.push(`wf-bus-duplicate: ${runId}'s terminal reached the parent's model ${count} times`)
  }
  return violations
}

/** C-ORD-25 on the bus-hosted parent: accepted before the terminal ⇒ in the model before it. */
export const checkTerminalOrder = (recorder: Recorder): { violations: Array<string>; checked: number } => {
  const violations: Array<string> = []
  let checked = 0
  const position = new Map<string, number>()
  recorder.model.forEach((label, index) => {
    if (!position.has(label)) position.set(label, index)
  })
  for (const [runId, before] of recorder.before) {
    const at = position.get(`terminal:${runId}`)
    if (at === undefined) continue
    for (const id of before) {
      checked++
      const surfaced = position.get(id)
      if (surfaced === undefined || surfaced > at) {
        violations.push(
          `wf-bus-terminal-order: ${runId}'s message ${id} was accepted by the parent before its terminal and ${
            surfaced === undefined ? "never surfaced" : "surfaced after it"
          }`
        )
      }
    }
  }
  return { violations, checked }
}

/** A recorder before the run: every child in its first run, nothing accepted. */
export const makeRecorder = (children: ReadonlyArray<string>): Recorder => ({
  busy: false,
  parent: undefined,
  runs: new Map(children.map((child) => [child, 1])),
  childIds: new Map(),
  accepted: new Map(),
  model: [],
  before: new Map(),
  acceptedCount: 0,
  lastTerminalAt: new Map(),
  lateCount: 0,
  supervisorCount: 0,
  acceptedIds: new Set(),
  dropped: new Set(),
  restoredCount: 0,
  handedTerminals: [],
  note: () => undefined
})
