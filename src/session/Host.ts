/**
 * Size note: about 415 lines, one concept (the port and its models); most of
 * it is the JSDoc each optional part needs (the journal's rules above all:
 * what is told when, and what a host may save).
 *
 * The `Host` port: what the session runtime needs from whatever runs the
 * agent — the pi extension, the CLI, or a simulated agent. A host implements
 * it in a few lines; everything about routing, waiting and replying stays in
 * `IntercomSession`.
 *
 * The host *pushes* lifecycle changes into the session (`setStatus`,
 * `beginTurn`/`endTurn`, `setIdentity`); the session *pushes* inbound messages
 * into the host (`deliver`) with the intent it decided on.
 */
import { Context, Data, Effect, Layer } from "effect"
import type { DeliveryMode } from "../protocol/deliveryModes.ts"
import type { Attachment, Message, MessageControl, SessionInfo } from "../protocol/frames.ts"
import type { TopicEntry, TopicRecord, TopicSubscription } from "../protocol/topics.ts"

/**
 * Who this session is. `name: undefined` presents the runtime-only fallback
 * alias `subagent-chat-<id prefix>` (C-TOOL-13).
 *
 * @category models
 * @since 0.1.0
 */
export interface HostIdentity {
  readonly name: string | undefined
  /** The working directory shown in `list` and in inbound renderings. */
  readonly cwd: string
  readonly model: string
}

/**
 * What the host should do with an inbound message:
 * - `trigger`: the agent is idle — start a turn with it (the session has
 *   queued it as that turn's context, see `IntercomSession.beginTurn`);
 * - `steer`: the agent is busy — hand it to the running turn at its next
 *   tool boundary (the default delivery, design "send defaults to steer");
 * - `followUp`: the agent is busy and the sender chose `queue` — keep it
 *   until the current work is done, then start a turn with it (pi's
 *   `deliverAs: "followUp"`);
 * - `passive`: show and store it, but start or steer no model turn (the
 *   sender chose `passive`, `inboundTrigger` said no, a busy headless
 *   session already answered it, or its sender withdrew it — P73 `cancel` or
 *   `supersede` — before the host took it: its text then says so).
 *
 * Replies that resolve this session's own blocking `ask` never reach the host:
 * they are the `ask` result (C-ORD-32).
 *
 * @category models
 * @since 0.1.0
 */
export type DeliveryIntent = "trigger" | "steer" | "followUp" | "passive"

/**
 * An inbound message as the session hands it to `HostService.deliver`.
 *
 * @category models
 * @since 0.1.0
 */
export interface Inbound {
  /** What the host should do with it. */
  readonly intent: DeliveryIntent
  /** The sender, as the broker described it. */
  readonly from: SessionInfo
  /** The message itself (id, timestamp, content, `replyTo`, `expectsReply`). */
  readonly message: Message
  /** The rendering the agent should see (C-DLV-18, with the reply hint of C-RPL-9). */
  readonly text: string
  /** True when the sender waits for a reply (a pending ask, see `pending`). */
  readonly expectsReply: boolean
  /** How the sender asked for it to be delivered (`delivery-v1`, C-DLV-1); `steer` when it did not say. */
  readonly delivery: DeliveryMode
  /**
   * `supervisor`: a delegated child's `contact_supervisor` message, as the
   * broker marked it (`supervisor-v1`): the sender is the child the
   * capability is bound to, and the text carries its run metadata (C-SUP-5).
   */
  readonly channel?: "supervisor" | undefined
  /**
   * The client's read number of the message (`InboundMessage.read`); none for
   * one restored from the journal. With its `message.brokerReceivedAt`, tells
   * it from an older message under the same (sender, id) that a control is
   * about (`InboundJournal.withdrawnEarlier`).
   */
  readonly read?: number | undefined
}

/**
 * What `HostService.deliver` fails with when the host can show no message
 * any more in this generation: where it puts them is gone (`intercom
 * watch`'s stdout, whose reader has left or whose disk is full). The message
 * was not taken. The hand-off treats it as final: no retry, no last attempt
 * when the generation closes, no abandonment warning, and the messages still
 * queued behind it are not handed over either; each stays where an abandoned
 * one would (the journal's, or unconfirmed with the client and then the
 * broker), so the session's next generation or process gets it (C-DLV-12).
 * `detail` is the system's error, e.g. `write EPIPE`.
 *
 * @category errors
 * @since 0.1.0
 */
