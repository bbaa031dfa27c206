/**
 * Size: about 450 lines, half of them comments; one concept (hosts' hand-offs
 * and asks' ends), most of it the `answer-after-timeout` judgement with its
 * excuses (`answersAfterTimeout`), and `refused-as-timeout`.
 *
 * Hosts and asks: what each simulated host was handed (checked for
 * duplicates, routing and order, and against what its client took after its
 * own drop: ledger/dropped.ts), and how each ask settled — exactly once, by
 * a reply that answers it, from the session it asked.
 */
import type { Message } from "../../protocol/frames.ts"
import { checkPassiveIntent } from "./delivery.ts"
import { checkHandedAfterDrop } from "./dropped.ts"
import { checkOrder, rescuedNow } from "./order.ts"
import { type AskClient, type AskRecord, clientProcessOf, type LedgerState, type MessageRecord, nameOf, recordFrom, resolveTarget } from "./state.ts"
import { alias, check, clip, note } from "./trace.ts"
import type { AskOutcome, AskTally } from "./types.ts"

/**
 * A host's own journal restored a message to a new generation (C-DLV-14),
 * which hands it to the host again: not a second hand-off when an earlier
 * generation's host had it (the journal says its agent never did; the host's
 * model checks the agent gets it once), else its first. Returns whether it
 * counted as the first.
 */
export const hostRestored = (state: LedgerState, receiver: string, fromId: string, message: Message, intent: string): boolean => {
  const record = recordFrom(state, message.id, fromId)
  if (record === undefined || record.hostDeliveries === 0) {
    hostDelivered(state, receiver, fromId, message, intent)
    return true
  }
  note(state, `${nameOf(state, receiver)} ← ${alias(state, message.id)} from ${nameOf(state, fromId)} again, restored by its host's journal`)
  check(state, record.target === undefined || record.target === receiver, "misrouted", () =>
    `${record.alias} for ${nameOf(state, record.target ?? "?")} was restored to ${nameOf(state, receiver)}`)
  return false
}

/** A simulated host was handed an inbound message. */
export const hostDelivered = (state: LedgerState, receiver: string, fromId: string, message: Message, intent: string): void => {
  const record = recordFrom(state, message.id, fromId)
  note(state, `${nameOf(state, receiver)} ← ${alias(state, message.id)} from ${nameOf(state, fromId)} (${intent}) "${clip(message.content.text)}"`)
  if (record === undefined) return
  checkHandedAfterDrop(state, record, receiver, `${nameOf(state, receiver)}'s host`)
  record.hostDeliveries++
  if (record.hostDeliveries === 1 && rescuedNow(state, record)) record.rescued = true
  // Re-sent to a new client of the receiver, which cannot know the first copy: after a crash (durable
  // mode), or after the connection it went out on closed before its client confirmed reading it. A new
  // process that resumed the same client instance is a new client here (seed 12 `--reader-return
  // --client-timings`): its repeat filter starts empty.
  const clients = new Set(record.reads.map((read) => clientProcessOf(state, read)))
  const acrossRestart = clients.size > 1 && (record.redelivered > 0 || record.resent > 0)
  const kind = !acrossRestart ? "duplicate-delivery" : record.redelivered > 0 ? "crash-redelivery" : "unconfirmed-redelivery"
  check(state, record.hostDeliveries === 1, kind, () =>
    `${record.alias} was handed to ${nameOf(state, receiver)} ${record.hostDeliveries} times${
      !acrossRestart ? "" : record.redelivered > 0
      ? " (re-sent after a broker crash to a new client of it, which had not seen the first copy)"
      : ` (re-sent after its connection closed unconfirmed${
        record.confirmationLost ? ", its client's confirmation lost in flight with it" : ""
      }, to a new client of it, which had not seen the first copy)`
    }`)
  if (record.target !== undefined) {
    check(state, record.target === receiver, "misrouted", () =>
      `${record.alias} for ${nameOf(state, record.target ?? "?")} was handed to ${nameOf(state, receiver)}`)
  }
  // A copy (a violation itself) takes no part in the order.
  if (record.hostDeliveries === 1) checkOrder(state, state.lastHostSeq, record, receiver, "at the host")
  checkPassiveIntent(state, record, receiver, intent)
}

