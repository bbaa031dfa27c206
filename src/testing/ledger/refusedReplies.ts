/**
 * The `ask-hijacked` check: a reply the broker refused as matching no
 * pending ask (E_REPLY_TARGET) while the ask it answers was still open.
 * Hostile runs only (`LedgerState.hostileChecks`). It reads what the wire
 * taps record for it — when the broker first read the reply
 * (`MessageRecord.brokerFirstRead`, wire.ts) and its ask's deadline as the
 * target read it (`askDeadline`, brokerFrames.ts) — so it stands apart
 * from both.
 */
import { type LedgerState, type LinkRecord, type MessageRecord, nameOf } from "./state.ts"
import { note, violate } from "./trace.ts"

/**
 * A reply refused as matching no pending ask (E_REPLY_TARGET), with hostile
 * sessions about: a violation when the ask it answers was still open — its
 * question delivered by this same broker to this replier, the ask not
 * settled (not answered, cancelled or timed out: each settles it before the
 * broker forgets the edge), no other reply to it accepted, and none written
 * before it still waiting for its answer: a session that sends its asker two
 * messages at once makes both replies (the first answers, the second is
 * refused and sent again as a plain message), and a durable broker
 * acknowledges the first only once the asker has read it. Nor when this
 * broker first read the reply at or after the ask's deadline
 * (`brokerReceivedAt + askTimeoutMs`, as its target was told): the edge had
 * expired then (docs/protocol.md, `ask-timeout-v1`), though the asker may
 * still be waiting (a stalled reader of the replier, hostile seed 4882): for
 * the broker's notice (`ask-expiry-v1`), which ends its wait with a timeout,
 * or, without it, on its own timer from the acknowledgement it read later.
 */
export const replyRefused = (state: LedgerState, link: LinkRecord, reply: MessageRecord): void => {
  const questionId = reply.replyTo
  if (reply.kind !== "reply" || questionId === undefined) return
  const question = state.messages.get(questionId)
  const ask = state.asks.find((candidate) => candidate.questionId === questionId)
  if (
    question === undefined || question.outcome !== "acked" || question.ackEpoch !== link.brokerEpoch ||
    question.target !== link.owner || ask === undefined || ask.outcome !== undefined
  ) return
  const deadline = question.askDeadline
  const read = reply.brokerFirstRead
  if (deadline?.epoch === link.brokerEpoch && read?.epoch === link.brokerEpoch && read.at >= deadline.at) {
    note(state, `   ${reply.alias} refused: the broker read it ${read.at - deadline.at} ms after ${ask.alias}'s edge expired`)
    return
  }
  // Another reply to it accepted, or one written before this one on its way (the broker reads in order,
  // and acknowledges a reply only once its asker has read it): that one took the edge.
  let earlier = true
  for (const other of state.messages.values()) {
    if (other === reply) earlier = false
    else if (other.replyTo === questionId && (other.outcome === "acked" || (earlier && other.outcome !== "refused"))) return
  }
  violate(
    state,
    "ask-hijacked",
    `${reply.alias} (${nameOf(state, link.owner)}'s reply to ${question.alias} from ${nameOf(state, question.sender)}) was refused as matching no pending ask, though ${ask.alias} is still waiting for it`
  )
}
