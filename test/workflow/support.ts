/**
 * Fakes for the stage-side workflow tests: a stage session that records
 * what it was given, a foreground handoff the test settles by hand, a
 * reply-error port that records what askers were told, and a session on the
 * in-memory bus over a host the test builds (`busMember`).
 */
import { Context, Deferred, Effect, Layer, Scope } from "effect"
import type { InboundMessage } from "../../src/client/events.ts"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { Host, type HostService } from "../../src/session/Host.ts"
import { IntercomSession, type IntercomSessionOptions, sessionRegistration } from "../../src/session/IntercomSession.ts"
import { memoryClientOptions } from "../client/support.ts"
import { closeOnSimulatedTime, type MemoryBroker, settle } from "../support/memory.ts"
import type { Message, SessionInfo } from "../../src/protocol/frames.ts"
import type { HandoffDisposition } from "../../src/workflow/DetachRoute.ts"
import type { ForegroundHandoff, ReplyErrorPort, StageSession } from "../../src/workflow/StageAdmission.ts"
import { stageEntryKey, type StageEntry, stageMessage } from "../../src/workflow/StageEntry.ts"

export const info = (id: string, name: string): SessionInfo => ({
  id,
  name,
  cwd: "/work",
  model: "test-model",
  pid: 1,
  startedAt: 0,
  lastActivity: 0,
  endpointEpoch: `epoch-${id}`
})

export const PEER = info("peer-0000-1111", "peer")
export const CHILD = info("child-0000-2222", "subagent-worker-run1-1")

export const inbound = (id: string, extra: Partial<Message> = {}, from: SessionInfo = PEER): InboundMessage => ({
  from,
  message: { id, timestamp: 0, content: { text: `text of ${id}` }, ...extra }
})

/** An ordinary message entry. */
export const note = (id: string, from: SessionInfo = PEER): StageEntry => stageMessage(inbound(id, {}, from))

/** A blocking ask entry. */
export const ask = (id: string, from: SessionInfo = PEER): StageEntry => stageMessage(inbound(id, { expectsReply: true }, from))

/** A short label for an entry in logs: its message or notice id. */
export const label = (entry: StageEntry): string => entry._tag === "Message" ? entry.inbound.message.id : entry.id

/** A timeline every fake writes to, in order. */
export type Log = Array<string>

/** A stage session whose busy flag the test sets and whose inserts are logged (`insert:<id>`). */
export const fakeSession = (log: Log, options: { busy?: boolean; failInsert?: (entry: StageEntry) => string | undefined } = {}) => {
  const state = { busy: options.busy ?? false, failInsert: options.failInsert }
  const session: StageSession = {
    isBusy: Effect.sync(() => state.busy),
    insert: (entry) =>
      Effect.suspend(() => {
        const refusal = state.failInsert?.(entry)
        if (refusal !== undefined) return Effect.fail(refusal)
        log.push(`insert:${label(entry)}`)
        return Effect.void
      })
  }
  return { session, state }
}

/** A foreground handoff whose outcome the test decides per entry with `settle`. */
export const manualHandoff = (log: Log) => {
  const waiting = new Map<string, Deferred.Deferred<HandoffDisposition>>()
  const slot = (entry: StageEntry) => {
    const key = stageEntryKey(entry)
    let deferred = waiting.get(key)
    if (deferred === undefined) {
      deferred = Deferred.makeUnsafe<HandoffDisposition>()
      waiting.set(key, deferred)
    }
    return deferred
  }
  const starts = new Map<string, Deferred.Deferred<void>>()
  const startOf = (entry: StageEntry) => {
    const key = stageEntryKey(entry)
    let deferred = starts.get(key)
    if (deferred === undefined) {
      deferred = Deferred.makeUnsafe<void>()
      starts.set(key, deferred)
    }
    return deferred
  }
  const handoff: ForegroundHandoff = (entry) =>
    Effect.suspend(() => {
      log.push(`handoff:${label(entry)}`)
      Deferred.doneUnsafe(startOf(entry), Effect.void)
      return Deferred.await(slot(entry))
    })
  const settle = (entry: StageEntry, disposition: HandoffDisposition) => Deferred.succeed(slot(entry), disposition)
  /** Waits until the stage has started the handshake for `entry` (a barrier, not a sleep). */
  const started = (entry: StageEntry) => Deferred.await(startOf(entry))
  return { handoff, settle, started }
}

/** A reply-error port that logs `replyError:<askId>:<text>`. */
export const recordingReplyError = (log: Log): ReplyErrorPort => (askMessage, text) =>
  Effect.sync(() => {
    log.push(`replyError:${askMessage.message.id}:${text}`)
  })

/**
 * A session `id` named `name` on `broker`, over the host `host` builds, in
 * a Scope of its own that the test's Scope closes; `close` closes it sooner
 * (the process ending), and a later `busMember` with the same id is its
 * restarted process.
 */
export const busMember = (
  broker: MemoryBroker,
  id: string,
  name: string,
  host: (identity: { name: string; cwd: string; model: string }) => HostService,
  client: Partial<IntercomClientOptions> = {},
  options: IntercomSessionOptions = {}
) =>
  Effect.gen(function*() {
    const identity = { name, cwd: "/tmp/project", model: "test-model" }
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer(options).pipe(
        Layer.provideMerge(Layer.merge(
          IntercomClient.layer(memoryClientOptions(broker, id, name, {
            registration: sessionRegistration({ sessionId: id, identity, pid: 4242, startedAt: 0 }),
            ...client
          })),
          Host.layer(host(identity))
        ))
      ),
      scope
    )
    const session = Context.get(context, IntercomSession)
    yield* settle(session.connect).pipe(Effect.orDie)
    return { session, client: Context.get(context, IntercomClient), close: closeOnSimulatedTime(scope) }
  })
