/**
 * The pi `Host` of the session runtime: what `IntercomSession` needs from a
 * pi session, in pi's terms. Identity from the session name, cwd and model;
 * confirmation through `ctx.ui.confirm`; inbound messages as `intercom_message`
 * custom messages (idle → a triggered turn, busy → steered after the current
 * tool calls, or a follow-up after the run for a sender's `queue`, passive →
 * stored without a turn; one withdrawn while it waits in pi's queue enters
 * the model's context marked so, queuedInbound.ts); history records and the
 * inbound journal as session entries (`journal.ts`), each checkpoint naming
 * the client instance that received it (`instance.ts`); lazy exposure through
 * `pi.setActiveTools`.
 *
 * Every call goes through `PiAccess.touch`, which refuses once the generation
 * ended and turns pi's stale-context throw into a failure (C-ORD-35): a late
 * callback of an old generation never reaches the user.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent"
import * as Effect from "effect/Effect"
import type { HistoryEntry, HostService, Inbound } from "../session/Host.ts"
import { MESSAGE_TYPE, RECEIVED_ENTRY, SENT_ENTRY, WITHDRAWN_ENTRY } from "./entries.ts"
import {
  checkpointEntry,
  handledIn,
  type HistoryData,
  type MessageDetails,
  undeliveredIn,
  withdrawnEntry
} from "./journal.ts"
import { TOOL_NAME } from "./names.ts"
import type { EntryView } from "./journal.ts"
import { type HeldMessage, type QueuedInbound, savedDetails } from "./queuedInbound.ts"
import { makePiTopicStore } from "./topicStore.ts"

/**
 * The part of pi's extension API the host (and its topic store) calls: small
 * enough for a test to fake whole, typed (test/pi/hostRig.ts).
 *
 * @category models
 * @since 0.1.0
 */
export interface PiHostApi {
  readonly sendMessage: ExtensionAPI["sendMessage"]
  readonly appendEntry: ExtensionAPI["appendEntry"]
  readonly getActiveTools: ExtensionAPI["getActiveTools"]
  readonly setActiveTools: ExtensionAPI["setActiveTools"]
  readonly events: Pick<ExtensionAPI["events"], "emit">
}

/**
 * The part of pi's extension context the host (and its topic store) reads.
 *
 * @category models
 * @since 0.1.0
 */
export interface PiHostContext {
  readonly ui: Pick<ExtensionContext["ui"], "confirm" | "notify">
  readonly sessionManager: {
    readonly getEntries: () => ReadonlyArray<EntryView>
    readonly getLeafEntry: () => EntryView | undefined
  }
}

/**
 * The generation's guarded access to its pi session (`Api` and `Ctx`: what
 * its user calls of pi's extension API and context; the whole of each for
 * the generation).
 *
 * @category models
 * @since 0.1.0
 */
export interface PiAccess<Api = ExtensionAPI, Ctx = ExtensionContext> {
  /**
   * Runs `f` against the live pi session. Fails once the generation ended, or
   * when pi throws (a stale context after a reload or a session switch).
   */
  readonly touch: <A>(f: (pi: Api, ctx: Ctx) => A) => Effect.Effect<A, StaleSession>
  /**
   * As `touch`, and also while the generation closes — its runtime's
   * finalizers, which run inside pi's `session_shutdown`, while pi's context
   * is still the session's — for state the generation saves on its way out
   * (topic state). Fails once the close finished, or when pi throws.
   */
  readonly touchWhileClosing: <A>(f: (pi: Api, ctx: Ctx) => A) => Effect.Effect<A, StaleSession>
}

/**
 * The pi session this generation belonged to is gone (or pi refused the call).
 *
 * @category errors
 * @since 0.1.0
 */
export class StaleSession extends Error {
  /** Discriminates this error in unions. */
  readonly _tag = "StaleSession"
}

