/**
 * Size: about 505 lines, one concept (controls on the wire and the fates
 * they excuse); most of it is the JSDoc of why each excuse holds.
 *
 * Cancels and controls on the wire: a sender's `cancel_message` and the
 * broker's answer, and each `message_control` (cancel, supersede) a
 * receiver reads, judged at the end of the run against the reads of the
 * message it is about.
 *
 * Why: docs/protocol.md ("Receipts and control", P70–P73) says a
 * `cancel_message` either dequeues queued mail or sends the receiver a
 * `message_control` cancel, answered with a bare `delivered` either way;
 * that a `supersedes` send first sends the receiver a `message_control`
 * supersede; and that the receiver never gets a `message_control` before
 * the message it is about — wherever that message still waits (a takeover's
 * custody hold, a parked mailbox flush, an outbox its session was taken
 * from), the control waits behind it. Two kinds follow:
 *
 * - `control-before-message`: on the connection that read a control, the
 *   message came after it without having come before it; or no copy of the
 *   message had reached the receiver before the control and one did later.
 *   A copy read on an earlier connection counts: a message its client
 *   confirmed there is not sent again, and the route a control follows
 *   outlives reconnects.
 * - `cancel-unheard`: the broker acknowledged a cancel of a message the
 *   receiver had not read yet, and the receiver read it afterwards (from
 *   the same broker incarnation) with no control cancel about it after
 *   that read, read by the client instance that read it (on that
 *   connection or a later one: a route outlives a reconnect; sim seed
 *   53031): the cancel neither dequeued the message nor reached the
 *   receiver. A read from a later broker incarnation is not judged: routes
 *   are not stored (docs/protocol.md, "When a receipt is dropped": the
 *   broker stopped or restarted). Nor is a cancel whose control the broker
 *   began to write on a connection that had read the message, cut short
 *   there unread (`cancelCutShort`): its client closed for good — the client
 *   is closed at the end and that connection was the last it opened; the
 *   broker put it behind the message where that client was, and no other
 *   client instance may be given it (sim seed 16890 of
 *   `--custody-hold --delivery`) — or its broker crashed while that
 *   connection was live (a control is kept in memory only, as routes are;
 *   sim seed 33035) and no later connection read the message again (the
 *   next broker handing a cancelled message out is judged). A client that
 *   connected again to the same broker after that connection dropped is
 *   judged.
 * - `supersede-unheard`: the broker acknowledged a send superseding M
 *   (`delivered`: it applied the supersede) after a client of M's receiver
 *   had read M on a connection that, at the end of the run, was still
 *   registered, live to both sides, not taken over, from the same broker
 *   incarnation, with everything the broker wrote it read — and no control
 *   supersede of M was read on that connection. The broker enqueues the
 *   control before it answers the send (the supersede stage, SupersedeStage.ts), to the
 *   client instance given M, so that connection had it to read. Not judged:
 *   a receiver whose connection closed, ended or was taken over (a
 *   takeover's new instance gets no control for a message it never got), M
 *   first read after the answer (`control-before-message` judges the
 *   order), or a supersede answered otherwise (refused, staged).
 *
 * A cancel the broker acknowledged for a message no client of its receiver
 * ever read withdrew it from the mailbox: `fates.ts` counts it `withdrawn`
 * (`cancelledUnread`). So does one the broker never answered (neither
 * acknowledged nor refused), written on a connection that ended or whose
 * broker crashed, when the broker's replay record says the message was
 * cancelled (a resend of it is answered `E_DELIVERY_CANCELLED`): the broker
 * applied and stored it, and only its answer was lost (sim seed 9848 of
 * `--delivery`: the broker crashed while the sender was not reading). So
 * does a supersede: a send that `supersedes` a
 * message, acknowledged, is the broker's answer that the supersede was
 * applied (one it cannot apply is refused, `E_SUPERSEDE_TARGET`), so its
 * sender knows the old message's fate; the new message's own fate is its
 * own (delivered, or an `expired` notice when the mailbox drops it). The
 * broker does not queue again a message superseded or cancelled on its way
 * to a receiver whose connection ended (`MailReturns.requeue`): sim seed
 * 9528 of `--custody-hold --unregister --delivery` (`supersededUnread`,
 * `withdrawnOnTheWay`). Like the cancel above, a supersede counts as applied
 * when its send went unanswered (neither acknowledged nor refused) on a
 * connection that ended or whose broker crashed, the broker read it, and the
 * replay record answers a resend of the old message `E_DELIVERY_SUPERSEDED`
 * (`supersedeAppliedUnanswered`; sim seed 16929 of `--custody-hold
 * --delivery`: the sender stopped before the answer came). The superseding
 * message reaching the receiver does not show it on its own: a supersede of
 * a message only a replaced instance got delivers the new message without it.
 * A message with a control about it read is never
 * withdrawn so, and a control read about a message that never reached its
 * receiver is `control-before-message` (review revled).
 */
