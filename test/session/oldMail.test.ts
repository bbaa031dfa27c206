/**
 * Old mail is marked as old: a message that waited in the broker's mailbox is
 * rendered with how long ago it was queued (from the broker's own stamps),
 * and the mailbox keeps mail only for the configured retention; past it the
 * mail expires and its sender is told. Renderings with fixed timestamps,
 * then end to end on the in-memory broker under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Queue, Scope, Stream } from "effect"
import { TestClock } from "effect/testing"
import { brokerOptionProblem, resolveCoreOptions } from "../../src/broker/options.ts"
import type { ControlEvent } from "../../src/client/events.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { formatQueuedAge, QUEUED_MARK_THRESHOLD_MS, queuedFor } from "../../src/session/oldMail.ts"
import { renderInbound } from "../../src/session/render.ts"
import { inboundText } from "../../src/cli/client/output.ts"
import { closeOnSimulatedTime } from "../support/memory.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { info } from "./support.ts"

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

const FROM = info("sender-0000-1111", { name: "Planner", cwd: "/work" })

const stamped = (receivedAt: number, deliveredAt: number): Message => ({
  id: "m-1",
  timestamp: receivedAt,
  content: { text: "hello" },
  brokerReceivedAt: receivedAt,
  brokerDeliveredAt: deliveredAt
})

describe("the old-mail marker", () => {
  it("ages read Ns, Nm, Nh or Nd, rounded down", () => {
    assert.strictEqual(formatQueuedAge(0), "0s")
    assert.strictEqual(formatQueuedAge(59 * SECOND + 999), "59s")
    assert.strictEqual(formatQueuedAge(MINUTE), "1m")
    assert.strictEqual(formatQueuedAge(59 * MINUTE), "59m")
    assert.strictEqual(formatQueuedAge(6 * HOUR + 59 * MINUTE), "6h")
    assert.strictEqual(formatQueuedAge(DAY - 1), "23h")
    assert.strictEqual(formatQueuedAge(3 * DAY + 5 * HOUR), "3d")
  })

  it("mail that waited 6 hours in the mailbox reads `queued 6h ago` next to its sender", () => {
    const text = renderInbound(FROM, stamped(1_000_000, 1_000_000 + 6 * HOUR), false)
    assert.strictEqual(text, "**From Planner** (/work) · queued 6h ago\n\nhello")
  })

  it("a message handed over at once, or that waited less than a minute, carries no marker", () => {
    assert.strictEqual(renderInbound(FROM, stamped(5_000, 5_003), false), "**From Planner** (/work)\n\nhello")
    assert.isUndefined(queuedFor(stamped(5_000, 5_000 + QUEUED_MARK_THRESHOLD_MS - 1)))
    assert.strictEqual(queuedFor(stamped(5_000, 5_000 + QUEUED_MARK_THRESHOLD_MS)), QUEUED_MARK_THRESHOLD_MS)
    // No broker stamps (a message from an old journal, a test): no marker, no guess.
    assert.isUndefined(queuedFor({ id: "m", timestamp: 0, content: { text: "x" } }))
  })

  it("the marker comes before the reply hint of an ask, and the CLI's watch line carries it too", () => {
    const ask = { ...stamped(0, 90 * MINUTE), expectsReply: true }
    assert.match(renderInbound(FROM, ask, true), /^\*\*From Planner\*\* \(\/work\) · queued 1h ago\n\nTo reply/)
    assert.strictEqual(inboundText(FROM, ask, true).split("\n")[0], "[ask] Planner (sender-0) · m-1 · queued 1h ago")
  })
})

describe("mailbox retention", () => {
  it("is 24 hours by default, a whole number of ms from 1 s to 30 days; anything else is refused", () => {
    assert.strictEqual(resolveCoreOptions({}).mailboxRetentionMs, DAY)
    assert.strictEqual(resolveCoreOptions({ mailboxRetention: "3 hours" }).mailboxRetentionMs, 3 * HOUR)
    assert.isUndefined(brokerOptionProblem("mailboxRetention", HOUR))
    assert.isUndefined(brokerOptionProblem("mailboxRetention", SECOND))
    assert.isUndefined(brokerOptionProblem("mailboxRetention", "30 days"))
    const bads: ReadonlyArray<Duration.Input> = [0, 999, 1.5, 30 * DAY + 1, Number.NaN, "60 days"]
    for (const bad of bads) {
      const problem = brokerOptionProblem("mailboxRetention", bad)
      assert.include(problem?.message ?? "", "mailboxRetention must be a duration from 1 second to 30 days", String(bad))
    }
  })

  /** A session that registers, then goes away; its id stays resolvable for mail (P49). */
  const departed = (world: Effect.Success<ReturnType<typeof memoryWorld>>, id: string, name: string) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* world.session(id, { name }).pipe(Scope.provide(scope))
      yield* closeOnSimulatedTime(scope)
    })

  it.effect("mail queued for a session that is away is shown as queued 5h ago when it comes back within the retention", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld({ mailboxRetention: "6 hours" })
      const sender = yield* world.session("sender-0000-1111", { name: "Planner" })
      yield* departed(world, "away-0000-2222", "Receiver")
      const sent = yield* sender.session.send({ to: "Receiver", message: "when you are back: rebase" })
      assert.strictEqual(sent._tag === "Sent" ? sent.delivery : "declined", "queued")
      yield* TestClock.adjust(5 * HOUR + 30 * MINUTE)
      const back = yield* world.session("away-0000-2222", { name: "Receiver" })
      const mail = yield* Queue.take(back.inbound)
      assert.strictEqual(mail.message.content.text, "when you are back: rebase")
      assert.include(mail.text.split("\n")[0] ?? "", "· queued 5h ago")
    }))

  it.effect("past the configured retention the mail expires, its sender gets an expired receipt, and nothing is delivered", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld({ mailboxRetention: "2 hours" })
      const sender = yield* world.session("sender-0000-1111", { name: "Planner" })
      const receipts = yield* Queue.unbounded<ControlEvent>()
      yield* Effect.forkScoped(Stream.runForEach(sender.client.controls, (event) => Queue.offer(receipts, event)), {
        startImmediately: true
      })
      yield* departed(world, "away-0000-2222", "Receiver")
      const sent = yield* sender.session.send({ to: "Receiver", message: "stale by then" })
      const messageId = sent._tag === "Sent" ? sent.messageId : ""
      yield* TestClock.adjust(2 * HOUR + SECOND)
      const back = yield* world.session("away-0000-2222", { name: "Receiver" })
      const notice = yield* Queue.take(receipts)
      assert.strictEqual(notice._tag, "Receipt")
      if (notice._tag === "Receipt") {
        assert.strictEqual(notice.receipt.messageId, messageId)
        assert.strictEqual(notice.receipt.status, "expired")
        assert.strictEqual(notice.receipt.detail, "Mailbox delivery expired")
      }
      // A round trip for the returning session: its mail, had there been any, came before the answer.
      yield* back.client.list
      assert.strictEqual(yield* Queue.size(back.inbound), 0)
    }))
})
