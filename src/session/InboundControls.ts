/**
 * The control fiber's rules: how a generation applies what the broker says
 * about messages already sent — a control (cancel / supersede, P73) about a
 * message this session got or is still to get, a `supersedes` that does the
 * same from the message itself, and the receipts and `reply-elsewhere-v1`
 * notices that end this session's own wait.
 *
 * A sender cancelling or superseding a message drops its pending ask (P73);
 * one the host has not taken yet — or not yet received: the controls are
 * another stream — is handed over passive, marked withdrawn (InboundIntent.ts's
 * `prepare`), starting no turn, its ask closed as soon as it is recorded. The
 * hand-off keeps the withdrawal of a waiting message, the journal saves it (so
 * a later generation restoring the message hands it over withdrawn too), and
 * the client's own record of the controls it read (`IntercomClient.withdrawal`)
 * covers a message not received here yet, or handled by an earlier generation
 * of the same client — and forgets a control once a new message under its id
 * is read, which a record kept here did not (review revax AX-B1). The control
 * fiber acts on every control it reads, also one that record has forgotten by
 * the time it gets there (review revbf BF1: it forgets by count and age too,
 * and a withdrawn message waiting in the hand-off was handed over live).
 *
 * A control of an earlier message than one under the same id — the client read
 * the newer one after it (the control's read number, `read`, lower than the
 * message's: `readSince`), or, for a message with no read number (restored
 * from the journal), the broker received the newer one after it stamped the
 * control (its `timestamp` before the message's `brokerReceivedAt`; read
 * numbers, when both are known, decide alone: review revbm BM1) — withdraws
 * nothing of the newer one, whether it waits in the hand-off, was taken, or is
 * still to come, and answers nothing under the id: a fiber lagging behind an
 * old message's control, or an old control given again after a restart,
 * leaves a new message under the reused id live (reviews revbb BB2, revbi
 * BI2). The earlier message's ask, if the host took it, is closed all the same
 * (review revbi BI1); the host's journal, which knows a message by (sender,
 * id) only, saves nothing, but may mark it in its agent's queue
 * (`JournalKeeper.withdrawnEarlier`). With neither mark the control withdraws
 * the message.
 *
 * A message whose `supersedes` names one still waiting in the hand-off, or one
 * the host took that this session handled (the admission window knows it),
 * withdraws it as its control would, when the client read no such control
 * (`supersededBy`): a message restored from the journal may never get its
 * control (helper sim7022, task supkeep). Such withdrawals, and the ones the
 * journal restores, are noted (UnreadWithdrawals.ts) so that neither a later
 * control nor a second `supersedes` tells the host or the sender again.
 *
 * Why a module of its own: these rules are one concern — a withdrawal judged
 * against the message it is about — read and reviewed apart from the message
 * fiber's admission (Inbound.ts). It owns no state: the hand-off, admission
 * window, journal keeper and unread withdrawals are its generation's, passed
 * in once (`ControlPorts`). The message fiber calls `supersededBy`; the
 * fiber `run` starts applies the rest.
 */
import { Clock, Effect, type Scope, Stream } from "effect"
import type { ReceiptStatus } from "../protocol/frames.ts"
import { AskAnsweredElsewhere, AskExpired, AskSuperseded } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { HostHandoff } from "./HostHandoff.ts"
import type { InboundAdmission } from "./InboundAdmission.ts"
import type { JournalKeeper } from "./InboundJournal.ts"
import type { InboundContext } from "./ReplyTracker.ts"
import type { UnreadWithdrawals } from "./UnreadWithdrawals.ts"

