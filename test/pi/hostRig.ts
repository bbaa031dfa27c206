/**
 * A test rig for the pi host (`makePiHost`, src/pi/host.ts) without pi: a
 * typed fake of the part of pi's extension API and context the host calls
 * (`PiHostApi`, `PiHostContext`), which records what the host hands pi —
 * messages, session entries, events — and can refuse `sendMessage`, as pi
 * does when its session went stale. The entries appended are what
 * `getEntries` returns, so the host's journal reads back what it saved. A
 * message without a turn is saved as a `custom_message` entry at once, or,
 * while the agent streams, held until `flush` — its content and details
 * kept by reference, as pi's `sendCustomMessage` and
 * `_flushPendingCustomMessages` keep them.
 */
import { Effect } from "effect"
import { type PiAccess, type PiHostApi, type PiHostContext, makePiHost, StaleSession } from "../../src/pi/host.ts"
import type { EntryView } from "../../src/pi/journal.ts"
import { makeQueuedInbound, type QueuedInbound } from "../../src/pi/queuedInbound.ts"
import type { HostService } from "../../src/session/Host.ts"

/** A message the host handed pi (`sendMessage`), with its options. */
export interface SentMessage {
  readonly customType: string
  readonly details: unknown
  readonly options: { readonly triggerTurn?: boolean; readonly deliverAs?: string } | undefined
}

/** A session entry of the fake: a `custom_message` entry carries the content pi was handed. */
export interface RigEntry extends EntryView {
  readonly content?: unknown
}

/** One pi host over the fake, and what it did to pi. */
export interface PiHostRig {
  readonly host: HostService
  readonly queued: QueuedInbound
  /** Every message pi accepted, in order. */
  readonly sent: ReadonlyArray<SentMessage>
  /** Every session entry: those the host appended (`custom`), and the messages pi saved (`custom_message`), in order. */
  readonly entries: ReadonlyArray<RigEntry>
  /** pi's `sendMessage` throws for the next `count` messages (pi keeps none of them). */
  readonly refuseSends: (count: number) => void
  /**
   * What pi does: `idle`; `streaming` (an agent run: a message without a turn is held until `flush`);
   * `compacting` (pi's `isIdle` is false, but it does not stream: a message without a turn is saved at once).
   */
  readonly setPhase: (phase: "idle" | "streaming" | "compacting") => void
  /** pi's turn ends: the messages it held are saved (`custom_message` entries), in order. */
  readonly flush: () => void
  /** The host's journal told a withdrawal, as the session's control fiber tells it (`InboundJournal.withdrawn`). */
  readonly withdrawn: NonNullable<NonNullable<HostService["journal"]>["withdrawn"]>
}

/**
 * A pi host for the session `sessionId` (interactive, with a UI, no checkpoint instance) over a fresh fake
 * pi session and a fresh `QueuedInbound`.
 */
export const makePiHostRig = (sessionId = "pi-session-1"): PiHostRig => {
  const sent: Array<SentMessage> = []
  const entries: Array<RigEntry> = []
  let refusing = 0
  let phase: "idle" | "streaming" | "compacting" = "idle"
  const held: Array<RigEntry> = []
  let active: Array<string> = []
  const api: PiHostApi = {
    sendMessage: (message, options) => {
      if (refusing > 0) {
        refusing--
        throw new Error("This extension context is stale")
      }
      sent.push({ customType: message.customType, details: message.details, options })
      if (options?.triggerTurn === true) return
      const saved: RigEntry = {
        type: "custom_message",
        customType: message.customType,
        content: message.content,
        details: message.details
      }
      if (phase === "streaming") held.push(saved)
      else entries.push(saved)
    },
    appendEntry: (customType, data) => void entries.push({ type: "custom", customType, data }),
    getActiveTools: () => [...active],
    setActiveTools: (names) => {
      active = [...names]
    },
    events: { emit: () => {} }
  }
  const ctx: PiHostContext = {
    ui: { confirm: () => Promise.resolve(false), notify: () => {} },
    sessionManager: { getEntries: () => entries, getLeafEntry: () => entries.at(-1) }
  }
  const touch = <A>(f: (pi: PiHostApi, ctx: PiHostContext) => A): Effect.Effect<A, StaleSession> =>
    Effect.try({ try: () => f(api, ctx), catch: (cause) => new StaleSession(String(cause)) })
  const access: PiAccess<PiHostApi, PiHostContext> = { touch, touchWhileClosing: touch }
  const queued = makeQueuedInbound()
  const host = makePiHost({
    access,
    sessionId,
    identity: { name: "rig", cwd: "/tmp/rig", model: "m" },
    hasUI: true,
    interactive: true,
    checkpointInstance: Effect.succeed(undefined),
    leftTo: new Set(),
    queued
  })
  const withdrawn = host.journal?.withdrawn
  if (withdrawn === undefined) throw new Error("the pi host's journal keeps no withdrawals")
  return {
    host,
    queued,
    withdrawn,
    sent,
    entries,
    refuseSends: (count) => {
      refusing = count
    },
    setPhase: (value) => {
      phase = value
    },
    flush: () => {
      entries.push(...held.splice(0))
    }
  }
}
