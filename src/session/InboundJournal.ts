/**
 * The inbound journal (C-DLV-14, C-DLV-16): nothing accepted from the broker
 * is lost in the hand-off to a host that keeps a saved history.
 *
 * The host stores the records (`Host.journal`); this module holds the rules:
 *
 * - an accepted message is checkpointed with the host *before* the host gets
 *   it, so a reload, a crash or a resume of the same saved session finds it;
 * - when a generation starts, the messages history holds
 *   (`InboundJournal.handled`, when the host tells) go into its
 *   de-duplication window, so a copy the broker sends again after a restart
 *   never reaches the agent twice (known issue 6); then every checkpointed
 *   message that the agent's history does not hold yet is handed over again,
 *   once, oldest first;
 * - a message handed over while the agent was busy (`steer`, or `followUp`
 *   for the sender's `queue`) that is still missing from history when the
 *   run settles was cleared before it reached the model (Esc clears both of
 *   the host's queues), and is handed over again; one that reached history
 *   is never handed over twice;
 * - a withdrawal (P73) of a message the agent's history may not hold yet is
 *   saved with the journal (`InboundJournal.withdrawn`), so the generation
 *   that hands it over again hands it over withdrawn, not live.
 *
 * It owns the set of such messages not yet seen in history, with the
 * withdrawal each got: a plain map touched only by synchronous code of this
 * generation's fibers.
 */
import { Effect, Schema } from "effect"
import { DeliveryModeField, Message, type MessageControl, SessionInfo } from "../protocol/frames.ts"
import type { HandledMessage, Inbound, InboundJournal, JournalRecord } from "./Host.ts"
import { type InboundContext, newerThanControl } from "./ReplyTracker.ts"

/**
 * A `JournalRecord` as a Schema, for journals that keep their records as
 * JSON (pi's session entries, a workflow parent's `ParentJournal`): what
 * they read back is checked against it, and the two keep the same fields.
 *
 * @category schemas
 * @since 0.1.0
 */
export const JournalRecordSchema = Schema.Struct({
  from: SessionInfo,
  message: Message,
  receivedAt: Schema.Finite,
  askTimeoutMs: Schema.optionalKey(Schema.Finite),
  /** The sender's delivery mode when not `steer` (`delivery-v1`); records saved before it have none. */
  delivery: Schema.optionalKey(DeliveryModeField),
  /** `supervisor` for a child's message on the supervisor channel; records saved before it have none. */
  channel: Schema.optionalKey(Schema.Literal("supervisor")),
  /** How its sender withdrew it (P73); journals that keep withdrawals apart (pi's) never store it here. */
  withdrawn: Schema.optionalKey(Schema.Literals(["cancel", "supersede"]))
})

/**
 * A message to hand over again, with how its sender withdrew it when the
 * journal says so (P73): it is then handed over passive, marked withdrawn.
 *
 * @category models
 * @since 0.1.0
 */
export interface Rehanded {
  readonly context: InboundContext
  readonly withdrawn: MessageControl["action"] | undefined
}

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/** A steered message the keeper watches, and how its sender withdrew it meanwhile. */
interface Steered {
  context: InboundContext
  withdrawn: MessageControl["action"] | undefined
}

/** Whether `a` and `b` are one message (a copy handed over again), not two under one reused (sender, id). */
const sameMessage = (a: InboundContext, b: InboundContext): boolean =>
  a.read !== undefined && b.read !== undefined ? a.read === b.read : a.message === b.message

/** Whether the journal's `record` is the checkpoint of `context`'s message: the same stamps, not only its key. */
const recordOf = (record: JournalRecord, context: InboundContext): boolean => {
  const saved = record.message.brokerReceivedAt
  const received = context.message.brokerReceivedAt
  return record.message.timestamp === context.message.timestamp &&
    (saved === undefined || received === undefined || saved === received)
}

/**
 * The journal side of one generation's inbound handling.
 *
 * @category models
 * @since 0.1.0
 */