/** An ask was started, through `client` when the caller names it; returns its alias. */
export const askStarted = (state: LedgerState, asker: string, target: string, client?: AskClient): string => {
  const targetId = resolveTarget(state, target, undefined)
  const record: AskRecord = {
    alias: `ask${state.asks.length + 1}`,
    asker,
    targetId,
    startedAt: state.now(),
    questionId: undefined,
    outcome: undefined,
    client
  }
  state.asks.push(record)
  // An open ask whose question is not written yet (its session waits to reconnect) stays the one its
  // question is linked to: an ask started meanwhile loses (`Already waiting for a reply`) and sends nothing.
  const open = state.openAsk.get(asker)
  if (open === undefined || open.questionId !== undefined) state.openAsk.set(asker, record)
  return record.alias
}

/** The question id of an ask, once its send was written (undefined before, or if it never was). */
export const questionOf = (state: LedgerState, askAlias: string): string | undefined => {
  return state.asks.find((ask) => ask.alias === askAlias)?.questionId
}

/**
 * An ask ended. A `Replied` outcome carries the reply: it must answer this
 * ask's question, come from its target, and count as that reply's delivery.
 */
export const askEnded = (
  state: LedgerState,
  askAlias: string,
  outcome: AskOutcome,
  reply?: { readonly questionId: string; readonly fromId: string; readonly message: Message }
): void => {
  const record = state.asks.find((ask) => ask.alias === askAlias)
  if (record === undefined) return
  if (state.openAsk.get(record.asker) === record) state.openAsk.delete(record.asker)
  check(state, record.outcome === undefined, "ask-unsettled", () => `${askAlias} settled twice`)
  record.outcome = outcome
  record.endedAt = state.now()
  if (outcome === "ReplyTimeout") {
    record.heardBroker = heardBroker(state, record)
    record.owedWait = owedWait(state, record)
  }
  if (reply === undefined) {
    note(state, `${nameOf(state, record.asker)} ${askAlias} ended: ${outcome}`)
    return
  }
  note(
    state,
    `${nameOf(state, record.asker)} ${askAlias} (${alias(state, reply.questionId)}) replied by ${alias(state, reply.message.id)} from ${
      nameOf(state, reply.fromId)
    } "${clip(reply.message.content.text)}"`
  )
  if (record.questionId === undefined) record.questionId = reply.questionId
  check(
    state,
    reply.message.replyTo === reply.questionId && record.questionId === reply.questionId,
    "ask-wrong-reply",
    () => `${askAlias} settled by ${alias(state, reply.message.id)}, which answers ${reply.message.replyTo === undefined ? "nothing" : alias(state, reply.message.replyTo)}`
  )
  if (record.targetId !== undefined) {
    check(state, reply.fromId === record.targetId, "ask-wrong-reply", () =>
      `${askAlias} to ${nameOf(state, record.targetId ?? "?")} settled by a reply from ${nameOf(state, reply.fromId)}`)
  }
  const message = state.messages.get(reply.message.id)
  if (message === undefined) return
  checkHandedAfterDrop(state, message, record.asker, `${nameOf(state, record.asker)}'s ${askAlias}`)
  message.hostDeliveries++
  if (message.hostDeliveries === 1 && rescuedNow(state, message)) message.rescued = true
  check(state, message.hostDeliveries === 1, "duplicate-delivery", () =>
    `${message.alias} was handed to ${nameOf(state, record.asker)} ${message.hostDeliveries} times`)
  check(state, message.sender === reply.fromId && message.replyTo === reply.questionId, "ask-wrong-reply", () =>
    `${askAlias} settled by ${message.alias}, which ${nameOf(state, message.sender)} sent as an answer to ${
      message.replyTo === undefined ? "nothing" : alias(state, message.replyTo)
    }`)
}

