/**
 * The parent session of the workflow world and its children: the real idle
 * queue, terminal barrier, detach handshake and parent inbox of
 * `effect-intercom/workflow`, composed the way an engine composes them, over
 * a simulated host whose model-visible queue is the ledger's `model` list.
 *
 * Children send plain messages, progress updates and asks to the parent,
 * answer its questions, run in its foreground, detach, and end with
 * terminal notices (retried while the host refuses them).
 */
import { Clock, Deferred, Effect, Scope } from "effect"
import type { IdleQueue } from "../../workflow/IdleQueue.ts"
import { makeIdleQueue } from "../../workflow/IdleQueue.ts"
import type { InboundEntry } from "../../workflow/InboundEntry.ts"
import { DispatchError, type TerminalAdmissionError } from "../../workflow/orderingErrors.ts"
import { makeParallelGroup } from "../../workflow/ParallelRelease.ts"
import { makeParentInbox, type ParentInbox } from "../../workflow/ParentInbox.ts"
import { makeTerminalBarrier, type TerminalBarrier, type TerminalNotice } from "../../workflow/TerminalBarrier.ts"
import { type ForegroundSlot, makeForegroundSlot, type SimChild } from "./foreground.ts"
import { spawn, type WorldCore } from "./links.ts"

/** What a child sends its parent. */
export type ChildMessageKind = "send" | "progress" | "ask"

/** The parent and its children. */
export interface SimParent {
  readonly children: ReadonlyArray<SimChild>
  readonly slot: ForegroundSlot
  readonly idleQueue: IdleQueue<string>
  readonly inbox: ParentInbox<string>
  readonly barrier: TerminalBarrier<string>
  /** Whether the parent is running a turn or a foreground tool call. */
  readonly setBusy: (busy: boolean) => Effect.Effect<void>
  readonly isBusy: () => boolean
  /** A child's message reaches the parent; returns its label. */
  readonly childSends: (child: SimChild, kind: ChildMessageKind) => Effect.Effect<string>
  /** The parent asks a child; returns the ask id. */
  readonly asks: (child: SimChild) => Effect.Effect<string>
  /** The child answers the parent's open question, if there is one. */
  readonly childReplies: (child: SimChild) => Effect.Effect<string | undefined>
  /** The child's run ends: its terminal notice goes through the barrier (retried while refused). */
  readonly terminal: (child: SimChild, options?: { readonly requestId?: boolean; readonly duplicate?: boolean }) => Effect.Effect<void>
  /** A resumed run (C-ORD-30). */
  readonly resume: (child: SimChild) => void
  /**
   * The parent runs `members` as a foreground parallel group (the real
   * `ParallelRelease`), at most `concurrency` at once: one accepted commit
   * releases every running member, and those still waiting are skipped
   * (C-ORD-21, C-ORD-22). A member's task lasts until its terminal.
   */
  readonly foregroundGroup: (members: ReadonlyArray<SimChild>, concurrency: number) => Effect.Effect<void>
}

/** How often a refused terminal is retried, and how many times. */
const TERMINAL_RETRY_MS = 100
const TERMINAL_RETRIES = 100

