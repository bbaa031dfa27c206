/**
 * Size: about 420 lines, one concept (each message's fate at the end), most
 * of it the classification's cases, each with the seed that taught it.
 *
 * The end of a run: the fate of every acknowledged message — delivered,
 * sender told, lost to a crash, lost in flight, a question's copy dropped
 * as answered, dropped after its one-shot sender ended (no notice owed) —
 * or the violation that
 * nothing excuses (docs/testing.md, "The invariants"). In durable mode a
 * crash excuses nothing: the store should have kept the message
 * (`crash-loss`).
 */
import type { Message } from "../../protocol/frames.ts"
import { DeliveryCode } from "../../protocol/delivery.ts"
import { crossesGroup, type LedgerState, mayCross, type MessageRecord, nameOf, type Read } from "./state.ts"
import {
  cancelledCopyCrashed,
  cancelledUnread,
  checkControls,
  checkSupersedesHeard,
  receiverBackTo,
  supersededUnread,
  withdrawnAfterRead,
  withdrawnOnTheWay
} from "./controls.ts"
import { answeredQuestions, checkAskExpiry, checkExpiredAfterAnswer, owedExpiry, retriesAnswered } from "./askExpiry.ts"
import { checkReplaceLatest, wasReplaced } from "./delivery.ts"
import { violate } from "./trace.ts"
import type { GroupTally, MessageTally } from "./types.ts"

/** An acknowledged message nothing explains yet, to resend to the broker's replay record. */
export interface Unexplained {
  readonly sender: string
  readonly target: string
  readonly message: Message
  /** Sent as a child's `supervisor_send`: resend it the same way. */
  readonly channel: "supervisor" | undefined
}

/**
 * Acknowledged messages that were never delivered, never written anywhere,
 * with no failure notice and (in memory mode) no broker crash to explain them,
 * questions owed their expiry whose asker was not told (`owedExpiry`,
 * wherever they went), and answered questions never handed to their target
 * (`retriesAnswered`: a retry must not hear they expired): the world asks the broker's replay record about each
 * (a resend from the sender with the same id) before `finish` classifies them.
 */
export const unexplained = (state: LedgerState): ReadonlyArray<Unexplained> => {
  const out: Array<Unexplained> = []
  const answered = answeredQuestions(state)
  for (const record of state.messages.values()) {
    const lost = record.reads.length === 0 && record.writtenTo.length === 0 && record.delivery?.replaced !== true &&
      (state.durable || !(record.ackEpoch !== undefined && state.crashedEpochs.has(record.ackEpoch)))
    if (
      record.outcome === "acked" && record.hostDeliveries === 0 && !record.expiredNotified && record.target !== undefined &&
      (lost || owedExpiry(state, record) || retriesAnswered(state, record, answered))
    ) out.push({ sender: record.sender, target: record.target, message: record.message, channel: record.channel })
  }
  return out
}

/** What the replay record answered for a resend of `messageId` (a delivery code, or "delivered"). */
export const recordSaid = (state: LedgerState, messageId: string, answer: string): void => {
  const record = state.messages.get(messageId)
  if (record !== undefined) record.recordSays = answer
}

/**
 * Whether the question `record`, whose ask ended at or after `since`
 * without a reply, can have gone back to its broker's mailbox, where the
 * broker drops a question whose ask is over:
 * - the broker that accepted it crashed;
 * - a connection it was written to ended (to the broker, at or after
 *   `since`): what its client never confirmed goes back;
 * - it was never written, and a connection it was queued to (`queuedTo`)
 *   ended with it still in its outbox, or before it got there. It had left
 *   that outbox if the connection was handed a later message of the same
 *   sender (`passedOn`: one from the question's sender whose `acceptSeq` is
 *   above the question's `ackMark`): the broker keeps each sender's order
 *   towards a session, and an outbox is first in, first out. Not another
 *   sender's: the question may have been parked on its sender's reader,
 *   behind that sender's mail to a full outbox (Output.ts), while another
 *   sender's later message went straight into the outbox; refused at the
 *   connection's end, it goes back (`--parked-flush --unregister --delivery`
 *   seed 53143). An honest broker drops a question that sat unwritten (in
 *   the outbox of a client that stopped reading, or parked) when that
 *   connection ends, however long after the ask; one that loses it on a
 *   connection that reads on is caught, whenever that connection ends, if
 *   its sender sent there again.
 *
 * A question whose connections are not known (queued, staged, restored: it
 * may reach one opened later) went back if any connection of its target
 * ended at or after `since`.
 */