/**
 * The pi event that tells other extensions an intercom message was handed to
 * pi (`{ messageId, from, intent }`); the test harness waits on it.
 *
 * @category constants
 * @since 0.1.0
 */
export const INBOUND_EVENT = "effect-intercom:inbound"

/**
 * How each intent reaches pi's queue (`followUp`: after the current run, then a
 * turn of its own). `triggerTurn` on steer and followUp too: pi may have
 * gone idle meanwhile. Without a person (print and json modes) pi runs the
 * prompts it was given and exits, so an idle session is one about to run its
 * prompt (a resume) or about to exit: a message is added to the history
 * without starting a run of its own, which would collide with pi's prompt.
 */
const sendOptions = (intent: Inbound["intent"], interactive: boolean) =>
  intent === "trigger" && interactive
    ? { triggerTurn: true }
    : intent === "steer"
    ? { deliverAs: "steer" as const, triggerTurn: true }
    : intent === "followUp"
    ? { deliverAs: "followUp" as const, triggerTurn: true }
    : { triggerTurn: false }

const historyData = (entry: HistoryEntry): HistoryData =>
  entry._tag === "intercom_sent"
    ? {
      to: entry.to,
      message: {
        text: entry.message.text,
        ...(entry.message.attachments === undefined ? {} : { attachments: entry.message.attachments }),
        ...(entry.message.replyTo === undefined ? {} : { replyTo: entry.message.replyTo })
      },
      messageId: entry.messageId,
      timestamp: entry.timestamp
    }
    : {
      from: entry.from,
      message: {
        text: entry.message.text,
        ...(entry.message.attachments === undefined ? {} : { attachments: entry.message.attachments })
      },
      messageId: entry.messageId,
      timestamp: entry.timestamp
    }

