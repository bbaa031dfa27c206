/**
 * Worlds for the withdrawals' list of `OutboundRecords` (kept withdrawals,
 * their fair shares and drops), driven by hand: records kept on a table with
 * no broker around it.
 */
import type { Outcome } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { OutboundRecords } from "../../src/broker/OutboundRecords.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import type { Message } from "../../src/protocol/frames.ts"

/** The seed the kept-withdrawals tests build their tables with. */
export const SEED = 12345

/** A send's outcome when its sender withdrew it (P73 cancel). */
export const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }

/** A plain message `id` (text "t", timestamp 0). */
export const messageOf = (id: string): Message => ({ id, timestamp: 0, content: { text: "t" } })

/** "a"'s message `id`, routed to `receiverKey` at `at`, withdrawn while it waited, its route aged out. */
export const keptFor = (table: OutboundRecords, id: string, receiverKey: string, at: number): OutboundRecord => {
  const record = table.claim(OutboundRecord.of("a", "t", messageOf(id), undefined))
  table.keepRoute(record, receiverKey, 7, at)
  record.withdrawal = CANCELLED
  table.keepWithdrawal(record, at)
  table.ageRoute(record, at)
  return record
}

/**
 * A table (SEED) whose log lines are collected in `notices`, and `fill(count, at)`, which keeps `count` more
 * withdrawals at `at` (`keptFor`), ids m0, m1, … across calls, spread over eight receivers r0–r7.
 */
export const noticedTable = () => {
  const notices: Array<string> = []
  const table = new OutboundRecords(SEED, (line) => notices.push(line))
  let n = 0
  const fill = (count: number, at: number): void => {
    for (let k = 0; k < count; k++, n++) keptFor(table, `m${n}`, `r${n % 8}`, at)
  }
  return { fill, notices, table }
}