/** Asks that have not settled. */
export const unsettledAsks = (state: LedgerState): ReadonlyArray<string> => {
  return state.asks.filter((ask) => ask.outcome === undefined).map((ask) => ask.alias)
}

/**
 * Whether the asker of an ask that timed out heard the broker about it, or
 * could have (`AskRecord.heardBroker`): it ended before its own deadline, or
 * it has a connection registered by the deadline and live still (a
 * connection only ever goes from live to ended) on which its client had read
 * everything the broker wrote, with no broker write still on its way there:
 * the broker had nothing more for it, so a reply it accepted was kept back
 * (review revled: a broker that writes neither the reply nor the settling
 * answer is caught). Frames written there that the client had not read when
 * its wait ended, or a slow write still on its way, excuse it: the reply or
 * the settling answer may be among them. Without a known deadline, whether
 * it has such a connection now.
 * Not on a connection where its client wrote a settling `list` it has not
 * read the answer to (`LinkRecord.settlesUnanswered`): the broker holds that
 * answer, unwritten, while a reply to the asker is parked (so nothing is
 * unread or on its way), and frames written after it (the liveness probe's
 * answer) overtake it; the asker gave up on it at its liveness timeout, by
 * design (src/broker/ParkedReplies.ts), and the reply reaches its session
 * late (sim seed 10003 of `--settle-hold --client-timings`).
 */
const heardBroker = (state: LedgerState, record: AskRecord): boolean => {
  const deadline = ownDeadline(state, record)
  const now = state.now()
  if (deadline !== undefined && now < deadline) return true
  for (const link of state.links.values()) {
    if (
      link.owner === record.asker && link.registered && link.registeredAt !== undefined && link.settlesUnanswered.size === 0 &&
      !link.closed && link.endedAt === undefined && !state.crashedEpochs.has(link.brokerEpoch) &&
      (deadline === undefined || (link.registeredAt <= deadline && link.framesUnread === 0 && link.writesUnsent === 0))
    ) {
      return true
    }
  }
  return false
}

/**
 * Whether an ask that timed out just now gave up while its client still
 * owed it a wait for a next connection (`AskRecord.owedWait`): at its own
 * deadline its client settles on the live connection, or, with none live
 * or that one dropped before the answer, on the next one that comes within
 * its rejoin grace (src/client/SettleRoundTrip.ts). So a wait that ended at
 * or after the deadline with no connection of its client registered and
 * live, before the first settling round trip could have timed out (it starts
 * at the deadline: a broker that did not answer within the liveness
 * timeout excuses it) and with no settling answer read since the deadline
 * (an answer the broker gave without the reply is `heardBroker`'s to
 * judge), owed the wait until the deadline plus the rejoin grace. Both ends
 * count from the ask's deadline as the ledger takes it, at or before the
 * client's own (and its drop's), so the check errs on the lenient side.
 * Undefined when any of it does not hold, or the client is not known.
 */
const owedWait = (state: LedgerState, record: AskRecord): AskRecord["owedWait"] => {
  const client = record.client
  const deadline = ownDeadline(state, record)
  const now = state.now()
  if (client === undefined || deadline === undefined || now < deadline || now >= deadline + client.livenessTimeoutMs) return undefined
  for (const link of state.links.values()) {
    if (link.client !== client.key) continue
    const live = link.registeredAt !== undefined && !link.closed && link.endedAt === undefined
    if (live || (link.settleAnsweredAt !== undefined && link.settleAnsweredAt >= deadline)) return undefined
  }
  return { endedAt: now, until: deadline + client.rejoinGraceMs }
}

/**
 * An ask's own deadline, as its asker's timer counts it: from when it read
 * its question's acknowledgement, `askTimeoutMs` on (AskRecord.heardBroker).
 * Undefined when either is unknown.
 */
