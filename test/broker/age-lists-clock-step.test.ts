/**
 * The broker's age-ordered lists after its clock stepped back (an NTP step, a VM resumed): each is pruned from its
 * oldest end and the walk stops at the first entry younger than the cutoff, so it must stay in age order. An entry
 * kept after the step carries a reading earlier than the entries kept before it, yet sits behind them. The one rule
 * (OutboundRecords.redate, AgedMap.redate): an entry kept at a reading below the newest reading the list was given
 * re-dates the entries past that reading to it, so they count from the step and the list stays in age order; an
 * entry put back at its place with an age from before the step goes at that reading (AgedMap.setAged), and the
 * records' three lists re-date together. Here: the replay records (DeliveryRecords.prune), the routes
 * (Receipts.prune's walk), the withdrawals kept past their routes (OutboundRecords.pruneKept), the withdrawals a
 * resend made a record forget (DeliveryRecords' `forgotten`, an AgedMap), AgedMap itself, and the lists holding
 * dated items of their own or put back at their place: the notices owed to absent senders (AwayNotices), the
 * mailbox's mail put back (Mailbox.put with `seq`, and the mail its bounds pushed out for a message they then
 * did not keep: Mailbox's `putBack`) and the controls kept for an away reader (KeptControls); review revdf
 * DF1–DF4. AgedMap's own calls the lists use are pinned here too: `set` at a reading below the newest re-dates
 * only the entries past it, to it (never below it), `expireOldest` and `lookup`. On the TestClock: the clock is
 * set back with `TestClock.setTime` and each call is given the reading, as the broker's paths give it; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { TestClock } from "effect/testing"
import { AgedMap } from "../../src/broker/AgedMap.ts"
import { AwayNotices, NOTICE_RETENTION_MS } from "../../src/broker/AwayNotices.ts"
import { ControlFrame } from "../../src/broker/ControlFrame.ts"
import { DeliveryRecords, type Outcome, recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { KeptControls } from "../../src/broker/KeptControls.ts"
import { Mailbox, type MailboxLimits, mailKeyFor, mailKeyOf } from "../../src/broker/Mailbox.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import { OutboundRecords } from "../../src/broker/OutboundRecords.ts"
import type { Mail } from "../../src/broker/Peer.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"

const START = 1_000_000_000
/** How far the clock steps back: more than any window here. */
const STEP = 3 * 86_400_000
const HOUR = 3_600_000
const DAY = 86_400_000
const limits = { windowMs: 1_000, retentionMs: 10_000, maxRecords: 1_000, maxBytes: 1_000_000 }
const ok: Outcome = { ok: true, delivery: "socket_delivered" }
const CANCELLED: Outcome = { ok: false, code: DeliveryCode.DeliveryCancelled, reason: "cancelled", retryable: false }
const recordOf = (id: string) => OutboundRecord.of("s", "t", { ...message("m"), id }, undefined)

const MAILBOX: MailboxLimits = { capacity: 100, maxBytes: 1_000_000, maxBytesPerTarget: 1_000_000, retentionMs: 60_000 }

/** Mail from `sender` (default `s`) for `target` (default `t`), queued at `at`; its text `text` (default its id). */
const mailOf = (id: string, at: number, sender = "s", target = "t", text = id): Mail => ({
  recordKey: `${sender}/${id}`,
  senderKey: sender,
  senderId: sender,
  senderIdentity: undefined,
  fromJson: "{}",
  message: { id, timestamp: at, content: { text } },
  brokerReceivedAt: at,
  spaceKey: "",
  targetKey: target,
  targetId: target,
  targetIdentity: undefined,
  queuedAt: at,
  askTimeoutMs: undefined
})

/** A control for the session `to`, written to its instance 1. */
const controlFor = (to: string) => new ControlFrame("{}", to, "s", 0, `s/${to}`, 1)

/** The clock's reading after setting it to `at`. */
const setTo = (at: number) => Effect.andThen(TestClock.setTime(at), Clock.currentTimeMillis)

