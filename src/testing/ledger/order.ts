/**
 * Order: per sender → receiver, messages must arrive in the order the broker
 * read the sends it accepted, on the wire and again at the host. An
 * out-of-order arrival caused by mail requeued from a replaced connection is
 * reported as `stranded-mail` (its cause), any other as `fifo` — except the
 * broker's documented trade-off at a takeover (`takeover-late-write`): mail
 * in the replaced connection's write in progress that its transport never
 * took comes back when that connection closes, after newer mail — tolerated
 * only when that connection or the registration that took it over was made
 * without `rejoin-v1` (`LinkRecord.replacedWithoutRejoin`). With the
 * extension on both sides the broker keeps the order (a client's own rejoin
 * gives that mail to the new connection first; another instance's takeover
 * tells the old one `taken_over` and lets its write finish), so such a late
 * arrival there is reported as `fifo`, saying so. Mail the old connection
 * wrote whole and its `received-v1` client never confirmed (custody) also
 * comes back only at that close, after newer mail, at another instance's
 * takeover too (docs/protocol.md documents it; seed 81 of `--parked-flush
 * --unregister --delivery`, test/broker/takeover-custody-order.test.ts):
 * nothing names or tolerates it, so it is reported as `fifo`.
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
 * caught in a replaced connection follows the session"). `withoutRejoin`
 * when one such takeover was made or suffered without `rejoin-v1` (the
 * documented trade-off), `withRejoin` when each had it on both sides, else
 * undefined.
 */
export const lateFromReplaced = (
  state: LedgerState,
  record: MessageRecord,
  receiver: string
): "withoutRejoin" | "withRejoin" | undefined => {
  let found: "withoutRejoin" | "withRejoin" | undefined
  for (const { link: linkId, startedAt } of record.cutFrom) {
    const link = state.links.get(linkId)
    if (
      link === undefined || link.owner !== receiver || link.replacedAt === undefined || startedAt > link.replacedAt ||
      record.reads.some((read) => read.link === linkId)
    ) continue
    if (link.replacedWithoutRejoin !== false) return "withoutRejoin"
    found = "withRejoin"
  }
  return found
}

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
  const cut = inOrder || rescued ? undefined : lateFromReplaced(state, record, receiver)
  const late = cut === "withoutRejoin"
  const stranded = !inOrder && cut === undefined && (rescued || (record.ackedAt !== undefined &&
    (state.takeovers.get(receiver) ?? []).some((at) => at >= (record.ackedAt ?? Infinity))))
  check(state, inOrder, late ? "takeover-late-write" : stranded ? "stranded-mail" : "fifo", () =>
    `${record.alias} from ${nameOf(state, record.sender)} reached ${nameOf(state, receiver)} ${where} after a message the broker accepted later${
      late
        ? " (it was in the write in progress of a connection the receiver had replaced, and came back when that connection closed)"
        : cut === "withRejoin"
        ? " (it was in the write in progress of a connection the receiver had replaced, and came back when that connection closed, although both registrations had rejoin-v1)"
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