/**
 * The host of one generation, for the pi session `sessionId`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makePiHost = (input: {
  readonly access: PiAccess<PiHostApi, PiHostContext>
  readonly sessionId: string
  readonly identity: HostService["identity"]
  readonly hasUI: boolean
  /** pi runs in the TUI or over RPC (it stays up between prompts). */
  readonly interactive: boolean
  /** The client instance each checkpoint names (`PiInstance.forCheckpoint`, instance.ts); undefined: none. */
  readonly checkpointInstance: Effect.Effect<string | undefined>
  /**
   * The client instances other live generations hold (instance.ts `liveInstances`): the undelivered messages
   * checkpointed by one of them are that generation's to hand over, not this one's (journal.ts `undeliveredIn`).
   */
  readonly leftTo: ReadonlySet<string>
  /** The session runtime's messages in pi's queue: those handed over with a turn, and their withdrawals. */
  readonly queued: QueuedInbound
}): HostService => {
  const { access, sessionId } = input
  /**
   * The `details` objects of the session's `intercom_message` entries, when pi holds a message watched under
   * (`fromId`, `messageId`) (a scan of the session, only then); undefined otherwise, or when pi refused.
   */
  const savedIfHeld = (fromId: string, messageId: string): Effect.Effect<ReadonlySet<unknown> | undefined> =>
    input.queued.holds(fromId, messageId)
      ? access.touch((_pi, ctx) => savedDetails(ctx.sessionManager.getEntries())).pipe(
        Effect.orElseSucceed(() => undefined)
      )
      : Effect.succeed(undefined)
  return {
    identity: input.identity,
    hasUI: input.hasUI,
    confirm: ({ text, title }) =>
      access.touch((_pi, ctx) => ctx.ui.confirm(title, text)).pipe(
        Effect.flatMap((answer) => Effect.promise(() => answer)),
        Effect.orElseSucceed(() => false)
      ),
    deliver: (inbound) =>
      access.touch((pi, ctx) => {
        const details: MessageDetails = {
          messageId: inbound.message.id,
          from: inbound.from,
          expectsReply: inbound.expectsReply,
          intent: inbound.intent
        }
        const options = sendOptions(inbound.intent, input.interactive)
        if (options.triggerTurn) {
          // With a turn to run it may wait in pi's queue, where a withdrawal can still reach it (queuedInbound.ts).
          // Noted first: pi's `message_end` of it must find it, however soon pi runs it.
          input.queued.handed(inbound, details)
          try {
            pi.sendMessage({ customType: MESSAGE_TYPE, content: inbound.text, display: true, details }, options)
          } catch (cause) {
            // pi does not have it: the hand-off tries again, and notes it then (review revbf BF4).
            input.queued.notHanded(inbound)
            throw cause
          }
        } else {
          // Without one, pi saves it before `sendMessage` returns, or, while its agent streams, holds it until the
          // turn ends (agent-session.js `sendCustomMessage`), keeping this content array and details object: a
          // withdrawal meanwhile rewrites them in place (queuedInbound.ts `HeldMessage`). Held exactly when pi's
          // newest entry is not this message (not `isIdle`: false while compacting, when pi saves it at once).
          const held: HeldMessage = { content: [{ type: "text", text: inbound.text }], details }
          pi.sendMessage({ customType: MESSAGE_TYPE, content: held.content, display: true, details }, options)
          const leaf = ctx.sessionManager.getLeafEntry()
          const saved = leaf?.type === "custom_message" && leaf.details === details
          input.queued.handedWithoutTurn(inbound, saved ? undefined : held)
        }
        pi.events.emit(INBOUND_EVENT, { messageId: inbound.message.id, from: inbound.from.id, intent: inbound.intent })
      }),
    record: (entry) =>
      access.touch((pi) => pi.appendEntry(entry._tag === "intercom_sent" ? SENT_ENTRY : RECEIVED_ENTRY, historyData(entry)))
        .pipe(Effect.ignore),
    journal: {
      checkpoint: (record) =>
        Effect.flatMap(
          input.checkpointInstance,
          (instance) => access.touch((pi) => pi.appendEntry(RECEIVED_ENTRY, checkpointEntry(sessionId, record, instance)))
        ),
      undelivered: access.touch((_pi, ctx) => undeliveredIn(sessionId, ctx.sessionManager.getEntries(), input.leftTo)),
      withdrawn: (fromId, messageId, action, waiting, prepared) =>
        Effect.flatMap(
          savedIfHeld(fromId, messageId),
          (saved) =>
            // Still in pi's queue (or about to be), or held by pi, it enters the model's context marked withdrawn
            // (queuedInbound.ts). Saved then, and for one the host took (`waiting` false), which history holds or
            // will: no process restores that, so the model is never shown withdrawn a message it has, but the next
            // process knows its withdrawal was told (`handledIn`) and tells it no second time (review revbt bt1).
            // Not for one the hand-off reports waiting that pi has in the model's context already (review revbf
            // BF4's passive case).
            input.queued.withdrawn(fromId, messageId, action, waiting, prepared, saved) || !waiting
              ? access.touch((pi) => pi.appendEntry(WITHDRAWN_ENTRY, withdrawnEntry(sessionId, fromId, messageId, action)))
              : Effect.void
        ),
      // An earlier message's control: marks that message if it still waits in pi's queue; saved nowhere, as the
      // journal knows a message by (sender, id) only and would mark the newer one too.
      withdrawnEarlier: (fromId, messageId, action, readBy, controlAt) =>
        Effect.runSync(Effect.flatMap(
          savedIfHeld(fromId, messageId),
          (saved) => Effect.sync(() => input.queued.withdrawnEarlier(fromId, messageId, action, readBy, controlAt, saved))
        )),
      handled: access.touch((_pi, ctx) => handledIn(sessionId, ctx.sessionManager.getEntries()))
    },
    topicStore: makePiTopicStore(access, sessionId),
    exposeTool: () =>
      access.touch((pi) => {
        const active = pi.getActiveTools()
        if (!active.includes(TOOL_NAME)) pi.setActiveTools([...active, TOOL_NAME])
      }).pipe(Effect.ignore)
  }
}