/** Builds the parent in the current Scope. */
export const makeSimParent = (core: WorldCore, childCount: number): Effect.Effect<SimParent, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { faults, ledger } = core
    const scope = yield* Effect.scope
    let busy = false
    // A foreground group member's task waits for its run's terminal here.
    const finished = new Map<SimChild, Deferred.Deferred<void>>()
    const finishedOf = (child: SimChild) => {
      const done = finished.get(child)
      finished.delete(child)
      if (done !== undefined) Deferred.doneUnsafe(done, Effect.void)
    }
    const questions = new Map<string, string>() // ask id → child id
    const surfacedTerminals = new Set<string>()

    /** The host's model-visible queue: takes entries (and a terminal) unless a refusal fault is armed. */
    const toModel = (
      entries: ReadonlyArray<InboundEntry<string>>,
      terminal?: TerminalNotice<string>
    ): Effect.Effect<void, DispatchError> =>
      Effect.suspend(() => {
        const total = entries.length + (terminal === undefined ? 0 : 1)
        const refuse = faults.refuseAfter
        const taken = refuse !== undefined && refuse < total ? refuse : total
        const items = entries.slice(0, taken).map((entry) => entry.payload)
        if (taken === total && terminal !== undefined) items.push(`terminal:${terminal.runId}`)
        if (items.length > 0) ledger.note(`   parent model ← ${items.join(", ")}`)
        for (const entry of entries.slice(0, taken)) ledger.ended(entry.payload, "model")
        if (taken < total) {
          faults.refuseAfter = undefined
          ledger.note(`   parent host refuses after ${taken} of ${total} item(s)`)
          return Effect.fail(new DispatchError({ delivered: taken, reason: "the simulated host refused" }))
        }
        if (terminal !== undefined) {
          if (surfacedTerminals.has(terminal.runId)) ledger.violate("wf-duplicate", `run ${terminal.runId}'s terminal reached the parent twice`)
          surfacedTerminals.add(terminal.runId)
          ledger.terminalSurfaced(terminal.runId, terminal.terminalAt)
        }
        return Effect.void
      })

    const idleQueue = yield* makeIdleQueue<string>({ isIdle: Effect.sync(() => !busy), deliverBatch: (batch) => toModel(batch) })
    const barrier = yield* makeTerminalBarrier<string, string>(idleQueue, {
      dispatch: (batch) => toModel(batch.prelude, batch.terminal)
    })
    const slot = yield* makeForegroundSlot(core, "parent")
    const inbox = makeParentInbox<string>({
      routeReply: (entry) =>
        Effect.sync(() => {
          // C-ORD-32: exact sender and replyTo.
          if (entry.replyTo === undefined || questions.get(entry.replyTo) !== entry.senderId) return false
          questions.delete(entry.replyTo)
          ledger.ended(entry.payload, "reply")
          return true
        }),
      isIdle: Effect.sync(() => !busy),
      surface: (entry) => toModel([entry])
    }, idleQueue, slot.handshake)

    const children: Array<SimChild> = Array.from({ length: childCount }, (_, i) => ({
      name: `c${i + 1}`,
      id: `id-c${i + 1}`,
      runId: `run-c${i + 1}-1`,
      runs: 1,
      done: false,
      detached: false
    }))

    const entryOf = (child: SimChild, label: string, kind: ChildMessageKind | "reply", now: number, replyTo?: string): InboundEntry<string> => ({
      messageId: label,
      senderId: child.id,
      senderName: child.name,
      timestamp: now,
      expectsReply: kind === "ask",
      replyTo,
      source: { subagentRunId: child.runId, subagentAgent: "worker" },
      threadId: kind === "progress" ? `thread-${child.runId}` : undefined,
      progress: kind === "progress",
      payload: label
    })

    const receive = (entry: InboundEntry<string>) =>
      spawn(core, Effect.tap(inbox.receive(entry), (outcome) =>
        Effect.sync(() => ledger.note(`   parent inbox: ${entry.messageId} ${outcome._tag}${outcome._tag === "queued" ? ` (${outcome.handoff ?? "no handoff"})` : ""}`))))

    const admitTerminal = (notice: TerminalNotice<string>): Effect.Effect<unknown, TerminalAdmissionError | DispatchError> =>
      core.broken === "barrier-without-prelude"
        ? idleQueue.claimAndDispatch(() => () => false, (prelude) => toModel(prelude, notice))
        : barrier.admit(notice)

    const retryTerminal = (notice: TerminalNotice<string>, attempt: number): Effect.Effect<void> =>
      Effect.matchEffect(admitTerminal(notice), {
        onSuccess: () => Effect.void,
        onFailure: (error) =>
          attempt >= TERMINAL_RETRIES
            ? Effect.sync(() => ledger.note(`   terminal of ${notice.runId} given up: ${error.message}`))
            : Effect.andThen(Effect.sleep(TERMINAL_RETRY_MS), Effect.suspend(() => retryTerminal(notice, attempt + 1)))
      })

    return {
      children,
      slot,
      idleQueue,
      inbox,
      barrier,
      isBusy: () => busy,
      setBusy: (value) =>
        Effect.suspend(() => {
          busy = value
          ledger.note(`parent is ${value ? "busy" : "idle"}`)
          return value ? Effect.void : idleQueue.wake
        }),
      childSends: (child, kind) =>
        Effect.gen(function*() {
          const label = core.nextLabel()
          const now = yield* Clock.currentTimeMillis
          ledger.accepted(label, child.name, "parent", { ask: kind === "ask", runId: child.runId })
          ledger.note(`${child.name} ${kind} ${label} → parent`)
          yield* receive(entryOf(child, label, kind, now))
          return label
        }),
      asks: (child) =>
        Effect.sync(() => {
          const askId = core.nextLabel("q")
          questions.set(askId, child.id)
          ledger.note(`parent asks ${child.name} (${askId})`)
          return askId
        }),
      childReplies: (child) =>
        Effect.gen(function*() {
          const open = [...questions].find(([, id]) => id === child.id)
          if (open === undefined) return undefined
          const label = core.nextLabel()
          const now = yield* Clock.currentTimeMillis
          ledger.accepted(label, child.name, "parent", { ask: false })
          ledger.note(`${child.name} replies ${label} to ${open[0]}`)
          yield* receive(entryOf(child, label, "reply", now, open[0]))
          return label
        }),
      terminal: (child, options = {}) =>
        Effect.gen(function*() {
          const terminalAt = yield* Clock.currentTimeMillis
          const notice: TerminalNotice<string> = {
            owner: "parent",
            runId: child.runId,
            requestId: options.requestId === false ? undefined : `completion-${child.runId}`,
            source: child.name,
            terminalAt,
            status: "completed",
            child: { ids: [child.id], names: [child.name] },
            notice: child.runId
          }
          child.done = true
          slot.leave(child)
          finishedOf(child)
          ledger.note(`${child.name}'s run ${child.runId} completes (terminal${options.duplicate === true ? ", delivered twice" : ""})`)
          yield* spawn(core, retryTerminal(notice, 0))
          if (options.duplicate === true) yield* spawn(core, retryTerminal(notice, 0))
        }),
      foregroundGroup: (members, concurrency) =>
        Effect.gen(function*() {
          let released = false
          const task = (child: SimChild) => (release: Effect.Effect<void>) =>
            Effect.gen(function*() {
              // C-ORD-22: a task still waiting at the release is never launched.
              if (released) ledger.violate("wf-skipped-launched", `${child.name} was launched after its foreground group was released`)
              if (child.done) return
              const done = Deferred.makeUnsafe<void>()
              finished.set(child, done)
              yield* slot.join(child, Effect.andThen(Effect.sync(() => {
                released = true
              }), release))
              yield* Deferred.await(done)
            })
          const group = yield* makeParallelGroup(members.map(task), { concurrency }).pipe(Scope.provide(scope))
          ledger.note(`parent runs ${members.map((child) => child.name).join(", ")} as a foreground parallel group (${concurrency} at once)`)
          yield* spawn(core, Effect.tap(group.aggregate, (slots) =>
            Effect.sync(() => ledger.note(`   the group's subagent call returns: ${slots.map((slot) => slot._tag).join(", ")}`))))
        }),
      resume: (child) => {
        child.runs++
        child.runId = `run-${child.name}-${child.runs}`
        child.done = false
        child.detached = false
        ledger.note(`${child.name} resumes as ${child.runId}`)
      }
    }
  })
