/**
 * What a client read from the broker, frame type by frame type
 * (`brokerFrameRead`, called by wire.ts's `clientRead`): acknowledgements
 * and refusals of its own sends, each message it was given (misrouted,
 * duplicated, or a copy sent again — after a crash, or after an earlier
 * copy went out unconfirmed on a connection that ended), lists and
 * membership frames, controls and receipts.
 *
 * Durable mode (issue 13) added the crash-redelivery cases here, known
 * issue 20 the client's last written confirmation per connection
 * (`confirmationLost`), and a session that confirms what it handled (known
 * issue 21) the rule that a read through a crashed incarnation is
 * unconfirmed to the next one (`resentUnconfirmed`). Each case judges one
 * broker frame; the checks with their own concern live in their own
 * modules (order.ts, delivery.ts, controls.ts, scopes.ts, takeovers.ts,
 * refusedReplies.ts), so this is the one switch over a read frame.
 */
import { DeliveryCode } from "../../protocol/delivery.ts"
import type { BrokerFrame } from "../../protocol/frames.ts"
import { cancelAnswered, cancelRefused, controlRead, supersedeAnswered, supersedeHeard } from "./controls.ts"
import { replacedRead, stagedRead } from "./delivery.ts"
import { checkOrder } from "./order.ts"
import { replyRefused } from "./refusedReplies.ts"
import { groupCrossing, sameGroup, sameScope } from "./scopes.ts"
import { crossesGroup, groupOf, type LedgerState, type LinkRecord, mayCross, type MessageRecord, nameOf, recordFrom } from "./state.ts"
import { registeredRead } from "./takeovers.ts"
import { check, note } from "./trace.ts"

/**
 * A second copy of a message from a later broker incarnation, every earlier
 * copy having come from incarnations that crashed. Durable mode: the one that
 * wrote it may have died before it stored that it did. Memory mode: its
 * sender never read the acknowledgement, its client sent it again with the
 * same id, and the new broker has no replay record (they die with a memory
 * broker: docs/store.md).
 */
const redeliveredAfterCrash = (state: LedgerState, record: MessageRecord, link: LinkRecord): boolean =>
  record.reads.length > 0 && record.reads.every((read) => {
    const epoch = state.links.get(read.link)?.brokerEpoch
    return epoch !== undefined && epoch < link.brokerEpoch && state.crashedEpochs.has(epoch)
  })

/**
 * A copy the broker re-sent because every earlier copy went out on a
 * connection, since ended, whose client never confirmed reading it
 * (`received-v1`: the broker cannot know it was read, so it sends it again and
 * the client drops the copy). A copy read through an earlier incarnation that
 * crashed counts as unconfirmed to this one: a confirmation it had not stored
 * died with it (the copy after its restart is `redeliveredAfterCrash`'s), so
 * a third copy, after that one went unconfirmed too, is this kind.
 */
const resentUnconfirmed = (state: LedgerState, record: MessageRecord, link: LinkRecord): boolean =>
  record.reads.length > 0 && record.reads.every((read) => {
    const earlier = state.links.get(read.link)
    if (earlier === undefined || earlier === link) return false
    if (earlier.brokerEpoch < link.brokerEpoch && state.crashedEpochs.has(earlier.brokerEpoch)) return true
    return (earlier.brokerEnded || earlier.closed) && earlier.confirmed < read.frame
  })

/**
 * Whether the client of an earlier connection had written a `received`
 * covering its copy, which the broker never read: the confirmation was still
 * in flight when that connection ended, and was lost with it.
 */
const confirmationLost = (state: LedgerState, record: MessageRecord, link: LinkRecord): boolean =>
  record.reads.some((read) => {
    const earlier = state.links.get(read.link)
    return earlier !== undefined && earlier !== link && earlier.confirmationWritten >= read.frame
  })

/**
 * Where the ask `record`, acknowledged on `link` as handed to a live
 * connection, was queued: its target's connections to the broker that
 * acknowledged it, as they are now (the broker routed its question to one
 * of them before it wrote the answer; a durable broker's answer waits for
 * its commit only, so the question may still be parked on its sender's
 * reader then, on its way to that outbox: `wentBack` in ledger/fates.ts).
 * Undefined for a send or a
 * reply, for a staged ask (it is queued when its window closes), and for an
 * ask first written to an earlier broker (a durable one restored it to its
 * mailbox, from which it goes to whichever connection registers next).
 */
const queuedTo = (state: LedgerState, record: MessageRecord, link: LinkRecord): ReadonlyArray<number> | undefined => {
  if (record.kind !== "ask" || record.delivery?.staged === true || record.firstEpoch !== link.brokerEpoch) return undefined
  const out: Array<number> = []
  for (const other of state.links.values()) {
    if (other.owner === record.target && other.brokerEpoch === link.brokerEpoch) out.push(other.id)
  }
  return out
}

/**
 * The client on `link` read `frame` from the broker: the ledger records it
 * and judges it (see the module header).
 */