export class HostOutputGone extends Data.TaggedError("HostOutputGone")<{ readonly detail: string }> {
  override get message(): string {
    return `The host cannot show messages any more (${this.detail}); the messages it did not take are left for the session's next process.`
  }
}

/**
 * Session-history records (C-TOOL-8): what went out (`intercom_sent`) and
 * the replies an `ask` received (`intercom_received`).
 *
 * @category models
 * @since 0.1.0
 */
export type HistoryEntry =
  | {
    readonly _tag: "intercom_sent"
    readonly to: string
    readonly message: {
      readonly text: string
      readonly attachments?: ReadonlyArray<Attachment> | undefined
      readonly replyTo?: string | undefined
    }
    readonly messageId: string
    readonly timestamp: number
  }
  | {
    readonly _tag: "intercom_received"
    readonly from: string
    readonly message: { readonly text: string; readonly attachments?: ReadonlyArray<Attachment> | undefined }
    readonly messageId: string
    readonly timestamp: number
  }

/**
 * An accepted inbound message as the host's journal keeps it (C-DLV-14):
 * enough to hand it over again in a later generation or process.
 *
 * @category models
 * @since 0.1.0
 */
export interface JournalRecord {
  readonly from: SessionInfo
  readonly message: Message
  /**
   * When the session accepted it: its pending-ask age counts from here, and
   * its asker's wait too, less the mailbox wait the broker stamped
   * (ReplyTracker.askExpiresAt).
   */
  readonly receivedAt: number
  /** For an ask: how long its asker waits (`ask-timeout-v1`). */
  readonly askTimeoutMs?: number | undefined
  /**
   * The sender's delivery mode (`delivery-v1`) when not `steer`: a restored
   * `passive` message must still start no turn (C-DLV-14), a `queue` one is
   * still a follow-up.
   */
  readonly delivery?: DeliveryMode | undefined
  /**
   * `supervisor` for a child's message on the supervisor channel
   * (`supervisor-v1`): restored, it is still its supervisor's (a workflow
   * parent reads a child's progress by it). Journals that do not keep it
   * restore such a message as a plain one.
   */
  readonly channel?: "supervisor" | undefined
  /**
   * How its sender withdrew it (P73) before the host took it, as the journal's
   * `withdrawn` saved it: restored, it is handed over passive, marked
   * withdrawn, its ask closed. Journals that keep no withdrawals never set it.
   */
  readonly withdrawn?: MessageControl["action"] | undefined
}

