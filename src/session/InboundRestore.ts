/**
 * What a generation takes over from its host's journal before its inbound
 * fibers start: the messages the agent's history holds (remembered as
 * handled, so the broker's copy of one is dropped: known issue 6), and the
 * ones an earlier generation or process accepted that the agent never saw,
 * handed over again first (C-DLV-14).
 *
 * A restored message the journal saved withdrawn is handed over withdrawn;
 * one a later restored message of its sender supersedes — both checkpointed,
 * the control never saved, both confirmed, so the broker gives nothing again
 * — is handed over withdrawn too, as the control would have had it, and its
 * sender told (review revbp BP4). Both, and the withdrawals the history
 * holds, are noted (UnreadWithdrawals.ts) so a control read later tells no
 * one a second time (review revbt bt1).
 *
 * Why a module of its own: it runs once per generation, before anything is
 * read, and its rules (the order the window remembers in, which restored
 * message another supersedes) are about the journal's records, not about a
 * message read now. It owns no state: what it fills is its generation's
 * (`RestorePorts`).
 */
import { Clock, Effect } from "effect"
import type { MessageControl, ReceiptStatus } from "../protocol/frames.ts"
import type { InboundAdmission } from "./InboundAdmission.ts"
import type { JournalKeeper } from "./InboundJournal.ts"
import type { InboundContext } from "./ReplyTracker.ts"
import type { UnreadWithdrawals } from "./UnreadWithdrawals.ts"

/**
 * What the restore needs of its generation's inbound handling.
 *
 * @category models
 * @since 0.1.0
 */
export interface RestorePorts {
  /** The de-duplication window, told what the agent's history holds. */
  readonly admission: InboundAdmission
  /** The host journal's rules: what it holds handled and undelivered. */
  readonly journal: JournalKeeper
  /** Withdrawals made with no control read behind them. */
  readonly unreadWithdrawals: UnreadWithdrawals
  /** Records a message and queues it for the host (Inbound.ts `handOver`); `known`: how it was withdrawn already. */
  readonly handOver: (context: InboundContext, known?: MessageControl["action"]) => Effect.Effect<void>
  /** Posts a receipt about `messageId` to its sender (queued on the connection, never waited for). */
  readonly receipt: (messageId: string, status: ReceiptStatus, detail?: string) => Effect.Effect<void>
}

/**
 * Remembers what the host's history holds, then hands over what the journal
 * holds undelivered, in its order. Run once, before the generation's message
 * fiber starts.
 *
 * @example
 * ```ts
 * yield* restoreInbound({ admission, journal, unreadWithdrawals, handOver, receipt })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const restoreInbound = (ports: RestorePorts): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { admission, handOver, journal, receipt, unreadWithdrawals } = ports
    // What the agent's history holds already: a copy the broker sends again is a duplicate (known issue 6).
    // Remembered before anything is handed over, so no commit of this generation comes before them in the
    // window's order (where the capacity bound would forget it first).
    const started = yield* Clock.currentTimeMillis
    for (const held of yield* journal.handled) {
      admission.remember(held.fromId, held.messageId, held.receivedAt ?? started, started)
      // Withdrawn in an earlier process, which saved it: told no second time (review revbt bt1).
      if (held.withdrawn !== undefined) unreadWithdrawals.note(held.fromId, held.messageId, held.withdrawn, false)
    }
    // C-DLV-14: what an earlier generation or process accepted and the agent never saw comes first.
    const restored = yield* journal.restore
    // One a later restored message of its sender supersedes — both checkpointed, the control never saved, both
    // confirmed, so the broker gives nothing again — is handed over withdrawn, as the control would have had it
    // (review revbp BP4); its sender is told, as the control fiber would have after the save it never made.
    const supersededLater = new Set<string>()
    const superseded: Array<boolean> = []
    for (let i = restored.length - 1; i >= 0; i--) {
      const { context } = restored[i]!
      superseded[i] = supersededLater.has(`${context.from.id}\u0000${context.message.id}`)
      const named = context.message.supersedes
      if (named !== undefined) supersededLater.add(`${context.from.id}\u0000${named}`)
    }
    for (let i = 0; i < restored.length; i++) {
      const { context, withdrawn } = restored[i]!
      if (withdrawn !== undefined) unreadWithdrawals.note(context.from.id, context.message.id, withdrawn, false)
      if (withdrawn !== undefined || superseded[i] !== true) {
        yield* handOver(context, withdrawn)
        continue
      }
      unreadWithdrawals.note(context.from.id, context.message.id, "supersede", true)
      yield* handOver(context, "supersede")
      yield* journal.withdrawn(context.from.id, context.message.id, "supersede", true, undefined)
      yield* receipt(context.message.id, "superseded")
    }
  })