const ownDeadline = (state: LedgerState, record: AskRecord): number | undefined => {
  const ackedAt = record.questionId === undefined ? undefined : state.messages.get(record.questionId)?.ackedAt
  return ackedAt === undefined || record.timeoutMs === undefined ? undefined : ackedAt + record.timeoutMs
}

/**
 * Asks that ended in `ReplyTimeout` though their own client had read the
 * broker's refusal of their question before they ended
 * (`refused-as-timeout`), one line each: a refusal read after the send
 * timeout ends the settling ask with that refusal (src/session/Ask.ts
 * `settleUnacknowledged`). Not `E_TARGET_REBOUND`: the question is then sent
 * again, and that send's verdict is the one that counts.
 */
export const refusedAsTimeout = (state: LedgerState): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const ask of state.asks) {
    const endedAt = ask.endedAt
    if (ask.outcome !== "ReplyTimeout" || ask.questionId === undefined || endedAt === undefined) continue
    const question = state.messages.get(ask.questionId)
    const read = question?.refusedRead
    if (question === undefined || read === undefined || question.outcome !== "refused") continue
    if (read.at > endedAt) continue
    if (ask.client !== undefined && read.client !== ask.client.key) continue
    found.push(`${ask.alias} of ${nameOf(state, ask.asker)} ended ReplyTimeout at ${endedAt} ms, though its client ${read.client} read the broker's refusal of ${
      question.alias
    } (${read.code}) at ${read.at} ms`)
  }
  return found
}

/**
 * Asks that ended in a timeout — or in `DeliveryUnknown` on a live
 * connection (`unknownAnswered`) — though the broker accepted a reply to them
 * from the session they asked (`answer-after-timeout`), one line each. Not
 * a reply its sender was later told was lost (an `expired` receipt: the
 * broker opened the ask again, and its expiry then ended the wait) or
 * replaced while staged (`delivery-v1`: never delivered), nor an
 * ask whose asker did not hear the broker at its own deadline
 * (`AskRecord.heardBroker`: no connection then, even if it made one before
 * its wait ended, or a round trip on it that did not come back in time):
 * such an asker gives up by design, and a reply it had not read by then
 * reaches its session late — unless its client owed the wait a next
 * connection (`AskRecord.owedWait`: none live when the wait ended, before
 * a settling round trip could time out) and read the reply on one after
 * the wait ended and within that grace: its client gave up on a connection
 * it promised to wait for, and the reply reached nobody. Nor a reply handed
 * for good to another client of the asker's session before the wait ended
 * (`handedElsewhere`): the session had it; the ask's client never could.
 * Nor a reply its sender cancelled, the broker answering that the cancel
 * took (`controls.cancelled`): withdrawn, it reopened the ask. A reply the
 * ask's own client read while the ask waited is never excused: the session
 * takes it for the ask as its client reads it, however slowly it handles
 * the messages read before it (C-ORD-32).
 */
export const answersAfterTimeout = (state: LedgerState): ReadonlyArray<string> => [
  ...timedOutAnswered(state),
  ...unknownAnswered(state)
]

