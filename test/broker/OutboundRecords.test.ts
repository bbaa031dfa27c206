/**
 * The outbound records (OutboundRecords.ts): one object per (sender, message
 * id) holding a replay part and a route part, each with its own age order.
 * Checked against the obvious model — two arrays in age order — under any
 * sequence of operations, and the replay policy built on it (DeliveryRecords)
 * against a model of its expiry and eviction order.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { DELIVERED, DeliveryRecords, type Outcome, recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { MAX_KEPT_WITHDRAWALS } from "../../src/broker/KeptWithdrawals.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { idHash, OutboundRecords } from "../../src/broker/OutboundRecords.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import type { Message } from "../../src/protocol/frames.ts"

const SENDERS = ["a", "b", "c"]

/** A known hash seed, so that the tests can pick ids whose hashes collide. */
const SEED = 12345

/** `pairs` pairs of distinct ids with the same hash under SEED (searched for: 30-bit hashes collide by ~40,000 ids). */
const collidingIds = (pairs: number): Array<string> => {
  const seen = new Map<number, string>()
  const found: Array<string> = []
  for (let n = 0; found.length < 2 * pairs; n++) {
    const id = `m${n}`
    const hash = idHash(id, SEED)
    const earlier = seen.get(hash)
    if (earlier === undefined) seen.set(hash, id)
    else {
      found.push(earlier, id)
      seen.delete(hash)
    }
  }
  return found
}

/**
 * Ids shared between senders on purpose (an id several senders used is a
 * chain of one hash), four of them two pairs whose hashes collide (a chain
 * of two ids).
 */
const IDS = [...collidingIds(2), "x", "y"]
const ID_COUNT = IDS.length

const messageOf = (id: string, text = "t"): Message => ({ id, timestamp: 0, content: { text } })

type Op =
  | { readonly op: "record"; readonly sender: number; readonly id: number; readonly dt: number; readonly looked: boolean }
  | { readonly op: "route"; readonly sender: number; readonly id: number; readonly dt: number }
  | { readonly op: "find"; readonly sender: number; readonly id: number }
  | { readonly op: "dropOldestRecord" }
  | { readonly op: "dropOldestRoute" }
  | { readonly op: "dropRecord"; readonly sender: number; readonly id: number }
  | { readonly op: "dropRoute"; readonly sender: number; readonly id: number }

const key = fc.record({ sender: fc.nat(SENDERS.length - 1), id: fc.nat(ID_COUNT - 1) })
const ops = fc.array(
  fc.oneof(
    key.chain((k) =>
      fc.record({ op: fc.constant("record" as const), dt: fc.nat(3), looked: fc.boolean() }).map((o) => ({ ...o, ...k }))
    ),
    key.chain((k) => fc.record({ op: fc.constant("route" as const), dt: fc.nat(3) }).map((o) => ({ ...o, ...k }))),
    fc.constant({ op: "dropOldestRecord" as const }),
    fc.constant({ op: "dropOldestRoute" as const }),
    key.map((k) => ({ op: "dropRecord" as const, ...k })),
    key.map((k) => ({ op: "dropRoute" as const, ...k })),
    key.map((k) => ({ op: "find" as const, ...k }))
  ),
  { maxLength: 300 }
)

interface Part {
  readonly key: string
  readonly at: number
}

const keyOf = (sender: number, id: number) => `${SENDERS[sender]}/${IDS[id]}`

/** Every record of `id` in `table`, whatever its sender, in the order they joined. */
const withId = (table: OutboundRecords, id: string): Array<OutboundRecord> => {
  const found: Array<OutboundRecord> = []
  for (let record = table.firstWithId(id); record !== undefined; record = table.nextWithId(record)) found.push(record)
  return found
}

/** `sender`'s record of `id` in `table`, read without `find` (and its memo). */
const recordOf = (table: OutboundRecords, id: string, sender: string): OutboundRecord | undefined =>
  withId(table, id).find((record) => record.senderKey === sender)