/**
 * x1 and x2 (sender x, for t) queued before the step, y1 (y, for u) after it; then s1 (s, for t), which pushes
 * t's oldest (x1) out, until the overall bytes find s the heaviest sender and s1 its oldest: s1 is not kept and
 * x1 comes back (Mailbox's `putBack`). Bytes (Mailbox's estimate, 2 × (2 + text + 4) + 512): x1, x2 724 each,
 * y1 1,524, s1 2,524; t holds 3,500 at most (x1 + x2 + s1 is over, x2 + s1 is not), all mail 4,000 (x2 + y1 +
 * s1 is over). Fails the test when s1 is not the one pushed out (it would set up nothing).
 */
const pushedOutAndBack = Effect.gen(function*() {
  const mailbox = new Mailbox({ capacity: 100, maxBytes: 4_000, maxBytesPerTarget: 3_500, retentionMs: 60_000 })
  mailbox.put(mailOf("x1", yield* setTo(START + STEP), "x", "t", "x".repeat(100)))
  mailbox.put(mailOf("x2", START + STEP, "x", "t", "x".repeat(100)))
  mailbox.put(mailOf("y1", yield* setTo(START), "y", "u", "y".repeat(500)))
  const evicted = mailbox.put(mailOf("s1", START, "s", "t", "s".repeat(1_000)))
  assert.deepStrictEqual(evicted.map((eviction) => [eviction.mail.message.id, eviction.bound]), [["s1", "bytes"]], "the test sets up nothing")
  assert.strictEqual(mailbox.size, 3, "x1 did not come back: the test sets up nothing")
  return mailbox
})

/** Receipts.prune's walk over the routes: from the oldest, while each is past its hour. */
const pruneRoutes = (table: OutboundRecords, now: number): void => {
  for (let oldest = table.oldestRoute; oldest !== undefined && oldest.routedAt <= now - HOUR - 1; oldest = table.oldestRoute) {
    table.ageRoute(oldest, now)
  }
}