/** The `ReplyTimeout` half of `answersAfterTimeout`. */
const timedOutAnswered = (state: LedgerState): ReadonlyArray<string> => {
  const timedOut = new Map<string, AskRecord>()
  for (const ask of state.asks) {
    if (ask.outcome !== "ReplyTimeout" || ask.questionId === undefined) continue
    if (ask.heardBroker !== false || ask.owedWait !== undefined) timedOut.set(ask.questionId, ask)
  }
  if (timedOut.size === 0) return []
  const found: Array<string> = []
  for (const message of state.messages.values()) {
    if (message.kind !== "reply" || message.replyTo === undefined || message.outcome !== "acked" || message.expiredNotified) continue
    // A staged replace reply its sender was told was replaced never reached the broker's ask edge.
    if (message.delivery?.replaced === true) continue
    const ask = timedOut.get(message.replyTo)
    if (ask === undefined || (ask.targetId !== undefined && message.sender !== ask.targetId)) continue
    // Its sender cancelled it, and the broker answered that the cancel took: withdrawn, it opened the ask
    // again (Asks.answerLost), whose deadline then ended the wait (sim seed 16890 of `--unregister
    // --reader-return`: the op's message went to the asker while its sender was answering the ask).
    if (state.controls.cancelled.has(message.id)) {
      note(state, `${ask.alias} of ${nameOf(state, ask.asker)} timed out; ${message.alias}, ${nameOf(state, message.sender)}'s reply to it, was cancelled by its sender: not owed to the ask`)
      continue
    }
    const elsewhere = handedElsewhere(state, message, ask)
    if (elsewhere !== undefined) {
      note(state, `${ask.alias} of ${nameOf(state, ask.asker)} timed out; ${message.alias}, ${nameOf(state, message.sender)}'s reply to it, went for good to another client of ${
        nameOf(state, ask.asker)
      } (${elsewhere}) before its wait ended: not owed to the ask`)
      continue
    }
    if (ask.heardBroker !== false) {
      found.push(`${ask.alias} of ${nameOf(state, ask.asker)} timed out, though the broker accepted ${message.alias}, ${
        nameOf(state, message.sender)
      }'s reply to it`)
      continue
    }
    const owed = ask.owedWait
    const client = ask.client
    if (owed === undefined || client === undefined) continue
    const late = message.reads.find((read) => read.client === client.key && read.at > owed.endedAt && read.at < owed.until)
    if (late === undefined) continue
    found.push(`${ask.alias} of ${nameOf(state, ask.asker)} timed out at ${owed.endedAt} ms with no connection, though its client ${
      client.key
    } read ${message.alias}, ${nameOf(state, message.sender)}'s reply to it the broker accepted, on link #${late.link} at ${late.at} ms, within its rejoin grace (until ${owed.until} ms)`)
  }
  return found
}

/**
 * The `DeliveryUnknown` half of `answersAfterTimeout`: asks that ended
 * "maybe not delivered" though the broker accepted their question (its
 * client read the acknowledgement, then or later) and a reply to it from
 * the session they asked, reading that reply before the ask ended, and the
 * ask's own client read the reply on a connection that was live (registered,
 * not ended) when the ask ended — so the answer came to the asker's live
 * connection, and the ask said it may not have been delivered (an
 * acknowledgement held past the send timeout; the session settles there now,
 * `settleUnacknowledged` in src/session/Ask.ts). The excuses of a reply that
 * never counted as an answer are those of the timeout half: an `expired`
 * receipt to its sender, a replaced staged reply, a cancel that took. An
 * ask with no connection of its client live at its end, or whose client
 * never read the reply there, is not judged: it may have heard nothing.
 */
const unknownAnswered = (state: LedgerState): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const ask of state.asks) {
    const client = ask.client
    const endedAt = ask.endedAt
    if (ask.outcome !== "DeliveryUnknown" || ask.questionId === undefined || client === undefined || endedAt === undefined) continue
    if (state.messages.get(ask.questionId)?.outcome !== "acked") continue
    for (const message of state.messages.values()) {
      if (message.kind !== "reply" || message.replyTo !== ask.questionId || message.outcome !== "acked" || message.expiredNotified) continue
      if (message.delivery?.replaced === true || state.controls.cancelled.has(message.id)) continue
      if (ask.targetId !== undefined && message.sender !== ask.targetId) continue
      const accepted = message.brokerFirstRead
      if (accepted === undefined || accepted.at > endedAt) continue
      const read = message.reads.find((read) => {
        const link = state.links.get(read.link)
        return read.client === client.key && link !== undefined && link.registeredAt !== undefined &&
          link.registeredAt <= endedAt && (link.endedAt === undefined || link.endedAt > endedAt)
      })
      if (read === undefined) continue
      found.push(`${ask.alias} of ${nameOf(state, ask.asker)} ended DeliveryUnknown at ${endedAt} ms, though the broker accepted its question and ${
        message.alias
      }, ${nameOf(state, message.sender)}'s reply to it (read by the broker at ${accepted.at} ms), which its client ${client.key} read on link #${read.link}, live when the ask ended, at ${read.at} ms`)
      break
    }
  }
  return found
}