import { DeliveryCode } from "../../protocol/delivery.ts"
import type { Message, MessageControlFrame } from "../../protocol/frames.ts"
import { lastLinkOf, type LedgerState, type LinkRecord, type MessageRecord, nameOf } from "./state.ts"
import { check, note } from "./trace.ts"

const keyOf = (sender: string, messageId: string): string => `${sender}\0${messageId}`

/** A world session's client wrote `cancel_message` for `messageId` on `link`. */
export const cancelWritten = (state: LedgerState, link: LinkRecord, messageId: string): void => {
  state.controls.cancelsWritten.set(keyOf(link.owner, messageId), link.id)
  state.controls.cancelsWrittenAt.set(keyOf(link.owner, messageId), state.now())
}

/**
 * The client of `link` read a bare `delivery_failed` for `messageId`: the
 * broker refused its cancel of that message ("cannot be cancelled"), if it
 * wrote one. Its sender knows the cancel did nothing: it is no longer a
 * cancel whose answer was lost (`cancelledUnread`).
 */
export const cancelRefused = (state: LedgerState, link: LinkRecord, messageId: string): void => {
  const key = keyOf(link.owner, messageId)
  const writtenAt = state.controls.cancelsWrittenAt.get(key)
  if (state.controls.cancelsWritten.delete(key) && writtenAt !== undefined) heldThenRefused(state, link.owner, messageId, writtenAt)
  state.controls.cancelsWrittenAt.delete(key)
}

/**
 * Counts (`ControlState.heldThenRefused`) a refused cancel of `sender`'s `messageId`, written at
 * `writtenAt`, when a client of the receiver read the message on a connection that a takeover replaced
 * before the cancel was written, whose confirmation of it the broker read, and which ended after the
 * cancel was written: the custody hold's put-off cancel that the old client's confirmation at its close
 * answered "cannot be cancelled" (review revb D1).
 */
const heldThenRefused = (state: LedgerState, sender: string, messageId: string, writtenAt: number): void => {
  const record = state.messages.get(messageId)
  if (record === undefined || record.sender !== sender) return
  const reached = record.reads.some((read) => {
    const old = state.links.get(read.link)
    return old !== undefined && old.owner === record.target && old.replacedAt !== undefined && old.replacedAt <= writtenAt &&
      old.confirmed >= read.frame && old.endedAt !== undefined && old.endedAt >= writtenAt
  })
  if (!reached) return
  state.controls.heldThenRefused++
  note(state, `   ${nameOf(state, sender)}'s cancel of ${record.alias}, put off by a custody hold, refused: the old client confirmed it as it closed (D1)`)
}

/**
 * The client of `link` read a bare `delivered` for `messageId`: the answer
 * to its cancel of that message, if it wrote one (a bare `delivered` answers
 * nothing else).
 */