describe("age lists after the clock stepped back", () => {
  it.effect("DeliveryRecords.prune drops a record kept after the step once its retention passed", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords(limits)
      records.set(recordOf("ahead"), ok, yield* setTo(START + STEP))
      records.set(recordOf("behind"), ok, yield* setTo(START))
      records.prune(yield* setTo(START + limits.retentionMs + 1))
      assert.isFalse(records.table.find("s", "behind")?.recorded ?? false, "the record kept after the step outlived its retention")
      assert.strictEqual(records.size, 0)
    }))

  it.effect("a record kept before the step is kept its retention counted from the step, and no longer", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords(limits)
      records.set(recordOf("ahead"), ok, yield* setTo(START + STEP))
      records.set(recordOf("behind"), ok, yield* setTo(START))
      let now = yield* setTo(START + limits.retentionMs)
      records.prune(now)
      assert.isDefined(records.get("s", "ahead", now))
      assert.isDefined(records.get("s", "behind", now))
      now = yield* setTo(START + limits.retentionMs + 1)
      records.prune(now)
      assert.isFalse(records.table.find("s", "ahead")?.recorded ?? false, "the record kept before the step outlived its retention from the step")
    }))

  it.effect("a message's record and route, both kept after the step, both leave after their hour", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords({ ...limits, retentionMs: HOUR })
      const table = records.table
      let now = yield* setTo(START + STEP)
      records.set(recordOf("ahead"), ok, now)
      table.keepRoute(table.claim(recordOf("ahead")), "r", 1, now)
      now = yield* setTo(START)
      records.set(recordOf("behind"), ok, now)
      table.keepRoute(table.claim(recordOf("behind")), "r", 1, now)
      now = yield* setTo(START + HOUR + 1)
      records.prune(now)
      pruneRoutes(table, now)
      assert.deepStrictEqual([records.size, table.routes, table.size], [0, 0, 0], "a record or route outlived its hour")
    }))

  it.effect("a withdrawal kept past its route after the step leaves after its day", () =>
    Effect.gen(function*() {
      const table = new OutboundRecords()
      const kept = (id: string, at: number): OutboundRecord => {
        const record = table.claim(recordOf(id))
        record.withdrawal = CANCELLED
        table.keepWithdrawal(record, at, "r")
        return record
      }
      kept("ahead", yield* setTo(START + STEP))
      kept("behind", yield* setTo(START))
      assert.strictEqual(table.withdrawalsKept, 2)
      const now = yield* setTo(START + DAY + 1)
      table.pruneKept(now - DAY - 1, now)
      assert.strictEqual(table.withdrawalsKept, 0, "a withdrawal kept after the step outlived its day")
    }))

  it.effect("a withdrawal a resend made its record forget, noted after the step, is forgotten after its day", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords(limits)
      /** `id` sent, cancelled, and sent again at `at`: the resend makes the record forget the cancel. */
      const resent = (id: string, at: number): void => {
        records.set(recordOf(id), ok, at)
        records.rewrite("s", id, CANCELLED, undefined, "t")
        records.set(OutboundRecord.of("s", "t", { ...message("again"), id }, undefined), ok, at)
      }
      resent("ahead", yield* setTo(START + STEP))
      resent("behind", yield* setTo(START))
      const before = OutboundRecord.of("s", "t", { ...message("m"), id: "behind" }, undefined)
      assert.isTrue(records.withdrawnBeforeResend(recordKeyOf("s", "behind"), START - 1, () => before), "nothing was noted")
      records.prune(yield* setTo(START + DAY + 1))
      assert.isFalse(records.withdrawnBeforeResend(recordKeyOf("s", "behind"), START - 1, () => before), "kept past its day")
    }))

  it.effect("AgedMap.expire takes an entry set after the step once past the cutoff", () =>
    Effect.gen(function*() {
      const map = new AgedMap<string, string>()
      map.set("ahead", "ahead", yield* setTo(START + STEP))
      map.set("behind", "behind", yield* setTo(START))
      assert.deepStrictEqual(map.expire((yield* setTo(START + 10)) - 10), ["ahead", "behind"])
      assert.strictEqual(map.size, 0)
    }))
  it.effect("a message routed before the step loses its record and route an hour after it when only records were kept since", () =>
    Effect.gen(function*() {
      const records = new DeliveryRecords({ ...limits, retentionMs: HOUR })
      const table = records.table
      let now = yield* setTo(START + STEP)
      records.set(recordOf("ahead"), ok, now)
      table.keepRoute(table.claim(recordOf("ahead")), "r", 1, now)
      // After the step: a send queued for an absent session keeps a replay record, no route.
      now = yield* setTo(START)
      records.set(recordOf("behind"), { ok: true, delivery: "queued" }, now)
      now = yield* setTo(START + HOUR + 1)
      records.prune(now)
      pruneRoutes(table, now)
      assert.isFalse(table.find("s", "ahead")?.recorded ?? false, "the record outlived its hour from the step")
      assert.strictEqual(table.routes, 0, "the route of the same message outlived its hour by the step")
    }))

  it.effect("a withdrawal kept past its route before the step leaves a day after it when only records were kept since", () =>
    Effect.gen(function*() {
      const table = new OutboundRecords()
      const record = table.claim(recordOf("ahead"))
      record.withdrawal = CANCELLED
      table.keepWithdrawal(record, yield* setTo(START + STEP), "r")
      const behind = table.claim(recordOf("behind"))
      table.keepRecord(behind, ok, yield* setTo(START), 1)
      const now = yield* setTo(START + DAY + 1)
      table.pruneKept(now - DAY - 1, now)
      assert.strictEqual(table.withdrawalsKept, 0, "the withdrawal kept before the step outlived its day by the step")
    }))

  it.effect("AgedMap.set at a reading below the newest re-dates only the entries past it, to it: none goes below it", () =>
    Effect.gen(function*() {
      const map = new AgedMap<string, string>()
      map.set("a", "a", yield* setTo(START - 200))
      map.set("b", "b", yield* setTo(START + 100))
      map.set("c", "c", yield* setTo(START + STEP))
      map.set("d", "d", yield* setTo(START))
      assert.deepStrictEqual(["a", "b", "c", "d"].map((key) => map.setAt(key)), [START - 200, START, START, START])
      assert.deepStrictEqual([...map.values()], ["a", "b", "c", "d"])
      assert.strictEqual(map.reading, START)
    }))

  it.effect("AgedMap.expireOldest takes the oldest entry only once it is at or before the cutoff, one set before the step counting from it", () =>
    Effect.gen(function*() {
      const map = new AgedMap<string, string>()
      map.set("ahead", "ahead", yield* setTo(START + STEP))
      map.set("behind", "behind", yield* setTo(START))
      assert.strictEqual(map.expireOldest(START - 1), undefined, "an entry left before its cutoff")
      assert.strictEqual(map.size, 2)
      assert.strictEqual(map.expireOldest(START), "ahead", "the entry set before the step outlived its cutoff from the step")
      assert.strictEqual(map.expireOldest(START), "behind")
      assert.strictEqual(map.expireOldest(Number.POSITIVE_INFINITY), undefined)
      assert.strictEqual(map.size, 0)
    }))

  it.effect("AgedMap.lookup gives an entry's value and its age, re-dated by a step back; nothing for a key not set", () =>
    Effect.gen(function*() {
      const map = new AgedMap<string, string>()
      map.set("ahead", "first", yield* setTo(START + STEP))
      map.set("behind", "second", yield* setTo(START))
      const found = (key: string) => {
        const entry = map.lookup(key)
        return entry === undefined ? undefined : [entry.value, entry.at]
      }
      assert.deepStrictEqual(found("ahead"), ["first", START])
      assert.deepStrictEqual(found("behind"), ["second", START])
      assert.strictEqual(map.lookup("never"), undefined)
    }))

  it.effect("AgedMap.setAged puts an entry aged before the step at the newest reading, not back ahead of it", () =>
    Effect.gen(function*() {
      const map = new AgedMap<string, string>()
      map.set("ahead", "ahead", yield* setTo(START + STEP))
      map.set("behind", "behind", yield* setTo(START))
      map.delete("ahead")
      map.setAged("ahead", "ahead", START + STEP)
      assert.strictEqual(map.setAt("ahead"), START)
      assert.deepStrictEqual(map.expire((yield* setTo(START + 10)) - 10), ["behind", "ahead"])
    }))

  it.effect("a notice owed before the step is given up a day after it", () =>
    Effect.gen(function*() {
      const owed = new AwayNotices({ journal: undefined, log: () => undefined }, () => false)
      owed.owe(owed.issue("ahead", "n-ahead", yield* setTo(START + STEP)))
      owed.owe(owed.issue("behind", "n-behind", yield* setTo(START)))
      const now = yield* setTo(START + NOTICE_RETENTION_MS + 1)
      owed.expire(now - NOTICE_RETENTION_MS - 1) // MailDelivery.prune's cutoff
      assert.strictEqual(owed.count, 0, "the notice owed before the step outlived its day by the step")
    }))

  it.effect("a notice owed before the step and handed back after it to its sender's list is given up a day after the step", () =>
    Effect.gen(function*() {
      const owed = new AwayNotices({ journal: undefined, log: () => undefined }, () => false)
      owed.owe(owed.issue("s", "n-ahead", yield* setTo(START + STEP)))
      // Its sender registered before the step and was written the notice (`take`) ...
      const written = owed.take("s") ?? []
      assert.strictEqual(written.length, 1)
      // ... went away after it, and is owed a new notice ...
      owed.owe(owed.issue("s", "n-behind", yield* setTo(START)))
      // ... and its old connection's close hands the first back, unread (MailReturns.takeBack): into the list.
      for (const notice of written) owed.owe(notice)
      assert.strictEqual(owed.count, 2)
      const now = yield* setTo(START + NOTICE_RETENTION_MS + 1)
      owed.expire(now - NOTICE_RETENTION_MS - 1)
      assert.strictEqual(owed.count, 0, "the handed-back notice outlived its day by the step")
    }))

  it.effect("mail queued before the step and put back at its place expires a retention after the step", () =>
    Effect.gen(function*() {
      const mailbox = new Mailbox(MAILBOX)
      const ahead = mailOf("ahead", yield* setTo(START + STEP))
      mailbox.put(ahead)
      mailbox.put(mailOf("behind", yield* setTo(START)))
      assert.strictEqual(mailbox.oldestQueuedAt, START)
      // A cancelled copy given to one reader and put back for the others (WithdrawnCopies.give): its place, `seq`.
      mailbox.put(ahead, mailbox.seqOf(mailKeyOf(ahead)))
      let now = yield* setTo(START + MAILBOX.retentionMs)
      assert.deepStrictEqual(mailbox.expire(now), [], "mail left before its retention")
      now = yield* setTo(START + MAILBOX.retentionMs + 1)
      assert.deepStrictEqual(mailbox.expire(now).map((mail) => mail.message.id).sort(), ["ahead", "behind"], "the put-back copy outlived its retention by the step")
    }))

  it.effect("mail the bounds pushed out for a message not kept after all comes back at its queue place, aged from the step", () =>
    Effect.gen(function*() {
      const mailbox = yield* pushedOutAndBack
      assert.strictEqual(mailbox.seqOf(mailKeyFor("x/x1", "t")), 1, "x1 came back at another queue place")
      assert.strictEqual(mailbox.oldestQueuedAt, START)
      let now = yield* setTo(START + 60_000)
      assert.deepStrictEqual(mailbox.expire(now), [], "mail left before its retention")
      now = yield* setTo(START + 60_001)
      assert.deepStrictEqual(
        mailbox.expire(now).map((mail) => mail.message.id).sort(),
        ["x1", "x2", "y1"],
        "the mail put back outlived its retention by the step"
      )
    }))

  it.effect("mail put back after the step keeps its queue order: it is taken before the mail queued after it", () =>
    Effect.gen(function*() {
      const mailbox = yield* pushedOutAndBack
      assert.deepStrictEqual(mailbox.take("t", undefined, () => true).map((queued) => queued.mail.message.id), ["x1", "x2"])
    }))

  it.effect("mail put back after the step, all of its age alike, expires in queue order: before the mail queued after it", () =>
    Effect.gen(function*() {
      const mailbox = yield* pushedOutAndBack
      // x1, x2 and y1 all count from the step: x1, queued first, is still the oldest (MailDelivery.prune tells the
      // senders of expired mail in this order).
      const expired = mailbox.expire(yield* setTo(START + 60_001))
      assert.deepStrictEqual(expired.map((mail) => mail.message.id), ["x1", "x2", "y1"], "x1 came back behind mail queued after it")
    }))

  it.effect("a control kept before the step goes a retention after it", () =>
    Effect.gen(function*() {
      const controls = new KeptControls()
      controls.keep(controlFor("ahead"), yield* setTo(START + STEP), true)
      controls.keep(controlFor("behind"), yield* setTo(START), true)
      assert.strictEqual(controls.oldestAt, START)
      const now = yield* setTo(START + DAY + 1)
      controls.expire(now - DAY - 1) // MailDelivery.controlsCutoff, for a day's retention
      assert.strictEqual(controls.count, 0, "the control kept before the step outlived the retention by the step")
    }))

  it.effect("a control kept before the step for a session given another after it goes a retention after the step", () =>
    Effect.gen(function*() {
      const controls = new KeptControls()
      controls.keep(controlFor("r"), yield* setTo(START + STEP), true)
      controls.keep(controlFor("r"), yield* setTo(START), true)
      assert.strictEqual(controls.oldestAt, START)
      const now = yield* setTo(START + DAY + 1)
      controls.expire(now - DAY - 1)
      assert.strictEqual(controls.count, 0, "a control of the list outlived the retention by the step")
    }))

  it.effect("a control kept before the step in a session's list begun before the step's reading goes a retention after the step", () =>
    Effect.gen(function*() {
      const controls = new KeptControls()
      // The list's age (its first control's) is below the reading the clock steps back to: the lists' re-dating
      // does not reach it, only the control kept into it after the step does.
      controls.keep(controlFor("r"), yield* setTo(START - 10), true)
      controls.keep(controlFor("r"), yield* setTo(START + STEP), true)
      controls.keep(controlFor("r"), yield* setTo(START), true)
      assert.strictEqual(controls.oldestAt, START - 10)
      const now = yield* setTo(START + DAY + 1)
      controls.expire(now - DAY - 1)
      assert.strictEqual(controls.count, 0, "a control of the list outlived the retention by the step")
    }))
})