const wentBack = (
  state: LedgerState,
  record: MessageRecord,
  since: number,
  passedOn: (linkId: number, sender: string, mark: number) => boolean
): boolean => {
  if (record.ackEpoch !== undefined && state.crashedEpochs.has(record.ackEpoch)) return true
  const ended = (id: number): boolean => {
    const link = state.links.get(id)
    return link !== undefined && link.brokerEnded && link.endedAt !== undefined && link.endedAt >= since
  }
  if (record.writtenTo.some(ended)) return true
  const queuedTo = record.queuedTo
  if (queuedTo === undefined) {
    for (const link of state.links.values()) if (link.owner === record.target && ended(link.id)) return true
    return false
  }
  const mark = record.ackMark ?? 0
  return queuedTo.some((id) => ended(id) && !passedOn(id, record.sender, mark))
}

/**
 * Whether `record`, written only to connections of its receiver that died
 * with it unread, lost its custody copy with a memory-mode broker: every
 * such connection was granted `received-v1` (the broker keeps what its
 * client never confirmed reading, for the session's next connection), the
 * broker incarnation of each crashed before the receiver registered with it
 * again after that connection ended, and the broker whose acknowledgement
 * its sender read last crashed too. docs/protocol.md: in memory mode the
 * custody is in memory, which covers a connection's death, not the
 * broker's — so it is lost to a crash, not lost in flight
 * (`--workflow-bus --strict` seed 63116: P's client dropped its connection
 * with C1's m8 and C2's m9, m10 written and unread, and broker #1 crashed
 * 21 ms later, before P came back). A base client's (no custody) stays
 * lost in flight, as does one whose receiver came back to that broker (it
 * owed the copy to that connection), and every one in durable mode (the
 * store keeps the custody).
 */
const custodyCrashed = (state: LedgerState, record: MessageRecord): boolean => {
  if (state.durable || record.ackEpoch === undefined || !state.crashedEpochs.has(record.ackEpoch)) return false
  if (record.writtenTo.length === 0) return false
  return record.writtenTo.every((id) => {
    const link = state.links.get(id)
    return link !== undefined && link.receivedV1 && link.endedAt !== undefined && state.crashedEpochs.has(link.brokerEpoch) &&
      !receiverBackTo(state, record, link.brokerEpoch, link.endedAt)
  })
}

/**
 * Whether `read` was made by a process of its client instance that a newer
 * process resumed since (`Ledger.clientResumed`, `LinkRecord.process`): the
 * reading process ended, though the instance lives on. Not a closed client:
 * the broker owes what that process never confirmed to the instance's
 * return, so such a message the return never got stays a silent loss unless
 * its withdrawal or answer explains it.
 */
const readByEndedProcess = (state: LedgerState, read: Read): boolean =>
  (state.links.get(read.link)?.process ?? 0) < (state.resumedClients.get(read.client) ?? 0)

/**
 * Classifies every acknowledged message (call after the world quiesced,
 * with every session connected again) and records silent losses.
 * `endedOneShot` says whether a short-lived registration (`ephemeral-v1`)
 * of a message's sender ended by `unregister` after the broker read it
 * (`DepartureLedger.endedOneShot`): the broker owes no notice for such a
 * message its mailbox drops (`senderEnded`).
 */