describe("OutboundRecords", () => {
  // `find` leaves a memo its id's next `claim` answers from while the table is unchanged: claims come
  // right after a `find` of their id (the send pipeline), after other finds, drops and claims
  // (a stale memo), or with no `find` at all.
  it("keeps both parts like two age-ordered lists: same records, same oldest, same counts, one object per (sender, id)", () => {
    fc.assert(fc.property(ops, (sequence: ReadonlyArray<Op>) => {
      const table = new OutboundRecords(SEED)
      let records: Array<Part> = []
      let routes: Array<Part> = []
      let now = 0
      const find = (sender: number, id: number) => table.find(SENDERS[sender]!, IDS[id]!)
      for (const step of sequence) {
        switch (step.op) {
          case "record": {
            now += step.dt
            const candidate = OutboundRecord.of(SENDERS[step.sender]!, "target", messageOf(IDS[step.id]!), undefined)
            const before = recordOf(table, IDS[step.id]!, SENDERS[step.sender]!)
            if (step.looked) expect(find(step.sender, step.id)).toBe(before)
            const claimed = table.claim(candidate)
            // The table's object for a (sender, id) is the one already there, else the candidate.
            expect(claimed).toBe(before ?? candidate)
            table.keepRecord(claimed, { ok: true, delivery: "socket_delivered" }, now, 1)
            records = records.filter((part) => part.key !== keyOf(step.sender, step.id))
            records.push({ key: keyOf(step.sender, step.id), at: now })
            break
          }
          case "route": {
            now += step.dt
            const claimed = table.claim(find(step.sender, step.id) ?? new OutboundRecord(SENDERS[step.sender]!, IDS[step.id]!, undefined))
            table.keepRoute(claimed, "receiver", 1, now)
            routes = routes.filter((part) => part.key !== keyOf(step.sender, step.id))
            routes.push({ key: keyOf(step.sender, step.id), at: now })
            break
          }
          case "dropOldestRecord": {
            const oldest = table.oldestRecord
            expect(oldest === undefined ? undefined : `${oldest.senderKey}/${oldest.id}`).toBe(records[0]?.key)
            if (oldest !== undefined) table.dropRecord(oldest)
            records.shift()
            break
          }
          case "dropOldestRoute": {
            const oldest = table.oldestRoute
            expect(oldest === undefined ? undefined : `${oldest.senderKey}/${oldest.id}`).toBe(routes[0]?.key)
            if (oldest !== undefined) table.dropRoute(oldest)
            routes.shift()
            break
          }
          case "dropRecord": {
            const record = find(step.sender, step.id)
            if (record !== undefined) table.dropRecord(record)
            records = records.filter((part) => part.key !== keyOf(step.sender, step.id))
            break
          }
          case "dropRoute": {
            const record = find(step.sender, step.id)
            if (record !== undefined) table.dropRoute(record)
            routes = routes.filter((part) => part.key !== keyOf(step.sender, step.id))
            break
          }
          case "find":
            find(step.sender, step.id)
            break
        }
        expect(table.records).toBe(records.length)
        expect(table.routes).toBe(routes.length)
        expect(table.oldestRecord?.recordedAt).toBe(records[0]?.at)
        expect(table.oldestRoute?.routedAt).toBe(routes[0]?.at)
        const held = new Set([...records, ...routes].map((part) => part.key))
        expect(table.size).toBe(held.size)
        for (let sender = 0; sender < SENDERS.length; sender++) {
          for (let id = 0; id < ID_COUNT; id++) {
            // Read without `find`, so a memo left by a step's `find` is still there for the next step's claim.
            const record = recordOf(table, IDS[id]!, SENDERS[sender]!)
            const k = keyOf(sender, id)
            expect(record !== undefined).toBe(held.has(k))
            expect(record?.recorded ?? false).toBe(records.some((part) => part.key === k))
            expect(record?.routed ?? false).toBe(routes.some((part) => part.key === k))
            if (record !== undefined) expect(record.inTable).toBe(true)
          }
        }
        // Walking the record list from the oldest gives the model's order.
        const walked: Array<string> = []
        for (let r = table.oldestRecord; r !== undefined; r = r.newerRecord) walked.push(`${r.senderKey}/${r.id}`)
        expect(walked).toEqual(records.map((part) => part.key))
      }
    }))
  })

  it("a claim after a find answers from that find only while the table is unchanged", () => {
    const table = new OutboundRecords()
    const kept = table.claim(OutboundRecord.of("a", "t", messageOf("1"), undefined))
    table.keepRecord(kept, { ok: true, delivery: "queued" }, 1, 1)
    // find, then the record leaves the table, then a claim of the same (sender, id): a new record joins.
    table.dropRecord(table.find("a", "1")!)
    const again = OutboundRecord.of("a", "t", messageOf("1"), undefined)
    expect(table.claim(again)).toBe(again)
    expect(table.find("a", "1")).toBe(again)
    // find (a miss), then another sender's record of that id joins, then the claim: both are kept.
    expect(table.find("b", "2")).toBeUndefined()
    const other = table.claim(OutboundRecord.of("c", "t", messageOf("2"), undefined))
    const mine = OutboundRecord.of("b", "t", messageOf("2"), undefined)
    expect(table.claim(mine)).toBe(mine)
    expect(table.find("c", "2")).toBe(other)
    expect(table.find("b", "2")).toBe(mine)
  })

  it("a record leaving an id other senders share leaves theirs in the table", () => {
    const table = new OutboundRecords()
    const records = ["a", "b", "c"].map((sender) => table.claim(OutboundRecord.of(sender, "t", messageOf("1"), undefined)))
    for (const record of records) table.keepRoute(record, "receiver", 1, 1)
    table.dropRoute(records[2]!)
    expect(table.find("a", "1")).toBe(records[0])
    expect(table.find("b", "1")).toBe(records[1])
    table.dropRoute(records[0]!)
    expect(table.find("b", "1")).toBe(records[1])
    expect(table.size).toBe(1)
    table.dropRoute(records[1]!)
    expect(table.size).toBe(0)
    expect(table.firstWithId("1")).toBeUndefined()
  })

  it("a route aging out with a withdrawal keeps it on the withdrawals' list, in age order, until routed again or dropped", () => {
    const table = new OutboundRecords(SEED)
    const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
    const [plain, first, second] = ["1", "2", "3"].map((id) => table.claim(OutboundRecord.of("a", "t", messageOf(id), undefined)))
    for (const record of [plain!, first!, second!]) table.keepRoute(record, "b", 7, 1)
    first!.withdrawal = CANCELLED
    second!.withdrawal = CANCELLED
    // Both withdrawn while their messages may still have waited (Receipts' cancel path): routed, only marked.
    table.keepWithdrawal(first!, 1)
    table.keepWithdrawal(second!, 1)
    expect([table.withdrawalsKept, table.routes]).toEqual([0, 3])
    // No withdrawal: the route goes, and with no replay part the record leaves the table.
    table.ageRoute(plain!, 5)
    expect(table.find("a", "1")).toBeUndefined()
    table.ageRoute(first!, 5)
    table.ageRoute(second!, 6)
    expect(table.routes).toBe(0)
    expect(table.withdrawalsKept).toBe(2)
    expect(table.oldestKeptWithdrawal).toBe(first)
    expect(table.find("a", "2")).toMatchObject({ withdrawalKept: true, routed: false, withdrawal: CANCELLED, receiverInstance: 7, routedAt: 5 })
    // Its give-back settles it unread: marked so, still kept.
    table.settleKept(first!, true)
    expect(table.find("a", "2")).toMatchObject({ withdrawalKept: true, droppedUnread: true })
    // Routed again: off the withdrawals' list, on the route list.
    table.keepRoute(second!, "b", 8, 7)
    expect([table.withdrawalsKept, table.routes, second!.withdrawalKept]).toEqual([1, 1, false])
    // Its withdrawal, made while its message waited, outlives this route too (a withdrawn copy routed again).
    table.ageRoute(second!, 8)
    expect([table.withdrawalsKept, table.routes, second!.withdrawalKept]).toEqual([2, 0, true])
    // Dropped (its day, or the bound: Receipts.prune): the record leaves the table.
    table.dropKept(first!)
    expect([table.withdrawalsKept, table.oldestKeptWithdrawal, table.find("a", "2")]).toEqual([1, second, undefined])
    expect(table.size).toBe(1)
  })

  it("a withdrawal not marked as made while its message waited goes with its aged route (review revau AU2)", () => {
    const table = new OutboundRecords(SEED)
    const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
    const record = table.claim(OutboundRecord.of("a", "t", messageOf("1"), undefined))
    table.keepRoute(record, "b", 7, 1)
    record.withdrawal = CANCELLED
    table.ageRoute(record, 5)
    expect([table.withdrawalsKept, table.routes, table.find("a", "1")]).toEqual([0, 0, undefined])
  })

  it("keepWithdrawal puts a record with no route on the withdrawals' list at once; forgetWithdrawal takes it off (review revau AU1, AU2)", () => {
    const table = new OutboundRecords(SEED)
    const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
    const record = table.claim(OutboundRecord.of("a", "t", messageOf("1"), undefined))
    table.keepRecord(record, CANCELLED, 1, 100)
    record.withdrawal = CANCELLED
    table.keepWithdrawal(record, 9)
    expect([table.withdrawalsKept, table.oldestKeptWithdrawal, record.routedAt]).toEqual([1, record, 9])
    // Marked again (a supersede after the cancel): listed once.
    table.keepWithdrawal(record, 10)
    expect(table.withdrawalsKept).toBe(1)
    // Its replay part goes; the kept withdrawal holds the record in the table.
    table.dropRecord(record)
    expect(table.find("a", "1")).toBe(record)
    table.forgetWithdrawal(record)
    expect([table.withdrawalsKept, table.oldestKeptWithdrawal, record.withdrawal, record.withdrawalKept]).toEqual([0, undefined, undefined, false])
  })

  it("the withdrawals' list never holds more than MAX_KEPT_WITHDRAWALS: one more put on it drops one at once (the largest share's oldest), logged once (review revaw AW4)", () => {
    const notices: Array<string> = []
    const table = new OutboundRecords(SEED, (line) => notices.push(line))
    const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
    const kept: Array<OutboundRecord> = []
    // Five receivers in turn: when the list is full, the one holding the most loses its oldest (KeptShares.ts; on a
    // tie the one whose join made it, review revbl BL3): b1's join ties b0 at 820, so b1's oldest (kept[1]) goes,
    // then b2's join ties b0 again, and b2's oldest (kept[2]) goes.
    const receivers = 5
    for (let n = 0; n <= MAX_KEPT_WITHDRAWALS + 1; n++) {
      const record = table.claim(OutboundRecord.of("a", "t", messageOf(`${n}`), undefined))
      table.keepRoute(record, `b${n % receivers}`, 7, n)
      record.withdrawal = CANCELLED
      table.keepWithdrawal(record, n)
      // Half age from the route list (Receipts.prune, addRoute), half go on the list with no route (no prune between).
      if (n % 2 === 0) table.ageRoute(record, n)
      else {
        // Its replay record kept, its route gone (the withdrawal followed the record: review revau AU1).
        table.keepRecord(record, CANCELLED, n, 100)
        table.dropRoute(record)
        record.withdrawal = CANCELLED
        table.keepWithdrawal(record, n)
      }
      kept.push(record)
      expect(table.withdrawalsKept).toBe(Math.min(n + 1, MAX_KEPT_WITHDRAWALS))
    }
    // Off the list (kept[2], holding nothing else, out of the table; kept[1] keeps its replay record); b0's oldest,
    // the list's oldest, stays.
    expect(table.oldestKeptWithdrawal).toBe(kept[0])
    expect(table.find("a", "2")).toBeUndefined()
    expect(kept[0]!.withdrawalKept).toBe(true)
    expect(kept[1]!.withdrawalKept).toBe(false)
    expect(kept[2]!.withdrawalKept).toBe(false)
    expect(table.find("a", `${MAX_KEPT_WITHDRAWALS + 1}`)).toBe(kept[MAX_KEPT_WITHDRAWALS + 1])
    expect(table.withdrawalsDroppedFull).toBe(2)
    // The overflow is logged at the first drop, not at every one (within the hour: review revbh BH2).
    expect(notices).toHaveLength(1)
    expect(notices[0]).toContain(`the list (${MAX_KEPT_WITHDRAWALS}) is full; 1 dropped since the last such line`)
  })

  it("keepWithdrawal with no route puts the record in the share of the receiver it names, not the one its last route named", () => {
    const table = new OutboundRecords(SEED)
    const record = table.claim(OutboundRecord.of("a", "t", messageOf("1"), undefined))
    table.keepRoute(record, "old", 7, 1)
    table.dropRoute(record)
    table.keepRecord(record, DELIVERED, 1, 100)
    record.withdrawal = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
    table.keepWithdrawal(record, 2, "live")
    expect([table.withdrawalsKeptFor("live"), table.withdrawalsKeptFor("old")]).toEqual([1, 0])
    table.forgetWithdrawal(record)
    expect(table.withdrawalsKeptFor("live")).toBe(0)
  })

  it("tells apart ids whose hashes collide, whichever of them leaves first", () => {
    const [first, second] = collidingIds(1) as [string, string]
    expect(idHash(first, SEED)).toBe(idHash(second, SEED))
    for (const leavesFirst of [0, 1]) {
      const table = new OutboundRecords(SEED)
      const records = [first, second].map((id) => table.claim(OutboundRecord.of("a", "t", messageOf(id), undefined)))
      const shared = table.claim(OutboundRecord.of("b", "t", messageOf(second), undefined))
      for (const record of [...records, shared]) table.keepRoute(record, "receiver", 1, 1)
      expect(table.find("a", first)).toBe(records[0])
      expect(table.find("a", second)).toBe(records[1])
      expect(withId(table, second)).toEqual([records[1], shared])
      table.dropRoute(records[leavesFirst]!)
      const stays = records[1 - leavesFirst]!
      expect(table.find("a", stays.id)).toBe(stays)
      expect(table.find("a", records[leavesFirst]!.id)).toBeUndefined()
      expect(table.find("b", second)).toBe(shared)
      expect(table.size).toBe(2)
      // A claim of the id that left joins anew; one of the id that stays answers with its record.
      const back = OutboundRecord.of("a", "t", messageOf(records[leavesFirst]!.id), undefined)
      expect(table.claim(back)).toBe(back)
      expect(table.claim(OutboundRecord.of("a", "t", messageOf(stays.id), undefined))).toBe(stays)
      expect(table.size).toBe(3)
    }
  })

  it("a record made from a stored fingerprint compares equal to the send it came from (rare fields included)", () => {
    const message: Message = {
      ...messageOf("m", "hello"),
      replyTo: "q",
      expectsReply: true,
      content: { text: "hello", attachments: [{ type: "file", name: "x", content: "data" }] }
    }
    const sent = OutboundRecord.of("s", "t", message, "it failed")
    const restored = new OutboundRecord("s", "m", {
      targetId: sent.targetId,
      textLength: sent.textLength,
      textHash: sent.textHash,
      attachmentsLength: sent.attachmentsLength,
      attachmentsHash: sent.attachmentsHash,
      replyTo: sent.replyTo,
      expectsReply: sent.expectsReply,
      supersedes: sent.supersedes,
      retryOf: sent.retryOf,
      replyErrorLength: sent.replyErrorLength,
      replyErrorHash: sent.replyErrorHash
    })
    for (const field of ["targetId", "textLength", "textHash", "attachmentsLength", "attachmentsHash", "replyTo", "expectsReply", "supersedes", "retryOf", "replyErrorLength", "replyErrorHash"] as const) {
      expect(restored[field]).toEqual(sent[field])
    }
    expect(sent.replyErrorLength).toBe("it failed".length)
    expect(OutboundRecord.of("s", "t", messageOf("m", "hello"), undefined).replyTo).toBeUndefined()
  })
})

