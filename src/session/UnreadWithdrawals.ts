/**
 * The withdrawals a session generation made with no control read by its client behind them: a message the host
 * journal restored already withdrawn (the last process saved its control), or one a later message of its sender
 * withdrew by naming it in `supersedes` (the control may never come: InboundControls.ts `supersededBy`).
 *
 * Why: the client's own record of the controls it read (`IntercomClient.withdrawal`) passes each control on once,
 * and the hand-off knows the withdrawal of a message still waiting (`HostHandoff.withdraw`'s `already`). Neither
 * knows these once the host took the message: a second `supersedes` naming it, or its real control read later
 * (the broker kept it for this client instance), would withdraw it again — its sender answered twice, the journal
 * told twice, a cancelled one relabelled superseded. This record says it was withdrawn here already.
 *
 * A withdrawal an earlier process saved (restored withdrawn, or held by the agent's history so: `HandledMessage.
 * withdrawn`) is noted unanswered: that process saved it before it answered its sender, and may have ended between
 * the two, so the real control given again (the broker keeps it for this client instance) answers the sender once
 * (`answer`), telling the host nothing (review revbt bt2). One made here was answered here.
 *
 * Owner: one generation's inbound handling (Inbound.ts builds it), on its message and control fibers: noted by its
 * restore (InboundRestore.ts) and `supersededBy`, read by the control rules (InboundControls.ts), forgotten by the
 * message fiber's admission (Inbound.ts); no state outside the generation. Bounded: the newest MAX_KEPT, the oldest forgotten first (a control that late, or a repeated
 * `supersedes`, is then acted on again, as before this record). A new message read under a key forgets it
 * (`forget`): a withdrawal of the old message is not the new one's.
 */
import type { MessageControl } from "../protocol/frames.ts"

/** Withdrawals remembered, at most: far more than a generation restores or sees superseded without a control. */
const MAX_KEPT = 1024

/** A message's key: its sender's session id and its id (two senders may use one id). */
const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/** A noted withdrawal: how, and whether its sender was answered (here, or not known of an earlier process). */
interface Noted {
  readonly action: MessageControl["action"]
  answered: boolean
}

/** Withdrawals made with no control read behind them, by sender and message id (see the module header). */
export class UnreadWithdrawals {
  private readonly byKey = new Map<string, Noted>()

  /**
   * The message `messageId` of `fromId` was withdrawn by `action`, with no control read for it here. `answered`:
   * its sender was answered here (false: an earlier process saved the withdrawal, its answer not known to be sent).
   */
  note(fromId: string, messageId: string, action: MessageControl["action"], answered: boolean): void {
    const key = keyOf(fromId, messageId)
    this.byKey.delete(key)
    this.byKey.set(key, { action, answered })
    if (this.byKey.size > MAX_KEPT) {
      const oldest = this.byKey.keys().next()
      if (oldest.done !== true) this.byKey.delete(oldest.value)
    }
  }

  /** How that message was withdrawn here, if it was (and is still remembered). */
  get(fromId: string, messageId: string): MessageControl["action"] | undefined {
    return this.byKey.size === 0 ? undefined : this.byKey.get(keyOf(fromId, messageId))?.action
  }

  /** How that message was withdrawn, when its sender is owed the answer (noted unanswered): answered from now on. */
  answer(fromId: string, messageId: string): MessageControl["action"] | undefined {
    const noted = this.byKey.size === 0 ? undefined : this.byKey.get(keyOf(fromId, messageId))
    if (noted === undefined || noted.answered) return undefined
    noted.answered = true
    return noted.action
  }

  /** A new message under that key was read: what was withdrawn before is not it. */
  forget(fromId: string, messageId: string): void {
    if (this.byKey.size > 0) this.byKey.delete(keyOf(fromId, messageId))
  }
}