export const finish = (state: LedgerState, endedOneShot: (record: MessageRecord) => boolean): MessageTally => {
  let acknowledged = 0
  let refused = 0
  let unknown = 0
  let delivered = 0
  let failedNotified = 0
  let lostToCrash = 0
  let lostInFlight = 0
  let stranded = 0
  let replaced = 0
  let withdrawn = 0
  let senderEnded = 0
  let answered = 0
  let redelivered = 0
  let resent = 0
  checkReplaceLatest(state)
  checkControls(state)
  checkSupersedesHeard(state)
  // Questions their asker's session read a reply to for good: a copy of one that went back (its connection
  // closed before its target's session took it) the broker drops, answered, rather than ask it again.
  const answeredAsks = answeredQuestions(state)
  // Questions of asks whose wait ended without a reply (timed out, interrupted, failed): their clients sent
  // `cancel_ask`. Not one that ended `Sent` (handed over without a wait): nothing withdrew it.
  const endedAsks = new Map<string, number>()
  for (const ask of state.asks) {
    const outcome = ask.outcome
    if (ask.questionId !== undefined && outcome !== undefined && outcome !== "Replied" && !outcome.startsWith("Sent")) {
      endedAsks.set(ask.questionId, ask.startedAt)
    }
  }
  // The broker withdraws such a question only if it went back: the broker that accepted it crashed, or a
  // connection it was in ended with it still there (MailReturns.requeue drops a stale one; one that went
  // back earlier waits in the mailbox, which drops it when its ask ends). One lost on a live connection is
  // not excused, whatever ends later (see `wentBack`).
  const withdrawnAsks = {
    has: (record: MessageRecord): boolean => {
      const since = record.kind === "ask" ? endedAsks.get(record.message.id) : undefined
      return since !== undefined && wentBack(state, record, since, passedOn)
    }
  }
  // The highest `acceptSeq` of a message of each sender the broker handed over on each connection, built on
  // first use (see `wentBack`: only the question's own sender's later mail proves it left the outbox).
  let lastAccepted: Map<number, Map<string, number>> | undefined
  const passedOn = (linkId: number, sender: string, mark: number): boolean => {
    if (lastAccepted === undefined) {
      lastAccepted = new Map()
      for (const message of state.messages.values()) {
        const seq = message.acceptSeq
        if (seq === undefined) continue
        for (const id of message.writtenTo) {
          let bySender = lastAccepted.get(id)
          if (bySender === undefined) lastAccepted.set(id, bySender = new Map())
          bySender.set(message.sender, Math.max(bySender.get(message.sender) ?? 0, seq))
        }
      }
    }
    return (lastAccepted.get(linkId)?.get(sender) ?? 0) > mark
  }
  for (const record of state.messages.values()) {
    if (record.outcome === "refused") refused++
    if (record.outcome === "pending" || record.outcome === "unknown") unknown++
    if (record.outcome !== "acked") continue
    acknowledged++
    if (record.redelivered > 0) redelivered++
    if (record.resent > 0) resent++
    const to = nameOf(state, record.target ?? "?")
    const label = `${record.alias} (${record.kind} ${nameOf(state, record.sender)} → ${to})`
    state.checkCount++
    if (record.hostDeliveries > 0) {
      if (record.rescued) {
        stranded++
        violate(
          state,
          "stranded-mail",
          `${label} sat in the broker's mailbox while ${to} was connected; it arrived only when ${to} registered again`
        )
      } else {
        delivered++
      }
      continue
    }
    if (record.expiredNotified) {
      failedNotified++
      continue
    }
    if (wasReplaced(record)) {
      replaced++
      continue
    }
    const lastRead = record.reads[record.reads.length - 1]
    if (lastRead !== undefined) {
      const closed = state.closedClients.has(lastRead.client)
      if (closed || readByEndedProcess(state, lastRead)) {
        // Not asked again on the receiver's next connection: its asker had withdrawn it (see below); or its
        // sender cancelled or superseded it, acknowledged, before that client's connection ended. So also when
        // the reader was a process a new one of the same client instance replaced (it unregistered and a pi
        // process resumed it): that process ended as a closed client does, and the broker, given the message
        // back unconfirmed, does not queue it again (`--reader-return --host-refusals` seed 7022).
        if (withdrawnAsks.has(record) || withdrawnAfterRead(state, record)) {
          withdrawn++
          continue
        }
        if (answeredAsks.has(record.id)) {
          answered++
          continue
        }
      }
      if (closed) {
        lostInFlight++
        if (state.strictInFlight) violate(state, "lost-in-flight", `${label} was read by a client that closed before its session took it`)
        continue
      }
      violate(state, "silent-loss", `${label} reached ${to}'s live client but was never handed to its session`)
      continue
    }
    if (record.writtenTo.length > 0) {
      const open = record.writtenTo.filter((id) => state.links.get(id)?.closed !== true)
      if (open.length === 0) {
        // Or its sender cancelled or superseded it before that connection ended: not queued again by design.
        // Or cancelled after that end, the copy kept for its reader lost with the broker that kept it.
        if (withdrawnAsks.has(record) || withdrawnOnTheWay(state, record) || cancelledCopyCrashed(state, record)) {
          withdrawn++
          continue
        }
        if (answeredAsks.has(record.id)) {
          answered++
          continue
        }
        // Or its receiver's custody copy was lost with a memory-mode broker that crashed before it came back.
        if (custodyCrashed(state, record)) {
          lostToCrash++
          continue
        }
        lostInFlight++
        if (state.strictInFlight) violate(state, "lost-in-flight", `${label} was written to a connection of ${to} that died before it was read`)
        continue
      }
      violate(state, "silent-loss", `${label} was written to ${to}'s open connection #${open.join(", #")} but never read`)
      continue
    }
    // Its sender cancelled it before any client of its receiver read it: the broker took it out of the mailbox.
    if (cancelledUnread(state, record)) {
      withdrawn++
      continue
    }
    // Its sender superseded it (the superseding send acknowledged) on its way to a connection of its receiver
    // that then ended, and the broker did not queue it again.
    if (supersededUnread(state, record)) {
      withdrawn++
      continue
    }
    // Its asker stopped waiting and withdrew it (`cancel_ask`): the broker drops the question, untold.
    if (record.recordSays === "delivered" && withdrawnAsks.has(record)) {
      withdrawn++
      continue
    }
    const crashed = record.ackEpoch !== undefined && state.crashedEpochs.has(record.ackEpoch)
    if (crashed && !state.durable) {
      lostToCrash++
      continue
    }
    if (record.recordSays === "E_DELIVERY_EVICTED" || record.recordSays === "E_DELIVERY_EXPIRED") {
      if (record.noticeWrittenTo.length > 0 && record.noticeWrittenTo.every((id) => state.links.get(id)?.closed === true)) {
        // The notice was written toward the sender, whose connection died before it read it.
        lostInFlight++
        if (state.strictInFlight) {
          violate(state, "lost-in-flight", `the expired notice for ${label} was written to a connection of ${nameOf(state, record.sender)} that died before it was read`)
        }
        continue
      }
      // Its sender was a one-shot session (`ephemeral-v1`) that ended by `unregister` after the broker read
      // it: the broker owes it no notice (`DepartureLedger.endedOneShot`), though the finish starts it
      // again under the same id. Not when the broker wrote one (it dropped the message while it owed one).
      // A sender whose connections merely ended is owed it.
      if (record.noticeWrittenTo.length === 0 && endedOneShot(record)) {
        senderEnded++
        continue
      }
      violate(
        state,
        crashed ? "crash-lost-notice" : "untold-eviction",
        `${label} was dropped from the broker's mailbox (${record.recordSays}) while ${nameOf(state, record.sender)} was away; it was never told${
          crashed ? ` (broker #${record.ackEpoch ?? "?"}, which acknowledged it, crashed)` : ""
        }`
      )
      continue
    }
    if (crashed) {
      lostToCrash++
      violate(
        state,
        "crash-loss",
        `${label} was acknowledged by broker #${record.ackEpoch ?? "?"}, which crashed; no later broker sent it to ${to}, though its store should have kept it${
          record.recordSays === undefined ? "" : ` (a resend now gets: ${record.recordSays})`
        }`
      )
      continue
    }
    violate(
      state,
      "silent-loss",
      `${label} was acknowledged by broker #${record.ackEpoch ?? "?"}, which did not crash, and never sent to ${to}${
        record.recordSays === undefined ? "" : ` (a resend now gets: ${record.recordSays})`
      }`
    )
  }
  // After each message's own fate: a question the broker lost outright is that (`silent-loss`, above)
  // before it is an ask whose asker was not told.
  checkAskExpiry(state)
  checkExpiredAfterAnswer(state)
  return {
    sent: state.messages.size,
    acknowledged,
    refused,
    unknown,
    delivered,
    failedNotified,
    lostToCrash,
    lostInFlight,
    stranded,
    replaced,
    withdrawn,
    senderEnded,
    answered,
    redelivered,
    resent,
    cancelsAcknowledged: state.controls.cancelAcks.length,
    heldCancelsRefused: state.controls.heldThenRefused,
    controlsRead: state.controls.reads.length
  }
}

/** Traffic between groups of one scope over the run, counted (see `GroupTally`). */
export const groupTally = (state: LedgerState): GroupTally => {
  let crossAttempts = 0
  let refusedCrossGroup = 0
  let refusedNotFound = 0
  let otherOutcome = 0
  let supervisorSent = 0
  let supervisorAcknowledged = 0
  let repliesBack = 0
  for (const record of state.messages.values()) {
    if (record.channel === "supervisor") {
      supervisorSent++
      if (record.outcome === "acked") supervisorAcknowledged++
      continue
    }
    const target = record.target
    if (target === undefined || !crossesGroup(state, record.sender, target)) continue
    if (mayCross(state, record, target)) {
      if (record.reads.length > 0) repliesBack++
      continue
    }
    crossAttempts++
    if (record.failureCode === DeliveryCode.CrossGroup) refusedCrossGroup++
    else if (record.failureCode === DeliveryCode.TargetNotFound) refusedNotFound++
    else otherOutcome++
  }
  return { crossAttempts, refusedCrossGroup, refusedNotFound, otherOutcome, supervisorSent, supervisorAcknowledged, repliesBack }
}