/**
 * What the control rules need of their generation's inbound handling, built
 * once per generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface ControlPorts {
  /** The generation: its client, waiter slot, reply tracker and `pendingChanged`. */
  readonly generation: Generation
  /** The hand-off to the host, which keeps the withdrawal of a message still waiting. */
  readonly handoff: HostHandoff
  /** The de-duplication window: whether this session handled a message. */
  readonly admission: InboundAdmission
  /** The host journal's rules: where a withdrawal is saved. */
  readonly journal: JournalKeeper
  /** Withdrawals made with no control read behind them. */
  readonly unreadWithdrawals: UnreadWithdrawals
  /** Posts a receipt about `messageId` to its sender (queued on the connection, never waited for). */
  readonly receipt: (messageId: string, status: ReceiptStatus, detail?: string) => Effect.Effect<void>
}

/**
 * The control rules of one generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundControls {
  /**
   * P73 from the message itself: `context` names `replaced` in `supersedes`,
   * and the client read no control for it. Called by the message fiber
   * before it hands `context` over.
   */
  readonly supersededBy: (context: InboundContext, replaced: string) => Effect.Effect<void>
  /** Starts the control fiber in the current Scope (the generation's): one per `IntercomClient.controls`. */
  readonly run: Effect.Effect<void, never, Scope.Scope>
}