/**
 * A host's saved history of inbound messages (C-DLV-14, C-DLV-16), for hosts
 * whose sessions outlive a generation (a reload, a restart on the same saved
 * session). The session decides when to use it (`InboundJournal.ts`).
 *
 * A journal without `checkpoint` and `undelivered` (the two go together:
 * one without the other counts as neither) saves nothing: it only says what the
 * agent's history holds (`handled`; a headless host's handled log,
 * HandledLog.ts). A message then stays unconfirmed with the client until the
 * host took it, as for a host without a journal.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundJournal {
  /** Saves an accepted message, for this session, before the host is handed it. */
  readonly checkpoint?: (record: JournalRecord) => Effect.Effect<void, unknown>
  /**
   * The messages this session checkpointed that the agent's history does not
   * hold, oldest first. Records of another session (a fork's parent) never
   * count. Read only when there is a `checkpoint`.
   */
  readonly undelivered?: Effect.Effect<ReadonlyArray<JournalRecord>, unknown>
  /**
   * The sender of the checkpointed message `messageId` of `fromId` withdrew
   * it (P73, `action`): told for every withdrawal the session reads (but one
   * of an earlier message than one under the same id the session read or
   * recorded since, which this (sender, id) would name too), whether
   * or not it received the message (one not received yet is told again,
   * `waiting`, when it comes; one never received, or taken by the host
   * long ago, is told too). Saved when the agent's history may not hold the
   * message yet, so that `undelivered` returns its record with `withdrawn`
   * set; a host may also mark such a message still waiting in its agent's
   * queue (pi's extension does, and saves nothing for one its model has
   * already: src/pi/queuedInbound.ts). `waiting`: the session's hand-off
   * still held the message when the control was read — it may be about to
   * hand it over (live, then), or may have just handed it over; else the host
   * took it, and its agent may have read it already. `prepared`, when
   * `waiting`: what the hand-off last prepared the message as — the very
   * `Inbound` it gave `deliver`, if an attempt is in progress, which may have
   * handed it over already. Optional:
   * without it, a withdrawal lasts only as long as its generation, and a
   * message a later one restores is handed over live.
   */
  readonly withdrawn?:
    | ((
      fromId: string,
      messageId: string,
      action: MessageControl["action"],
      waiting: boolean,
      prepared: Inbound | undefined
    ) => Effect.Effect<void, unknown>)
    | undefined
  /**
   * A control the session read (at read number `readBy`, stamped by the
   * broker at `controlAt`) of an earlier message than one under its (sender,
   * id) that it read or recorded since: not saved (`withdrawn` would name the
   * newer one too), but a host may mark the earlier message if it still
   * waits in its agent's queue — a handed-over message (`Inbound`, with its
   * `read` and `message.brokerReceivedAt`) not known to be newer than the
   * control (`newerThanControl`, ReplyTracker.ts). Optional.
   */
  readonly withdrawnEarlier?:
    | ((
      fromId: string,
      messageId: string,
      action: MessageControl["action"],
      readBy: number | undefined,
      controlAt: number | undefined
    ) => void)
    | undefined
  /**
   * The messages the agent's history already holds, oldest first. A new
   * generation remembers them in its de-duplication window (C-DLV-11), so a
   * copy the broker sends again after a restart — a confirmation the old
   * process never got to write, or a broker crash before it stored one — is
   * dropped instead of reaching the agent twice. Optional: without it, such a
   * copy reaches a new process's host again (docs/testing.md, known issue 6).
   */
  readonly handled?: Effect.Effect<ReadonlyArray<HandledMessage>, unknown> | undefined
}

/**
 * A message the agent's history holds (`InboundJournal.handled`): who sent
 * it, its id, and when it was received when the journal knows (its
 * de-duplication window counts from there; from the generation's start when
 * not).
 *
 * @category models
 * @since 0.1.0
 */
export interface HandledMessage {
  readonly fromId: string
  readonly messageId: string
  readonly receivedAt?: number | undefined
  /**
   * How its sender withdrew it, when the journal was told (`withdrawn`) and saved it: a later generation tells
   * neither the host nor the sender of that withdrawal again (review revbt bt1).
   */
  readonly withdrawn?: MessageControl["action"] | undefined
}

/**
 * A session's topic state as a host persists it (C-TOP-15): subscriptions,
 * its own latest publications, and the records it received with the highest
 * revision of each that interrupted it.
 * @category models
 * @since 0.1.0
 */
export interface SavedTopicState {
  readonly subscriptions: ReadonlyArray<TopicSubscription>
  readonly publications: ReadonlyArray<TopicRecord>
  readonly received: ReadonlyArray<{ readonly entry: TopicEntry; readonly notifiedRevision: number }>
}

/**
 * Where a host keeps topic state outside model context (pi: `intercom-topic`
 * session entries). Restored when a generation starts, saved after every
 * change; a failure to restore is shown with `warn`, and messaging stays usable.
 * @category models
 * @since 0.1.0
 */
export interface TopicStore {
  /** The last saved state of this session; undefined when there is none. */
  readonly load: Effect.Effect<SavedTopicState | undefined, unknown>
  readonly save: (state: SavedTopicState) => Effect.Effect<void, unknown>
  /** Shows a warning to the person (a restore that failed). */
  readonly warn: (text: string) => Effect.Effect<void>
}

