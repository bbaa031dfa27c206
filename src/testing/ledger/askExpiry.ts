/**
 * Asks nobody answered, past their deadline: their asker is owed the word
 * that the question expired (docs/protocol.md, "Asks"). A question that never
 * reached its target's session and whose ask ended without a reply after the
 * broker's deadline was not withdrawn — a `cancel_ask` its client sends as
 * its wait times out comes after the deadline, and counts for nothing
 * (`AskWithdrawals.withdrawnWithin`) — so the broker tells its asker `expired`, and a
 * retry of it hears `E_DELIVERY_EXPIRED`. This module picks out such
 * questions (`owedExpiry`, which the finish asks the replay record about)
 * and checks each ended so (`checkAskExpiry`: `ask-expired-untold`) — and
 * the converse: a question whose asker's session had a reply to it is never
 * afterwards told it expired (`answeredQuestions`, `checkExpiredAfterAnswer`:
 * `expired-after-answer`).
 */
import { DeliveryCode } from "../../protocol/delivery.ts"
import { type AskRecord, isHostile, type LedgerState, type MessageRecord, nameOf } from "./state.ts"
import { violate } from "./trace.ts"

/**
 * Whether the ask `ask` ended without a reply at or after the broker's
 * deadline for its question: it timed out (on its own timer, which starts
 * once its asker read the acknowledgement, after the broker received the
 * question; or on the broker's `ask_expired`, sent at that deadline), or it
 * ended otherwise no earlier than the acknowledgement read plus its
 * `askTimeoutMs`. Either way any `cancel_ask` its client sent came after
 * the deadline. Not an ask that ended `Sent` (handed over without a wait).
 */
const endedPastDeadline = (question: MessageRecord, ask: AskRecord): boolean => {
  const outcome = ask.outcome
  if (outcome === undefined || outcome === "Replied" || outcome.startsWith("Sent")) return false
  if (outcome === "ReplyTimeout") return true
  const ackedAt = question.ackedAt
  return ackedAt !== undefined && ask.timeoutMs !== undefined && ask.endedAt !== undefined && ask.endedAt >= ackedAt + ask.timeoutMs
}

/**
 * Whether the question `record` is owed its expiry: an acknowledged ask
 * question, never handed to its target's session, whose ask ended without
 * a reply past the broker's deadline (`endedPastDeadline`); not one any
 * reply answered or may have (a reply to it not refused: the broker may
 * have marked the copy answered, `Asks.answeredCopy`), one its asker
 * cancelled (`cancel_message`) or superseded, a staged replace question
 * (`delivery-v1`), nor one a memory-only broker accepted and then crashed
 * (what it owed went with it; a later one does not know the ask). A durable
 * broker's store keeps the question, its notice and its replay record.
 */
export const owedExpiry = (state: LedgerState, record: MessageRecord): boolean => {
  if (record.kind !== "ask" || record.outcome !== "acked" || record.hostDeliveries > 0 || record.delivery !== undefined) return false
  // A memory-only broker's crash takes its mail, notices and replay record with it; a durable one's store keeps them.
  if (record.ackEpoch === undefined || (!state.durable && state.crashedEpochs.has(record.ackEpoch))) return false
  const ask = state.asks.find((candidate) => candidate.questionId === record.id && candidate.asker === record.sender)
  if (ask === undefined || !endedPastDeadline(record, ask)) return false
  const key = `${record.sender}\u0000${record.id}`
  if (state.controls.cancelled.has(record.id) || state.controls.cancelsWritten.has(key) || state.controls.superseded.has(key)) return false
  for (const other of state.messages.values()) {
    if (other.replyTo === record.id && other.outcome !== "refused") return false
  }
  return true
}

/**
 * Every question owed its expiry (`owedExpiry`) must have ended so: its
 * asker read the `expired` receipt, or a retry of it (the finish's resend)
 * heard `E_DELIVERY_EXPIRED`. One whose retry heard `delivered`, another
 * code or nothing ended silently: `ask-expired-untold` (review revq Q1:
 * every timed-out ask's `cancel_ask` counted as a withdrawal, so a copy
 * given back past its deadline was dropped untold).
 */
