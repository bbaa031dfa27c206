/**
 * What every part of one session generation shares: the client and the host,
 * the resolved options, the reply-waiter slot and the reply tracker, and the
 * few helpers they all use (connect, history records, background work).
 *
 * The slot and the tracker are plain objects touched only by synchronous code
 * of this generation's modules (between two yields of its fibers); the
 * `ended` flag is set once, by `retire`, when the generation's Scope closes.
 * A new concern gets this record and nothing else, so it can arrive as one
 * module plus a line of wiring in `IntercomSession.ts`.
 */
import { Duration, Effect, type Scope } from "effect"
import { IntercomNotConnected } from "../client/errors.ts"
import type { IntercomClientService } from "../client/IntercomClient.ts"
import { SessionEnded } from "./errors.ts"
import type { HistoryEntry, HostService } from "./Host.ts"
import type { AdmissionLimits } from "./InboundAdmission.ts"
import type { InboundTrigger, IntercomSessionOptions } from "./IntercomSession.ts"
import { makeReplyTracker, type ReplyTracker } from "./ReplyTracker.ts"
import { toolReplyCall } from "./render.ts"
import { makeReplyWaiterSlot, type ReplyWaiterSlot } from "./ReplyWaiter.ts"

/**
 * The default of `IntercomSessionOptions.askTimeoutMs`: 10 minutes (C-ASK-5).
 *
 * @category defaults
 * @since 0.1.0
 */
export const DEFAULT_ASK_TIMEOUT_MS = 600_000

/**
 * `IntercomSessionOptions` with every default filled in.
 *
 * @category models
 * @since 0.1.0
 */
export interface SessionSettings {
  readonly askTimeoutMs: number
  readonly replyHint: boolean
  readonly confirmSend: boolean
  readonly statusSuffix: string | undefined
  readonly inboundTrigger: InboundTrigger
  readonly inboundDedupe: AdmissionLimits | undefined
  readonly connectTimeoutMs: number
  /** How `pending` writes the call that answers an ask (`IntercomSessionOptions.replyCall`). */
  readonly replyCall: (messageId: string) => string
}

/**
 * Fills in the defaults of `IntercomSessionOptions`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const resolveSettings = (options: IntercomSessionOptions): SessionSettings => ({
  askTimeoutMs: options.askTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS,
  replyHint: options.replyHint ?? true,
  confirmSend: options.confirmSend ?? false,
  statusSuffix: options.statusSuffix,
  inboundTrigger: options.inboundTrigger ?? "always",
  inboundDedupe: options.inboundDedupe,
  connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
  replyCall: options.replyCall ?? toolReplyCall
})

/**
 * The shared state and helpers of one session generation (see the module
 * header). Built by `makeGeneration`, passed to every part of the session.
 *
 * @category models
 * @since 0.1.0
 */
export interface Generation {
  readonly client: IntercomClientService
  readonly host: HostService
  readonly settings: SessionSettings
  /** This session's id (the client's). */
  readonly selfId: string
  /** The single reply-waiter slot (C-ASK-1). */
  readonly slot: ReplyWaiterSlot
  /** Inbound asks still owed an answer, and the current turn's context (C-RPL). */
  readonly tracker: ReplyTracker
  /**
   * Registers on first use (C-TOOL-14). Bounded: while the broker is away the
   * client reconnects in the background, and a tool call must answer
   * `Intercom not connected` rather than hang (C-TOOL-12).
   */
  readonly connect: Effect.Effect<void, IntercomNotConnected>
  /** Runs work that must not hold up its caller, owned (and interrupted) by this generation; failures are ignored. */
  readonly background: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<void>
  /** A send, reply or receive happened: republishes this session's health (C-HLT-8). */
  readonly noteActivity: Effect.Effect<void>
  /**
   * Inbound asks were retired without a send or receive (their asker left, withdrew or replaced
   * them, or the broker holds no ask for them): republishes `pendingAsks` (C-HLT-3).
   */
  readonly pendingChanged: Effect.Effect<void>
  /** Stores a history record with the host, if it keeps any; never fails. */
  readonly record: (entry: HistoryEntry) => Effect.Effect<void>
  /**
   * Ends the generation (C-ORD-35): later calls answer `Intercom not
   * connected: the intercom session has ended`, and a wait in progress ends
   * with `SessionEnded`. The wiring runs it first when the Scope closes.
   */
  readonly retire: Effect.Effect<void>
}

/**
 * Builds the shared record of a generation whose Scope is the current one.
 * `afterConnect` runs after every successful `connect` (the presence
 * publisher's refresh).
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeGeneration = (input: {
  readonly client: IntercomClientService
  readonly host: HostService
  readonly settings: SessionSettings
  readonly afterConnect: Effect.Effect<void>
  /** See `Generation.noteActivity` (the presence publisher's). */
  readonly noteActivity?: Effect.Effect<void> | undefined
  /** See `Generation.pendingChanged` (the presence publisher's `markDirty`). */
  readonly pendingChanged?: Effect.Effect<void> | undefined
  /** The reply tracker, when the caller shares it (the presence publisher counts its asks). */
  readonly tracker?: ReplyTracker | undefined
}): Effect.Effect<Generation, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { client, host, settings } = input
    const scope = yield* Effect.scope
    let ended = false
    const slot = makeReplyWaiterSlot()
    const timeout = Duration.millis(settings.connectTimeoutMs)

    return {
      client,
      host,
      settings,
      selfId: client.sessionId,
      slot,
      tracker: input.tracker ?? makeReplyTracker(settings.askTimeoutMs),
      noteActivity: input.noteActivity ?? Effect.void,
      pendingChanged: input.pendingChanged ?? Effect.void,
      connect: Effect.suspend(() =>
        ended
          ? Effect.fail(new IntercomNotConnected({ reason: "the intercom session has ended" }))
          : client.connect.pipe(
            Effect.timeoutOrElse({
              duration: timeout,
              orElse: () =>
                Effect.fail(
                  new IntercomNotConnected({ reason: `no connection within ${settings.connectTimeoutMs} ms` })
                )
            }),
            Effect.andThen(input.afterConnect)
          )
      ),
      background: (effect) => Effect.asVoid(Effect.forkIn(Effect.ignore(effect), scope)),
      record: (entry) =>
        host.record === undefined ? Effect.void : host.record(entry).pipe(Effect.catchCause(() => Effect.void)),
      retire: Effect.sync(() => {
        ended = true
        slot.teardown(new SessionEnded())
      })
    }
  })
