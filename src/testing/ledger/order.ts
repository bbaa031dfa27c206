/**
 * Order: per sender → receiver, messages must arrive in the order the broker
 * read the sends it accepted, on the wire and again at the host. An
 * out-of-order arrival caused by mail requeued from a replaced connection is
 * reported as `stranded-mail` (its cause), any other as `fifo` — except the
 * broker's documented trade-off at a takeover (`takeover-late-write`): mail
 * in the replaced connection's write in progress that its transport never
 * took comes back when that connection closes, after newer mail. A client's
 * own rejoin (`rejoin-v1`) is not such a takeover: the broker gives that mail
 * to the new connection first, so it is in order and nothing is reported.
 *
 * Replace-mode messages (`delivery-v1`) are outside this order: the broker
 * stages them and hands them over when their coalescing window closes, after
 * messages the sender sent later (C-DLV-5); ledger/delivery.ts checks them.
 */
import { type LedgerState, type MessageRecord, nameOf } from "./state.ts"
import { check } from "./trace.ts"

/** Acknowledged before the end-of-run rescue began, and first handed over during it. */
export const rescuedNow = (state: LedgerState, record: MessageRecord): boolean =>
  state.rescuing && record.ackedAt !== undefined && record.ackedAt < state.rescueStartedAt

/**
 * Whether `record` was in a write to a connection of `receiver`, begun before
 * a takeover replaced that connection, that ended before the transport took
 * it (`cutFrom`), and was never read there: the broker takes such mail back
 * only when that connection closes, after the mail it handed the new
 * connection at the takeover and any newer mail (docs/protocol.md, "Mail
 * caught in a replaced connection follows the session").
 */
export const lateFromReplaced = (state: LedgerState, record: MessageRecord, receiver: string): boolean =>
  record.cutFrom.some(({ link: linkId, startedAt }) => {
    const link = state.links.get(linkId)
    return link !== undefined && link.owner === receiver && link.replacedAt !== undefined &&
      startedAt <= link.replacedAt && !record.reads.some((read) => read.link === linkId)
  })

/** Checks `record`'s arrival at `receiver` against the last one from the same sender (`last`: wire or host). */
export const checkOrder = (
  state: LedgerState,
  last: Map<string, number>,
  record: MessageRecord,
  receiver: string,
  where: string
): void => {
  const seq = record.acceptSeq
  if (seq === undefined || record.delivery?.threadId !== undefined) return
  const key = `${record.sender}\u0000${receiver}`
  const previous = last.get(key)
  const inOrder = previous === undefined || previous < seq
  // Out of order because it was requeued from a replaced connection: the stranded-mail issue, unless
  // it is the takeover's documented trade-off (what the old writer had taken comes back at its close).
  const rescued = !inOrder && rescuedNow(state, record)
  const late = !inOrder && !rescued && lateFromReplaced(state, record, receiver)
  const stranded = !inOrder && !late && (rescued || (record.ackedAt !== undefined &&
    (state.takeovers.get(receiver) ?? []).some((at) => at >= (record.ackedAt ?? Infinity))))
  check(state, inOrder, late ? "takeover-late-write" : stranded ? "stranded-mail" : "fifo", () =>
    `${record.alias} from ${nameOf(state, record.sender)} reached ${nameOf(state, receiver)} ${where} after a message the broker accepted later${
      late
        ? " (it was in the write in progress of a connection the receiver had replaced, and came back when that connection closed)"
        : stranded
        ? " (it was requeued from a connection the receiver had replaced)"
        : ""
    }`)
  if (previous === undefined || previous < seq) last.set(key, seq)
}

/** Marks the end-of-run phase that makes every session register again (see `stranded-mail`). */
export const setRescue = (state: LedgerState, on: boolean): void => {
  state.rescuing = on
  if (on) state.rescueStartedAt = state.now()
}