export const cancelAnswered = (state: LedgerState, link: LinkRecord, messageId: string): void => {
  const key = keyOf(link.owner, messageId)
  state.controls.cancelsWrittenAt.delete(key)
  if (!state.controls.cancelsWritten.delete(key)) return
  const record = state.messages.get(messageId)
  if (record === undefined || record.sender !== link.owner) return
  // The first acknowledgement is when the broker withdrew it: a cancel repeated later is answered
  // `delivered` again (docs/protocol.md) and must not move that time past a close it preceded
  // (`--parked-flush --unregister --delivery --strict` seed 53118).
  if (!state.controls.cancelled.has(messageId)) state.controls.cancelled.set(messageId, state.now())
  state.controls.cancelAcks.push({ sender: link.owner, messageId, epoch: link.brokerEpoch, seq: ++state.readSeq, at: state.now() })
  note(state, `   ${nameOf(state, link.owner)}'s cancel of ${record.alias} acknowledged (${record.reads.length} read(s) of it so far)`)
}

/** The broker began a write carrying `frame` on `link`: a control cancel is noted there (`cancelCutShort`). */
export const controlWriteBegun = (state: LedgerState, link: LinkRecord, frame: MessageControlFrame): void => {
  if (frame.control.action === "cancel") state.controls.cancelsBegun.add(`${link.id}\0${keyOf(frame.from.id, frame.control.messageId)}`)
}

/** The client of `link` read a `message_control`. */
export const controlRead = (state: LedgerState, link: LinkRecord, frame: MessageControlFrame): void => {
  const record = state.messages.get(frame.control.messageId)
  if (record === undefined || record.sender !== frame.from.id) return
  state.controls.reads.push({
    link: link.id,
    from: frame.from.id,
    messageId: record.id,
    action: frame.control.action,
    seq: ++state.readSeq
  })
  note(state, `   ${nameOf(state, link.owner)} told ${record.alias} ${frame.control.action === "cancel" ? "cancelled" : "superseded"} (after ${
    record.reads.filter((read) => read.link === link.id).length
  } read(s) of it on this connection, ${record.reads.length} in all)`)
}

/**
 * Whether `record`'s receiver read a `message_control` supersede about it:
 * a `superseded` receipt for it then is the receiver's answer (a session
 * acknowledges a supersede so), not the broker's replacement of a staged
 * message (`delivery.ts`), which only a message never delivered gets — and
 * a supersede needs the message delivered.
 */
export const supersedeHeard = (state: LedgerState, record: MessageRecord): boolean =>
  state.controls.reads.some((control) => control.action === "supersede" && control.messageId === record.id && control.from === record.sender)

/**
 * The broker acknowledged `record`, a send that `supersedes` an earlier
 * message of its sender: the supersede was applied (see the module header).
 */
export const supersedeAnswered = (state: LedgerState, record: MessageRecord): void => {
  const old = record.message.supersedes
  if (old === undefined) return
  // The first acknowledgement is when the broker withdrew it, as for a cancel (`cancelAnswered`): a later
  // send superseding it again, acknowledged after a close the first preceded, must not move that time past it.
  const key = keyOf(record.sender, old)
  if (!state.controls.superseded.has(key)) state.controls.superseded.set(key, state.now())
  state.controls.supersedeAcks.push({ sender: record.sender, messageId: old, epoch: record.ackEpoch ?? 0, seq: ++state.readSeq, at: state.now() })
  note(state, `   ${nameOf(state, record.sender)}'s supersede of ${state.messages.get(old)?.alias ?? old} by ${record.alias} acknowledged`)
}

/**
 * A world session's client wrote, on `link`, a send of `message`; if it
 * `supersedes` an earlier message, the ledger keeps which send and where
 * (its latest attempt), to judge at the end whether its answer was lost
 * (`supersedeAppliedUnanswered`).
 */
export const supersedeWritten = (state: LedgerState, link: LinkRecord, message: Message): void => {
  const old = message.supersedes
  if (old === undefined) return
  state.controls.supersedesWritten.set(keyOf(link.owner, old), { messageId: message.id, link: link.id })
}