export interface JournalKeeper {
  /**
   * Saves an accepted message before the host gets it: true once saved;
   * false when there is no journal, or it failed (logged, never fatal).
   */
  readonly checkpoint: (context: InboundContext) => Effect.Effect<boolean>
  /** Checkpointed messages the host's history lacks, to hand over when the generation starts. */
  readonly restore: Effect.Effect<ReadonlyArray<Rehanded>>
  /** Messages the host's history holds, oldest first, for the generation's de-duplication window (none when the host does not say). */
  readonly handled: Effect.Effect<ReadonlyArray<HandledMessage>>
  /** The host took a message; `steered`: into a busy agent's queue (a `steer` or a `followUp`), which Esc may clear. */
  readonly taken: (context: InboundContext, steered: boolean) => void
  /** The agent's run settled: the steered and follow-up messages history still lacks, to hand over again. */
  readonly cleared: Effect.Effect<ReadonlyArray<Rehanded>>
  /**
   * The sender withdrew a message (P73): every control the session reads
   * (but one of an earlier message under the id: `withdrawnEarlier`),
   * whether or not this generation received the message — one the host has
   * not taken (`waiting`), one it took, which its agent's history may not hold
   * yet, or one it never got. Told to the journal when it keeps withdrawals, which
   * saves it unless its agent has the message already (a failure is logged,
   * never fatal); a steered one is handed over withdrawn if cleared.
   * `prepared`: what the hand-off last prepared it as, when `waiting`.
   */
  readonly withdrawn: (
    fromId: string,
    messageId: string,
    action: MessageControl["action"],
    waiting: boolean,
    prepared: Inbound | undefined
  ) => Effect.Effect<void>
  /**
   * A control read (at read number `readBy`, stamped by the broker at `controlAt`) of an earlier message
   * than one under its (sender, id) that the session read or recorded since (review revbi BI1): the host's
   * journal, which knows a message by (sender, id) only, is told nothing — it would mark the newer one withdrawn.
   * A steered message watched under the key that is not known to be newer (`newerThanControl`) is the one the
   * control is about: handed over again withdrawn if cleared. The host is told (`InboundJournal.withdrawnEarlier`),
   * to mark such a message its agent still holds in its queue.
   */
  readonly withdrawnEarlier: (
    fromId: string,
    messageId: string,
    action: MessageControl["action"],
    readBy: number | undefined,
    controlAt: number | undefined
  ) => void
}

const toRehanded = (record: JournalRecord): Rehanded => ({
  context: {
    from: record.from,
    message: record.message,
    receivedAt: record.receivedAt,
    askTimeoutMs: record.askTimeoutMs,
    delivery: record.delivery,
    channel: record.channel
  },
  withdrawn: record.withdrawn
})

const toRecord = (context: InboundContext): JournalRecord => ({
  from: context.from,
  message: context.message,
  receivedAt: context.receivedAt,
  ...(context.askTimeoutMs === undefined ? {} : { askTimeoutMs: context.askTimeoutMs }),
  ...(context.delivery === undefined || context.delivery === "steer" ? {} : { delivery: context.delivery }),
  ...(context.channel === undefined ? {} : { channel: context.channel })
})

/** Reads the host's undelivered records; a failure counts as none (and is logged). */
const undeliveredIn = (
  undelivered: Effect.Effect<ReadonlyArray<JournalRecord>, unknown>
): Effect.Effect<ReadonlyArray<JournalRecord>> =>
  undelivered.pipe(
    Effect.catchCause((cause) =>
      Effect.as(Effect.logWarning("Intercom could not read the inbound journal", cause), [])
    )
  )

/** Reads what the host's history holds; a failure counts as none (and is logged). */
const handledIn = (journal: InboundJournal): Effect.Effect<ReadonlyArray<HandledMessage>> =>
  journal.handled === undefined ? Effect.succeed([]) : journal.handled.pipe(
    Effect.catchCause((cause) =>
      Effect.as(Effect.logWarning("Intercom could not read which messages the agent's history holds", cause), [])
    )
  )

