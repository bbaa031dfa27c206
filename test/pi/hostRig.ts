/**
 * A test rig for the pi host (`makePiHost`, src/pi/host.ts) without pi: a
 * typed fake of the part of pi's extension API and context the host calls
 * (`PiHostApi`, `PiHostContext`), which records what the host hands pi —
 * messages, session entries, events — and can refuse `sendMessage`, as pi
 * does when its session went stale. The entries appended are what
 * `getEntries` returns, so the host's journal reads back what it saved.
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

/** One pi host over the fake, and what it did to pi. */
export interface PiHostRig {
  readonly host: HostService
  readonly queued: QueuedInbound
  /** Every message pi accepted, in order. */
  readonly sent: ReadonlyArray<SentMessage>
  /** Every session entry the host appended (`custom` entries), in order. */
  readonly entries: ReadonlyArray<EntryView>
  /** pi's `sendMessage` throws for the next `count` messages (pi keeps none of them). */
  readonly refuseSends: (count: number) => void
  /** pi's agent runs (`isIdle` false: a message without a turn is held until the turn ends) or not. */
  readonly setBusy: (busy: boolean) => void
  /** The host's journal told a withdrawal, as the session's control fiber tells it (`InboundJournal.withdrawn`). */
  readonly withdrawn: NonNullable<NonNullable<HostService["journal"]>["withdrawn"]>
}

/**
 * A pi host for the session `sessionId` (interactive, with a UI, no checkpoint instance) over a fresh fake
 * pi session and a fresh `QueuedInbound`.
 */
export const makePiHostRig = (sessionId = "pi-session-1"): PiHostRig => {
  const sent: Array<SentMessage> = []
  const entries: Array<EntryView> = []
  let refusing = 0
  let busy = false
  let active: Array<string> = []
  const api: PiHostApi = {
    sendMessage: (message, options) => {
      if (refusing > 0) {
        refusing--
        throw new Error("This extension context is stale")
      }
      sent.push({ customType: message.customType, details: message.details, options })
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
    isIdle: () => !busy,
    sessionManager: { getEntries: () => entries }
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
    setBusy: (value) => {
      busy = value
    }
  }
}