/**
 * When the broker applied a supersede of `record` whose answer its sender
 * never read: a send of its sender that `supersedes` it went unanswered
 * (neither acknowledged nor refused) on a connection that ended or whose
 * broker crashed (`answerLost`), the broker read it, and the broker's replay
 * record answers a resend of `record` `E_DELIVERY_SUPERSEDED` — the broker
 * marks the record superseded only when it applies a supersede, so only the
 * answer was lost (sim seed 16929 of `--custody-hold --delivery`: the sender
 * stopped while its supersede's answer was on its way). The time is when the
 * broker first read that send (its Router applies a supersede as it reads
 * it); undefined when any of that does not hold. The superseding message
 * reaching the receiver is not enough on its own: a supersede of a message
 * given only to an instance a takeover replaced delivers the new message
 * without it (docs/protocol.md, "Receipts and control").
 */
const supersedeAppliedUnanswered = (state: LedgerState, record: MessageRecord): number | undefined => {
  if (record.recordSays !== DeliveryCode.DeliverySuperseded) return undefined
  const written = state.controls.supersedesWritten.get(keyOf(record.sender, record.id))
  if (written === undefined || !answerLost(state, written.link)) return undefined
  const superseding = state.messages.get(written.messageId)
  if (superseding === undefined || superseding.outcome === "acked" || superseding.outcome === "refused") return undefined
  return superseding.brokerFirstRead?.at
}

/** Whether `record`'s receiver read a `message_control` (cancel or supersede) about it. */
const controlHeard = (state: LedgerState, record: MessageRecord): boolean =>
  state.controls.reads.some((control) => control.messageId === record.id && control.from === record.sender)

/** Whether a connection of `record`'s receiver ended, as the broker saw it, at or after `since`. */
const receiverEndedSince = (state: LedgerState, record: MessageRecord, since: number): boolean => {
  for (const link of state.links.values()) {
    if (link.owner === record.target && link.brokerEnded && link.endedAt !== undefined && link.endedAt >= since) return true
  }
  return false
}

/**
 * Whether `record` is a message a later send of its sender superseded, that
 * send acknowledged (or its answer lost, `supersedeAppliedUnanswered`), that no client of its receiver ever read (`finish`
 * asks only about one never written), and that the broker withdrew on its way: no control about
 * it reached the receiver, and a connection of the receiver ended after the
 * supersede was acknowledged — the message went back from that connection's
 * outbox and was not queued again (`MailDelivery.withdrawnOnTheWay`; sim
 * seed 9528). One lost from a live connection's outbox is not withdrawn
 * (review revled): the broker either writes it there or withdraws it when
 * that connection ends.
 */
export const supersededUnread = (state: LedgerState, record: MessageRecord): boolean => {
  // Not one written to a connection: `finish` judges those first (`withdrawnOnTheWay`, or lost in flight).
  if (record.reads.length !== 0) return false
  const at = state.controls.superseded.get(keyOf(record.sender, record.id)) ?? supersedeAppliedUnanswered(state, record)
  return at !== undefined && !controlHeard(state, record) && receiverEndedSince(state, record, at)
}

/**
 * Whether `record`, written only to connections of its receiver that ended
 * with it unread, was cancelled or superseded by its sender (acknowledged)
 * before the last of them ended, with no control about it read: the broker
 * took it back at that close and did not queue it again
 * (`MailDelivery.withdrawnOnTheWay`), so it is withdrawn, not lost in
 * flight. A cancel's or supersede's first acknowledgement counts
 * (`cancelAnswered`, `supersedeAnswered`): one repeated after the close,
 * answered `delivered` again, changes nothing.
 */
export const withdrawnOnTheWay = (state: LedgerState, record: MessageRecord): boolean => {
  if (record.reads.length !== 0 || record.writtenTo.length === 0 || controlHeard(state, record)) return false
  const at = state.controls.cancelled.get(record.id) ?? state.controls.superseded.get(keyOf(record.sender, record.id))
  if (at === undefined) return false
  return record.writtenTo.some((id) => {
    const link = state.links.get(id)
    return link !== undefined && link.endedAt !== undefined && link.endedAt >= at
  })
}