/**
 * The journal rules over the host's journal. Without one every step is a
 * no-op; a journal that saves nothing (no `checkpoint` or no `undelivered`)
 * only tells what history holds (`handled`), and saves and restores nothing.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeJournalKeeper = (journal: InboundJournal | undefined): JournalKeeper => {
  /**
   * Steered and follow-up messages the host took that history did not hold yet, by (sender id, message id), each
   * with how its sender withdrew it meanwhile; several under one key (a sender reusing an id) in the order taken.
   */
  const steered = new Map<string, Array<Steered>>()
  const handled = journal === undefined ? Effect.succeed([]) : handledIn(journal)
  const checkpoint = journal?.checkpoint
  const undelivered = journal?.undelivered
  if (checkpoint === undefined || undelivered === undefined) {
    return {
      checkpoint: () => Effect.succeed(false),
      restore: Effect.succeed([]),
      handled,
      taken: () => {},
      cleared: Effect.succeed([]),
      withdrawn: () => Effect.void,
      withdrawnEarlier: () => {}
    }
  }
  const save = journal?.withdrawn
  const earlier = journal?.withdrawnEarlier
  return {
    checkpoint: (context) =>
      Effect.suspend(() => checkpoint(toRecord(context))).pipe(
        Effect.as(true),
        Effect.catchCause((cause) =>
          Effect.as(
            Effect.logWarning(
              `Intercom could not checkpoint message ${context.message.id}; it stays unconfirmed until the agent has it`,
              cause
            ),
            false
          )
        )
      ),
    restore: Effect.map(undeliveredIn(undelivered), (records) => records.map(toRehanded)),
    handled,
    taken: (context, wasSteered) => {
      if (!wasSteered) return
      const key = keyOf(context.from.id, context.message.id)
      const watched = steered.get(key)
      // The same message taken again (a copy Esc cleared, handed over again) keeps what was noted for it; another
      // message under the key (a newer one reusing the id) is watched beside it, so Esc hands both over again.
      const same = watched?.find((entry) => sameMessage(entry.context, context))
      if (same !== undefined) same.context = context
      else if (watched === undefined) steered.set(key, [{ context, withdrawn: undefined }])
      else watched.push({ context, withdrawn: undefined })
    },
    cleared: Effect.suspend(() => {
      if (steered.size === 0) return Effect.succeed([])
      return undelivered.pipe(
        Effect.map((records) => {
          const missing = new Map(records.map((record) => [keyOf(record.from.id, record.message.id), record]))
          const again: Array<Rehanded> = []
          for (const [key, watched] of steered) {
            const record = missing.get(key)
            if (record === undefined) continue
            for (const { context, withdrawn } of watched) {
              // The journal's mark too, for the message it names: it saved a withdrawal told before `taken`, which
              // this map never saw (review revbf BF3).
              again.push({ context, withdrawn: withdrawn ?? (recordOf(record, context) ? record.withdrawn : undefined) })
            }
          }
          // Either back in the hand-off or in history: no longer watched.
          steered.clear()
          return again
        }),
        // Unread, nothing is known of them: they stay watched, for the next settle to check.
        Effect.catchCause((cause) =>
          Effect.as(
            Effect.logWarning(
              `Intercom could not read the inbound journal; ${steered.size} message(s) cleared from the queue are checked again when the next run settles`,
              cause
            ),
            []
          )
        )
      )
    }),
    withdrawnEarlier: (fromId, messageId, action, readBy, controlAt) => {
      // The newest steered message under the key not known to be newer than the control is the one it is about.
      const watched = steered.get(keyOf(fromId, messageId))?.findLast((entry) => !newerThanControl(entry.context, readBy, controlAt))
      if (watched !== undefined) watched.withdrawn = action
      // The host's agent may still hold it in its queue (pi's steer or follow-up queue): marked there, saved nowhere.
      earlier?.(fromId, messageId, action, readBy, controlAt)
    },
    withdrawn: (fromId, messageId, action, waiting, prepared) =>
      Effect.suspend(() => {
        // Of the newest message under the key the session read (an earlier one's control goes to
        // `withdrawnEarlier`): the newest steered one, unless that message is still in the hand-off (`waiting`),
        // where an older steered one under the key is not it; but the one the hand-off handed over already is.
        const watched = steered.get(keyOf(fromId, messageId))
        const target = !waiting
          ? watched?.at(-1)
          : prepared === undefined
          ? undefined
          : watched?.find((entry) => entry.context.message === prepared.message)
        if (target !== undefined) target.withdrawn = action
        // Every withdrawal, not only of a message waiting or steered: a trigger the host took may not have entered
        // its agent's context yet either (pi holds one back while a run settles), and a control read between the
        // hand-off letting a message go and `taken` finds it neither (review revbd BD2, BD3). The host knows
        // whether its agent has the message already, and saves nothing then (src/pi/queuedInbound.ts).
        if (save === undefined) return Effect.void
        return save(fromId, messageId, action, waiting, prepared).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning(
              `Intercom could not save that message ${messageId} was withdrawn; a later session may hand it over live`,
              cause
            )
          )
        )
      })
  }
}