export const brokerFrameRead = (state: LedgerState, link: LinkRecord, frame: BrokerFrame): void => {
  switch (frame.type) {
    case "registered":
      return registeredRead(state, link, frame)
    case "delivery_queued":
    case "delivered": {
      if (frame.type === "delivered" && frame.delivery === undefined) return cancelAnswered(state, link, frame.messageId)
      const record = state.messages.get(frame.messageId)
      if (record === undefined || record.sender !== link.owner) return
      if (frame.type === "delivery_queued") stagedRead(record, frame.deliverAt, link.brokerEpoch)
      if (record.outcome !== "acked") {
        record.outcome = "acked"
        record.ackEpoch = link.brokerEpoch
        record.ackedAt = state.now()
        record.ackMark = state.acceptSeq
        if (frame.type === "delivered" && frame.delivery === "socket_delivered") record.queuedTo = queuedTo(state, record, link)
        // Not a staged send (`delivery_queued`): its supersede is applied, if at all, when its window closes, unanswered.
        if (frame.type === "delivered" && record.message.supersedes !== undefined) supersedeAnswered(state, record)
        const target = record.target
        if (target !== undefined && crossesGroup(state, record.sender, target)) {
          check(state, mayCross(state, record, target), "cross-group-accepted", () =>
            `${record.alias} (${record.kind} ${nameOf(state, record.sender)} [${groupOf(state, record.sender)}] → ${
              nameOf(state, target)
            } [${groupOf(state, target)}]) was acknowledged; a plain send into another group must be refused`)
        }
      }
      return
    }
    case "delivery_failed": {
      const record = state.messages.get(frame.messageId)
      // A bare one (no code) refuses a cancel ("cannot be cancelled"): the cancel stays unapplied, answered.
      if (frame.code === undefined) return cancelRefused(state, link, frame.messageId)
      if (record === undefined || record.sender !== link.owner) return
      if (record.outcome !== "acked") {
        record.outcome = "refused"
        record.failureCode = frame.code
        // A rebound's question is sent again under its id: only a refusal that ends it counts (review revap AP2).
        if (frame.code !== DeliveryCode.TargetRebound) record.refusedRead ??= { at: state.now(), client: link.client, code: frame.code }
        if (state.hostileChecks && frame.code === DeliveryCode.ReplyTarget) replyRefused(state, link, record)
      }
      return
    }
    case "message": {
      const receiver = link.owner
      const from = frame.from.id
      sameScope(state, link, from, "a message")
      const record = recordFrom(state, frame.message.id, from)
      groupCrossing(state, link, from, frame.message.id, frame.channel, record)
      if (record === undefined) return
      const receivedAt = frame.message.brokerReceivedAt
      if (record.kind === "ask" && receivedAt !== undefined && frame.askTimeoutMs !== undefined) {
        record.askDeadline = { epoch: link.brokerEpoch, at: receivedAt + frame.askTimeoutMs }
      }
      if (record.target !== undefined) {
        check(state, record.target === receiver, "misrouted", () =>
          `${record.alias} for ${nameOf(state, record.target ?? "?")} reached ${nameOf(state, receiver)}`)
      }
      if (redeliveredAfterCrash(state, record, link)) {
        record.redelivered++
        note(state, `   ${record.alias} re-sent to ${nameOf(state, receiver)} by broker #${link.brokerEpoch}: the broker that wrote it crashed`)
        record.reads.push({ link: link.id, client: link.client, seq: ++state.readSeq, at: state.now(), frame: link.framesRead })
        return
      }
      if (resentUnconfirmed(state, record, link)) {
        record.resent++
        if (confirmationLost(state, record, link)) record.confirmationLost = true
        note(state, `   ${record.alias} re-sent to ${nameOf(state, receiver)}: the connection it went out on closed before ${
          record.confirmationLost
            ? "the broker read its client's confirmation (lost in flight with it)"
            : "its client confirmed reading it"
        }`)
        record.reads.push({ link: link.id, client: link.client, seq: ++state.readSeq, at: state.now(), frame: link.framesRead })
        return
      }
      const first = check(state, record.reads.length === 0, "duplicate-on-wire", () =>
        `${record.alias} (${nameOf(state, record.sender)} → ${nameOf(state, receiver)}) arrived ${record.reads.length + 1} times`)
      record.reads.push({ link: link.id, client: link.client, seq: ++state.readSeq, at: state.now(), frame: link.framesRead })
      if (first) checkOrder(state, state.lastWireSeq, record, receiver, "on the wire")
      return
    }
    case "sessions":
      if (frame.requestId !== undefined && link.settlesUnanswered.delete(frame.requestId)) link.settleAnsweredAt = state.now()
      for (const session of frame.sessions) {
        sameScope(state, link, session.id, "a list entry")
        sameGroup(state, link, session.id, "a list entry")
      }
      return
    case "session_joined":
    case "presence_update":
      sameScope(state, link, frame.session.id, `${frame.type}`)
      sameGroup(state, link, frame.session.id, `${frame.type}`)
      return
    case "session_left":
      sameScope(state, link, frame.sessionId, "session_left")
      sameGroup(state, link, frame.sessionId, "session_left")
      return
    case "message_control":
      return controlRead(state, link, frame)
    case "message_receipt": {
      if (frame.receipt.status === "superseded") {
        const replaced = recordFrom(state, frame.receipt.messageId, link.owner)
        // A receiver's answer to this sender's supersede of a message it was given, not the broker's replacement.
        if (replaced !== undefined && !supersedeHeard(state, replaced)) replacedRead(state, replaced, frame.receipt.detail)
        return
      }
      if (frame.receipt.status !== "expired") return
      const record = recordFrom(state, frame.receipt.messageId, link.owner)
      if (record !== undefined) {
        record.expiredNotified = true
        record.expiredSeq ??= ++state.readSeq
        note(state, `   ${nameOf(state, link.owner)} told ${record.alias} expired: ${frame.receipt.detail ?? ""}`)
      }
      return
    }
    default:
      return
  }
}