/**
 * Whether `record`, written only to connections of its receiver that ended
 * with it unread (no control about it read), was cancelled by its sender
 * (acknowledged) only after the last of them ended, by a broker incarnation
 * that then crashed with no connection of the receiver registered to it
 * since that end. The cancel kept the copy in the mailbox for the client
 * instance written it (WithdrawnCopies.ts), in memory only, and the crash
 * took it: docs/protocol.md says a restart between the cancel and the
 * client's return leaves the client untold. Its sender was told it was
 * cancelled and no client read it, so it is withdrawn, not lost in flight
 * (`--reader-return --client-timings --strict` seed 52213: D's client
 * dropped its stalled connection with m12 written and unread, A cancelled
 * m12 1.5 s later, and broker #1 crashed before D came back). Without the
 * crash the copy waits for that instance, whose return reads it with the
 * cancel (`withdrawnAfterRead`), and one that never returns leaves it
 * lost in flight as before (review revled).
 */
export const cancelledCopyCrashed = (state: LedgerState, record: MessageRecord): boolean => {
  if (record.reads.length !== 0 || record.writtenTo.length === 0 || controlHeard(state, record)) return false
  let lastEnd = 0
  for (const id of record.writtenTo) {
    const endedAt = state.links.get(id)?.endedAt
    if (endedAt === undefined) return false
    lastEnd = Math.max(lastEnd, endedAt)
  }
  return state.controls.cancelAcks.some((ack) =>
    ack.sender === record.sender && ack.messageId === record.id && ack.at >= lastEnd && state.crashedEpochs.has(ack.epoch) &&
    !receiverBackTo(state, record, ack.epoch, lastEnd)
  )
}

/**
 * Whether a connection of `record`'s receiver to broker incarnation `epoch`, other than those it was written
 * to, had its `register` read at or after `since`.
 */
export const receiverBackTo = (state: LedgerState, record: MessageRecord, epoch: number, since: number): boolean => {
  for (const link of state.links.values()) {
    const at = link.registerReadAt ?? link.registeredAt
    if (link.owner !== record.target || link.brokerEpoch !== epoch || record.writtenTo.includes(link.id)) continue
    if (at !== undefined && at >= since) return true
  }
  return false
}

/**
 * Whether `record`, last read by a client of its receiver that closed before
 * its session took it, was cancelled or superseded by its sender
 * (acknowledged) before that client's connection ended: its sender withdrew
 * it and was told so, so it is withdrawn, not lost in flight (sim seed 10658
 * of `--host-journal --strict`: C read m5, A's cancel was acknowledged and C
 * read the control, then C's generation closed with m5's checkpoint
 * interrupted). So is one whose acknowledgement came after that end when
 * the control about it was read on that same connection: the broker had
 * applied the withdrawal before the close, and a durable broker answers its
 * sender only after the commit, which the control does not wait for
 * (`--host-journal --client-timings --strict` seed 52221: B read m13 and
 * C's supersede control and was killed; C's answer came 9 ms later).
 */
export const withdrawnAfterRead = (state: LedgerState, record: MessageRecord): boolean => {
  const lastRead = record.reads[record.reads.length - 1]
  if (lastRead === undefined) return false
  const at = state.controls.cancelled.get(record.id) ?? state.controls.superseded.get(keyOf(record.sender, record.id))
  if (at === undefined) return false
  const endedAt = state.links.get(lastRead.link)?.endedAt
  if (endedAt === undefined || endedAt >= at) return true
  return state.controls.reads.some((control) =>
    control.link === lastRead.link && control.messageId === record.id && control.from === record.sender
  )
}