type RecordOp =
  | { readonly op: "set"; readonly sender: number; readonly id: number; readonly dt: number }
  | { readonly op: "prune"; readonly dt: number }

describe("DeliveryRecords on the outbound records", () => {
  const limits = { windowMs: 10, retentionMs: 40, maxRecords: 8, maxBytes: Number.POSITIVE_INFINITY }

  it("a new send under an id whose withdrawal is kept past its route takes it off the withdrawals' list (review revau AU2)", () => {
    const records = new DeliveryRecords(limits)
    const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
    const table = records.table
    records.set(OutboundRecord.of("a", "t", messageOf("1"), undefined), DELIVERED, 1)
    const record = table.find("a", "1")!
    table.keepRoute(record, "b", 7, 1)
    record.withdrawal = CANCELLED
    table.keepWithdrawal(record, 1)
    table.ageRoute(record, 2)
    expect([table.withdrawalsKept, records.withdrawal("a", "1", 2)]).toEqual([1, CANCELLED])
    records.set(OutboundRecord.of("a", "t", messageOf("1"), undefined), DELIVERED, 3)
    expect([table.withdrawalsKept, table.oldestKeptWithdrawal, records.withdrawal("a", "1", 3)]).toEqual([0, undefined, undefined])
    expect(table.find("a", "1")?.withdrawalKept).toBe(false)
  })

  it("a record is restored (Receipts.recordedRoute may follow it) from its restore until it is kept or routed again in this run", () => {
    const records = new DeliveryRecords(limits)
    const restore = (id: string) =>
      records.restore("a", recordKeyOf("a", id), OutboundRecord.of("a", "t", messageOf(id), undefined), DELIVERED, 1)
    const restored = (id: string) => records.table.find("a", id)?.restored
    restore("1")
    restore("2")
    restore("3")
    expect([restored("1"), restored("2"), restored("3")]).toEqual([true, true, true])
    // Routed in this run (restored mail flushed): its route names the instance given it.
    const routed = records.table.find("a", "1")!
    records.table.keepRoute(routed, "b", 7, 2)
    expect(restored("1")).toBe(false)
    records.table.dropRoute(routed)
    expect(restored("1")).toBe(false)
    // Kept again by a send in this run.
    records.set(OutboundRecord.of("a", "t", messageOf("2"), undefined), DELIVERED, 2)
    expect(restored("2")).toBe(false)
    // A rewrite keeps it restored: the message is the one from before the restart.
    records.rewrite("a", "3", DELIVERED, undefined, "t")
    expect(restored("3")).toBe(true)
  })

  it("expires and evicts in the documented order: past retention; over the bound, past the window oldest first, then the heaviest sender's oldest", () => {
    const recordOps = fc.array(
      fc.oneof(
        { weight: 5, arbitrary: key.chain((k) => fc.record({ op: fc.constant("set" as const), dt: fc.nat(4) }).map((o) => ({ ...o, ...k }))) },
        { weight: 1, arbitrary: fc.record({ op: fc.constant("prune" as const), dt: fc.nat(20) }) }
      ),
      { maxLength: 200 }
    )
    fc.assert(fc.property(recordOps, (sequence: ReadonlyArray<RecordOp>) => {
      const records = new DeliveryRecords(limits)
      type Entry = { readonly sender: string; readonly id: string; readonly at: number }
      let model: Array<Entry> = []
      // Records per sender in the order senders first came (ties go to the first): as the class counts them.
      const perSender = new Map<string, number>()
      const removeWhere = (drop: (entry: Entry) => boolean) => {
        model = model.filter((entry) => {
          if (!drop(entry)) return true
          const count = perSender.get(entry.sender)! - 1
          if (count === 0) perSender.delete(entry.sender)
          else perSender.set(entry.sender, count)
          return false
        })
      }
      let now = 0
      for (const step of sequence) {
        now += step.dt
        if (step.op === "prune") {
          records.prune(now)
          removeWhere((entry) => entry.at <= now - limits.retentionMs - 1)
        } else {
          const sender = SENDERS[step.sender]!
          const id = `${step.id}`
          records.set(OutboundRecord.of(sender, "t", messageOf(id), undefined), { ok: true, delivery: "queued" }, now)
          removeWhere((entry) => entry.sender === sender && entry.id === id)
          model.push({ sender, id, at: now })
          perSender.set(sender, (perSender.get(sender) ?? 0) + 1)
          // The model of `makeRoom`: records past the window first, oldest first; then the heaviest sender's oldest.
          while (model.length > limits.maxRecords && model[0]!.at <= now - limits.windowMs - 1) {
            const oldest = model[0]!
            removeWhere((entry) => entry === oldest)
          }
          while (model.length > limits.maxRecords) {
            let heaviest = ""
            let most = 0
            for (const [s, count] of perSender) {
              if (count > most) {
                heaviest = s
                most = count
              }
            }
            let toDrop = Math.max(1, most >> 4)
            removeWhere((entry) => entry.sender === heaviest && toDrop-- > 0)
          }
        }
        expect(records.size).toBe(model.length)
        // `get` answers a kept record until its retention has passed, pruned or not.
        for (const entry of model) {
          expect(records.get(entry.sender, entry.id, now) !== undefined).toBe(now - entry.at <= limits.retentionMs)
        }
      }
    }))
  })
})