/**
 * The client of the asker's session other than the ask's own (`AskRecord.client`)
 * that read `reply` before the ask's wait ended and kept it for good, the
 * ask's client never reading it; undefined when there is none, or the ask's
 * client is not known. For good: its connection was not granted
 * `received-v1` (the broker's write is the delivery), or the broker read a
 * confirmation covering it (then or later: unconfirmed, the broker gives
 * it back at that connection's close). The broker routes a reply to the session, to
 * whichever connection holds it — here another instance that took the
 * session over while the asker's client reconnected (sim seed 16843 of
 * `--settle-hold --delivery`: the take-back variant's reply, not yet written
 * to the old connection, moved to the new holder with the rest of its
 * outbox) — so the asker could not have had it, whatever it heard. A
 * client granted `reply-elsewhere-v1` that sends the ask again is told so
 * and ends `AskAnsweredElsewhere` (seed 16843 now does); one acknowledged
 * before the takeover is told as its client registers the session again,
 * when it does before the ask's deadline. The excuse remains for the asks
 * not told (no registration in time, a notice lost with its connection).
 * `answeredElsewhereFalsely` holds that notice to this same test.
 */
const handedElsewhere = (state: LedgerState, reply: MessageRecord, ask: AskRecord): string | undefined => {
  const own = ask.client?.key
  const endedAt = ask.endedAt
  if (own === undefined || endedAt === undefined || reply.reads.some((read) => read.client === own)) return undefined
  for (const read of reply.reads) {
    if (read.at > endedAt) continue
    const link = state.links.get(read.link)
    if (link !== undefined && link.owner === ask.asker && (!link.receivedV1 || link.confirmed >= read.frame)) return read.client
  }
  return undefined
}

/**
 * Asks that ended `AskAnsweredElsewhere` (`reply-elsewhere-v1`: the broker
 * said the reply went for good to another client instance of the asker's
 * session) with no reply to them read for good, before the ask ended, by
 * another client of that session and never by the ask's own
 * (`handedElsewhere`): the broker's word was false, and the asker gave up
 * on a reply it could have had. One line each.
 */
export const answeredElsewhereFalsely = (state: LedgerState): ReadonlyArray<string> => {
  const found: Array<string> = []
  for (const ask of state.asks) {
    if (ask.outcome !== "AskAnsweredElsewhere") continue
    const questionId = ask.questionId
    let handed = false
    for (const message of state.messages.values()) {
      if (questionId === undefined || message.kind !== "reply" || message.replyTo !== questionId) continue
      const elsewhere = handedElsewhere(state, message, ask)
      if (elsewhere === undefined) continue
      handed = true
      note(state, `${ask.alias} of ${nameOf(state, ask.asker)} ended AskAnsweredElsewhere: ${message.alias} went for good to ${elsewhere}`)
    }
    if (!handed) {
      found.push(`${ask.alias} of ${nameOf(state, ask.asker)} ended AskAnsweredElsewhere, though no reply to it went for good to another client of ${
        nameOf(state, ask.asker)
      } before it ended`)
    }
  }
  return found
}

/** How every ask of the run ended, counted. */
export const askTally = (state: LedgerState): AskTally => {
  let replied = 0
  let timedOut = 0
  let interrupted = 0
  let failed = 0
  let answeredElsewhere = 0
  for (const ask of state.asks) {
    if (ask.outcome === "Replied") replied++
    else if (ask.outcome === "ReplyTimeout") timedOut++
    else if (ask.outcome === "Interrupted") interrupted++
    else if (ask.outcome === "AskAnsweredElsewhere") answeredElsewhere++
    else if (ask.outcome !== undefined) failed++
  }
  return { started: state.asks.length, replied, timedOut, failed, answeredElsewhere, interrupted }
}