/**
 * Whether `record` is a message its sender cancelled and no client of its
 * receiver ever read (nor was it written to one): the broker acknowledged
 * the cancel, or the sender wrote one the broker never answered (a refusal
 * answers it, `cancelRefused`) on a connection that ended or whose broker
 * crashed (`answerLost`), and the broker's replay
 * record answers a resend of the message `E_DELIVERY_CANCELLED` — the
 * broker stores the rewritten record before it answers the cancel
 * (`StoreJournal.mark`), so that answer shows the cancel applied and kept.
 */
export const cancelledUnread = (state: LedgerState, record: MessageRecord): boolean =>
  record.reads.length === 0 && record.writtenTo.length === 0 && (
    state.controls.cancelled.has(record.id) ||
    (record.recordSays === DeliveryCode.DeliveryCancelled && answerLost(state, state.controls.cancelsWritten.get(keyOf(record.sender, record.id))))
  )

/**
 * Whether the answer to a cancel written on connection `linkId` (undefined:
 * none unanswered) can have been lost: that connection ended, or its broker
 * crashed. A cancel the broker refused is answered (`cancelRefused`).
 */
const answerLost = (state: LedgerState, linkId: number | undefined): boolean => {
  const link = linkId === undefined ? undefined : state.links.get(linkId)
  return link !== undefined && (link.closed || link.brokerEnded || state.crashedEpochs.has(link.brokerEpoch))
}

/** A connection on which a control cancel was cut short (`cancelCutShort`), and what cut it. */
interface CutShort {
  readonly link: number
  readonly by: "client-closed" | "broker-crashed"
}

/**
 * A connection that read `record` on which the broker began to write
 * `sender`'s control cancel of it, cut short before its client read it
 * there; undefined when there is none. Cut short by either end:
 *
 * - its client closed for good (sim seed 16890: B's broker-side writes took
 *   779 ms each, and B stopped while the one carrying the control was on its
 *   way): the client is closed at the end of the run and that connection was
 *   the last it opened — one that connected again after it was still live
 *   when the connection dropped, and could be given the control;
 * - its broker crashed while the connection was live to both sides
 *   (`LinkRecord.cutByCrash`; sim seed 33035: C's broker-side writes took
 *   680 ms, and the broker crashed 250 ms into the one carrying the control):
 *   the control was in memory only, and a later incarnation has no route to
 *   follow (docs/protocol.md, "When a receipt is dropped"). One that dropped
 *   before the crash is judged: its client could connect again to the same
 *   broker and be given the control (KeptControls). So is one after which
 *   the message was read again on another connection (a later incarnation
 *   handing it out again, with no control: review revaf AF2) — the crash
 *   excuses only the last connection that read it.
 *
 * A control never begun there excuses nothing, whatever became of the client
 * or the broker.
 */
const cancelCutShort = (state: LedgerState, record: MessageRecord, sender: string): CutShort | undefined => {
  const key = keyOf(sender, record.id)
  for (const read of record.reads) {
    if (!state.controls.cancelsBegun.has(`${read.link}\0${key}`)) continue
    const heard = state.controls.reads.some((control) =>
      control.link === read.link && control.action === "cancel" && control.messageId === record.id && control.from === sender
    )
    if (heard) continue
    if (state.closedClients.has(read.client) && lastLinkOf(state, read.client)?.id === read.link) {
      return { link: read.link, by: "client-closed" }
    }
    // The crash explains only why the control on this connection never arrived: a read of the message on a
    // later connection (the next broker handing it out again) is judged, not excused (review revaf AF2).
    const readLater = record.reads.some((other) => other.link !== read.link && other.seq > read.seq)
    if (state.links.get(read.link)?.cutByCrash === true && !readLater) return { link: read.link, by: "broker-crashed" }
  }
  return undefined
}