export const checkAskExpiry = (state: LedgerState): void => {
  for (const record of state.messages.values()) {
    if (!owedExpiry(state, record)) continue
    state.checkCount++
    if (record.expiredNotified || record.recordSays === DeliveryCode.DeliveryExpired) continue
    const ask = state.asks.find((candidate) => candidate.questionId === record.id)
    violate(
      state,
      "ask-expired-untold",
      `${record.alias} (${ask?.alias ?? "an ask"} ${nameOf(state, record.sender)} → ${nameOf(state, record.target ?? "?")}, ended ${
        ask?.outcome ?? "?"
      }) was never handed to ${nameOf(state, record.target ?? "?")} and its deadline passed, yet ${
        nameOf(state, record.sender)
      } was never told it expired (a retry now gets: ${record.recordSays ?? "nothing"})`
    )
  }
}

/**
 * The ask questions a reply to which their asker's session read for good,
 * each with the first such read's place among reads (`LedgerState.readSeq`)
 * and the reply. A reply counts when the broker accepted it from the
 * question's target, and a client of the asker's session — any instance:
 * the broker routes a reply to the session, and counts the ask answered
 * whichever instance has it — read it on a connection not granted
 * `received-v1` (the write is the delivery), or one whose confirmation
 * covering it the broker read. Not a reply its sender cancelled or
 * superseded (acknowledged): withdrawn, it reopened the ask, which may then
 * expire (Asks.answerLost). A reply lost before the asker's session read it
 * for good — evicted, expired, cancelled, or read unconfirmed on a
 * connection that closed — counts for nothing: its asker is owed the
 * `expired` then (docs/protocol.md, stale asks).
 */
export const answeredQuestions = (
  state: LedgerState
): ReadonlyMap<string, { readonly seq: number; readonly reply: MessageRecord }> => {
  const found = new Map<string, { readonly seq: number; readonly reply: MessageRecord }>()
  for (const reply of state.messages.values()) {
    if (reply.kind !== "reply" || reply.replyTo === undefined || reply.outcome !== "acked" || reply.reads.length === 0) continue
    const question = state.messages.get(reply.replyTo)
    if (question === undefined || question.kind !== "ask" || isHostile(state, question.sender)) continue
    if (question.target !== undefined && reply.sender !== question.target) continue
    const key = `${reply.sender}\u0000${reply.id}`
    if (state.controls.cancelled.has(reply.id) || state.controls.superseded.has(key)) continue
    for (const read of reply.reads) {
      const link = state.links.get(read.link)
      if (link === undefined || link.owner !== question.sender || (link.receivedV1 && link.confirmed < read.frame)) continue
      const known = found.get(question.id)
      if (known === undefined || read.seq < known.seq) found.set(question.id, { seq: read.seq, reply })
    }
  }
  return found
}

/**
 * Whether the finish asks the replay record about the answered question
 * `record` (`answeredQuestions` has it as `answered`): one never handed to
 * its target's session — the copy that comes back is what the broker might
 * report expired — accepted by a broker whose replay record outlived it (a
 * durable one, or one that did not crash), and whose asker read no
 * `expired` receipt (that is judged already).
 */
export const retriesAnswered = (state: LedgerState, record: MessageRecord, answered: ReadonlyMap<string, unknown>): boolean =>
  record.kind === "ask" && record.outcome === "acked" && record.hostDeliveries === 0 && !record.expiredNotified &&
  record.ackEpoch !== undefined && (state.durable || !state.crashedEpochs.has(record.ackEpoch)) && answered.has(record.id)

/**
 * No question its asker's session had a reply to (`answeredQuestions`) is
 * afterwards told it expired: its asker read the `expired` receipt for it
 * after that reply, or a retry of it (the finish's resend) heard
 * `E_DELIVERY_EXPIRED` — `expired-after-answer` (helper replyclose: a reply
 * accepted while the ask's copy sat on a takeover's old connection, or in
 * the mailbox behind a `replace`-staged reply, left that copy to come back
 * past its deadline as expired). A receipt read before the reply is not
 * judged.
 */
export const checkExpiredAfterAnswer = (state: LedgerState): void => {
  for (const [questionId, answered] of answeredQuestions(state)) {
    const record = state.messages.get(questionId)
    if (record === undefined) continue
    state.checkCount++
    const receipt = record.expiredSeq !== undefined && record.expiredSeq > answered.seq
    if (!receipt && record.recordSays !== DeliveryCode.DeliveryExpired) continue
    const asker = nameOf(state, record.sender)
    violate(
      state,
      "expired-after-answer",
      `${record.alias} (${asker} → ${nameOf(state, record.target ?? "?")}) was answered: ${asker} read ${answered.reply.alias}, ${
        nameOf(state, answered.reply.sender)
      }'s reply to it, for good; yet afterwards ${
        receipt ? `${asker} read the expired receipt for it` : `a retry of it heard ${DeliveryCode.DeliveryExpired}`
      }`
    )
  }
}