/**
 * What a host implements: its identity, whether a person is there to
 * confirm, and how it takes an inbound message. `headless(...)` builds one
 * for a host without a person.
 *
 * @category models
 * @since 0.1.0
 */
export interface HostService {
  /** Identity at start; later changes go through `IntercomSession.setIdentity`. */
  readonly identity: HostIdentity
  /** Whether a person can answer `confirm` (C-TOOL-7) — pi's `ctx.hasUI`. */
  readonly hasUI: boolean
  /** Asks the person to confirm a send; `false` cancels it. Only called when `hasUI`. */
  readonly confirm: (request: { readonly title: string; readonly text: string }) => Effect.Effect<boolean>
  /**
   * Takes an inbound message. A failure (or defect) is retried every 100 ms
   * while the generation lives, and once more when it closes (C-DLV-12); later
   * messages wait behind it. Failing with `HostOutputGone` instead says the
   * host can take no message for the rest of the generation: that one is not
   * retried and no later one is handed over, without a warning (see
   * `HostOutputGone`). Runs uninterruptibly: a generation that closes
   * meanwhile waits for it, so it must complete (succeed or fail) even when
   * its output fails; a success means the host took the message,
   * which is then never handed to it again. A host that waits inside may make
   * that wait `Effect.interruptible`, if an interruption there means it did
   * not take the message.
   */
  readonly deliver: (inbound: Inbound) => Effect.Effect<void, unknown>
  /** Stores a history record; hosts without history omit it. */
  readonly record?: ((entry: HistoryEntry) => Effect.Effect<void>) | undefined
  /**
   * A headless host that will exit when its current work is done, rather than
   * go idle: a busy such session answers an inbound ask with a canned reply
   * instead of leaving the asker waiting (C-DLV-13, open question 11).
   */
  readonly exitsWhenDone?: boolean | undefined
  /** The host's saved inbound history; without one, a message the host took is its own (C-DLV-14). */
  readonly journal?: InboundJournal | undefined
  /**
   * Makes the full `intercom` tool visible to the model, for hosts that expose
   * it lazily (C-TOOL-15). Called by `load_intercom`, on first use, and before
   * an actionable inbound message reaches the host.
   */
  readonly exposeTool?: (() => Effect.Effect<void>) | undefined
  /** Where topic state is kept across reloads (C-TOP-15); without one it lives as long as the generation. */
  readonly topicStore?: TopicStore | undefined
}

/**
 * The `Host` service an `IntercomSession` is built over.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Host } from "effect-intercom/session"
 *
 * const host = Host.layer({
 *   identity: { name: "planner", cwd: process.cwd(), model: "my-model" },
 *   hasUI: true,
 *   confirm: ({ text }) => Effect.succeed(text.length < 2000), // ask the person instead
 *   deliver: (inbound) => Effect.log(inbound.text),
 *   record: (entry) => Effect.log(entry._tag)
 * })
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class Host extends Context.Service<Host, HostService>()("effect-intercom/session/Host") {
  /** A layer providing `service` as the host. */
  static readonly layer = (service: HostService): Layer.Layer<Host> => Layer.succeed(Host, service)
}

/**
 * A host with no person attached: never asked to confirm (`hasUI: false`).
 * The CLI's `watch` and the simulation's agents are such hosts.
 *
 * @example
 * ```ts
 * import { Effect, Queue } from "effect"
 * import { headless, Host, type Inbound } from "effect-intercom/session"
 *
 * const program = Effect.gen(function*() {
 *   const inbox = yield* Queue.unbounded<Inbound>() // the "agent" reads its inbox
 *   const host = headless(
 *     { name: "reviewer", cwd: process.cwd(), model: "my-model" },
 *     (inbound) => Queue.offer(inbox, inbound),
 *     { exitsWhenDone: true } // when busy, answer asks with the non-interactive reply
 *   )
 *   return { inbox, hostLayer: Host.layer(host) }
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const headless = (
  identity: HostIdentity,
  deliver: HostService["deliver"],
  extra: Pick<HostService, "record" | "exitsWhenDone"> = {}
): HostService => ({
  identity,
  hasUI: false,
  confirm: () => Effect.succeed(true),
  deliver,
  ...extra
})