/** The end-of-run checks (see the module header). */
export const checkControls = (state: LedgerState): void => {
  for (const control of state.controls.reads) {
    const record = state.messages.get(control.messageId)
    if (record === undefined) continue
    const here = record.reads.filter((read) => read.link === control.link)
    const before = record.reads.some((read) => read.seq < control.seq)
    const beforeHere = here.some((read) => read.seq < control.seq)
    const afterHere = here.some((read) => read.seq > control.seq)
    const after = record.reads.some((read) => read.seq > control.seq)
    const receiver = nameOf(state, state.links.get(control.link)?.owner ?? "?")
    // A control about a message no copy of which ever reached the receiver: it came ahead of a message that
    // never followed (the message itself is judged by its fate).
    const never = record.reads.length === 0
    check(state, !(afterHere && !beforeHere) && !(after && !before) && !never, "control-before-message", () =>
      `${receiver} read ${nameOf(state, control.from)}'s ${control.action} of ${record.alias} on connection #${control.link} before ${record.alias} itself (${
        afterHere ? "which came after it on the same connection" : never ? "which never reached it" : "no copy had reached it before"
      })`)
  }
  for (const ack of state.controls.cancelAcks) {
    const record = state.messages.get(ack.messageId)
    if (record === undefined) continue
    const first = record.reads[0]
    if (first === undefined || first.seq < ack.seq) continue
    const firstLink = state.links.get(first.link)
    if (firstLink === undefined || firstLink.brokerEpoch !== ack.epoch) continue
    // The control may come on a later connection of the client instance that read the message: a route
    // outlives a reconnect, and a copy that instance confirmed is not sent again (seed 53031 of
    // `--parked-flush --unregister --delivery --strict`).
    const told = state.controls.reads.some((control) => {
      const client = state.links.get(control.link)?.client
      return control.action === "cancel" && control.messageId === ack.messageId && control.from === ack.sender &&
        record.reads.some((read) => read.client === client && read.seq < control.seq)
    })
    const cutShort = told ? undefined : cancelCutShort(state, record, ack.sender)
    if (cutShort !== undefined) {
      note(state, `   ${nameOf(state, ack.sender)}'s cancel of ${record.alias}: its control was on its way to ${
        nameOf(state, firstLink.owner)
      }'s connection #${cutShort.link} when ${cutShort.by === "client-closed" ? "that client closed for good" : "its broker crashed"}, unread there`)
      continue
    }
    check(state, told, "cancel-unheard", () =>
      `${nameOf(state, ack.sender)}'s cancel of ${record.alias} was acknowledged before ${
        nameOf(state, firstLink.owner)
      } first read it (on connection #${first.link}), and no cancel about it followed`)
  }
}

/**
 * `supersede-unheard` (see the module header): run at the end, with the
 * world settled and every session listed once.
 */
export const checkSupersedesHeard = (state: LedgerState): void => {
  for (const ack of state.controls.supersedeAcks) {
    const record = state.messages.get(ack.messageId)
    if (record === undefined || record.sender !== ack.sender) continue
    for (const read of record.reads) {
      if (read.seq > ack.seq) continue
      const link = state.links.get(read.link)
      if (link === undefined || link.owner !== record.target || !liveToTheEnd(link, ack.epoch)) continue
      const told = state.controls.reads.some((control) =>
        control.link === link.id && control.action === "supersede" && control.messageId === record.id &&
        control.from === record.sender
      )
      check(state, told, "supersede-unheard", () =>
        `${nameOf(state, ack.sender)}'s supersede of ${record.alias} was acknowledged after ${
          nameOf(state, link.owner)
        } read it on connection #${link.id}, which stayed live and read everything the broker wrote it, yet no control supersede of ${record.alias} reached it`)
    }
  }
}

/**
 * Whether `link` is, at the end of the run, registered and live to both
 * sides, never taken over, served by broker incarnation `epoch`, with
 * nothing the broker wrote it unread or on its way.
 */
export const liveToTheEnd = (link: LinkRecord, epoch: number): boolean =>
  link.registered && !link.closed && !link.brokerEnded && link.endedAt === undefined && link.replacedAt === undefined &&
  link.brokerEpoch === epoch && link.framesUnread === 0 && link.writesUnsent === 0