/**
 * Builds the control rules of a generation; nothing runs until `run`.
 *
 * @example
 * ```ts
 * const controls = makeInboundControls({ generation, handoff, admission, journal, unreadWithdrawals, receipt })
 * yield* controls.run
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeInboundControls = (ports: ControlPorts): InboundControls => {
  const { admission, generation, handoff, journal, receipt, unreadWithdrawals } = ports
  const { client, slot, tracker } = generation

  /**
   * P73 from the message itself: `context` names `replaced` in `supersedes`, and the client read no control for
   * it (the broker sends that control first, and the control fiber acts on it). The message under that id is
   * withdrawn as the control would withdraw it — the control may never come: a message restored from the
   * journal was read by a process that ended before it confirmed it, and the broker keeps the control only for
   * that process's client instance, or drops it with the copy it did not queue again (helper sim7022). Still
   * waiting in the hand-off, it is handed over withdrawn; taken by the host already (restored and taken as the
   * generation started, or held by the agent's history: the admission window knows it), its ask is closed and
   * the journal told (`waiting` false), as for a control about a taken message (task supkeep) — but not one
   * this session never handled: nothing says it was read here. Judged with the superseding message's read
   * number and broker stamp, which the control would carry, so a newer message under the id is left live.
   * Once only: a withdrawal made here, restored, or held by the agent's history, is noted (`unreadWithdrawals`).
   */
  const supersededBy = (context: InboundContext, replaced: string): Effect.Effect<void> =>
    Effect.gen(function*() {
      const { from, message, read } = context
      // Read first: from the record's check to its note nothing yields, so the control fiber cannot act between (bt4).
      const now = yield* Clock.currentTimeMillis
      if ((yield* client.withdrawal(from.id, replaced)) !== undefined) return
      if (unreadWithdrawals.get(from.id, replaced) !== undefined) return
      const controlAt = message.brokerReceivedAt
      const { already, prepared, waiting } = handoff.withdraw(from.id, replaced, "supersede", read, controlAt)
      if (already !== undefined) return
      if (
        !waiting && (!admission.seen(from.id, replaced, now) || tracker.recordedSince(from.id, replaced, read, controlAt))
      ) return
      unreadWithdrawals.note(from.id, replaced, "supersede", true)
      tracker.askWithdrawn(from.id, replaced, read, controlAt)
      yield* journal.withdrawn(from.id, replaced, "supersede", waiting, prepared)
      yield* generation.pendingChanged
      yield* receipt(replaced, "superseded")
    })

  const run = Effect.asVoid(Effect.forkScoped(
    client.controls.pipe(
      Stream.runForEach((event) => {
        if (event._tag === "Receipt") {
          // The broker dropped a question still waited on (C-DLV-9), or a later message of the same replace
          // thread took its place before delivery: no reply can come, so the wait ends now, with its reason.
          const { detail, messageId, status } = event.receipt
          if (status === "expired") {
            slot.expired(messageId, new AskExpired({ questionId: messageId, reason: detail ?? "it expired" }))
          } else if (status === "superseded") {
            slot.expired(messageId, new AskSuperseded({ questionId: messageId, reason: detail ?? "a later message replaced it" }))
            // A staged answer of this session replaced before delivery: the ask it answered is owed again.
            if (tracker.replyDropped(messageId)) return generation.pendingChanged
            return Effect.void
          }
          tracker.replySettled(messageId)
          return Effect.void
        }
        // `reply-elsewhere-v1`: a question was answered, its reply handed to another instance of this session (told
        // at registration, or behind a resend); none will come here, so the wait ends now rather than at its timeout.
        if (event._tag === "AnsweredElsewhere") {
          const waiter = slot.current()
          if (waiter === undefined || waiter.questionId !== event.messageId) return Effect.void
          const target = waiter.targetName ?? waiter.targetId ?? "the asked session"
          slot.expired(event.messageId, new AskAnsweredElsewhere({ questionId: event.messageId, replyId: event.replyId, target }))
          return Effect.void
        }
        if (event._tag !== "Control") return Effect.void
        // P73: the sender withdrew or replaced a message. Its ask is closed, not answered: the turn it triggered
        // keeps it, and a reply there is refused as withdrawn rather than taken as the answer to another ask.
        const { from, read } = event
        const { action, messageId, timestamp } = event.control
        return Effect.gen(function*() {
          // Not taken by the host yet: it keeps the withdrawal, and is prepared again before its next attempt.
          // Not received yet: the client's record of the control (`withdrawal`) tells `handOver` when it comes.
          // A newer message under the same id — read by the client after the control (review revbb BB2), or
          // received by the broker after it stamped the control (restored, review revbi BI2) — is left live.
          const { already, prepared, waiting } = handoff.withdraw(from.id, messageId, action, read, timestamp)
          if (already !== undefined) return
          // Taken by the host withdrawn already, with no control read for it (restored so, or by a `supersedes`):
          // this control is that withdrawal's, told once (task supkeep) — its sender answered now if an earlier
          // process saved it and may have ended before it answered (review revbt bt2).
          if (!waiting && unreadWithdrawals.get(from.id, messageId) !== undefined) {
            const owed = unreadWithdrawals.answer(from.id, messageId)
            if (owed !== undefined) yield* receipt(messageId, owed === "cancel" ? "cancellation_requested" : "superseded")
            return
          }
          // A message under this id read by the client after the control (this fiber lagged behind), or recorded
          // here and received by the broker after the control: the control is an earlier one's, and that earlier
          // one is not waiting here. Asked only then, so the client's record forgetting the control by count or
          // age never skips one (review revbf BF1).
          if (
            !waiting && (
              tracker.recordedSince(from.id, messageId, read, timestamp) ||
              (read !== undefined && (yield* client.readSince(from.id, messageId, read)))
            )
          ) {
            // Its ask, if the host took it, is closed all the same, and a steered copy Esc clears is handed over
            // again withdrawn; a newer ask under the id stays open (review revbi BI1). The host's journal saves
            // nothing and the sender is told nothing: the journal knows a message by (sender, id) only, and would
            // mark the newer message withdrawn too; the host may mark the old one still in its agent's queue.
            tracker.askWithdrawn(from.id, messageId, read, timestamp)
            journal.withdrawnEarlier(from.id, messageId, action, read, timestamp)
            return yield* generation.pendingChanged
          }
          tracker.askWithdrawn(from.id, messageId, read, timestamp)
          // Saved for a later generation that hands it over again (restored, or cleared from a busy agent's queue).
          yield* journal.withdrawn(from.id, messageId, action, waiting, prepared)
          yield* generation.pendingChanged
          yield* receipt(messageId, action === "cancel" ? "cancellation_requested" : "superseded")
        })
      })
    ),
    { startImmediately: true }
  ))

  return { supersededBy, run }
}
