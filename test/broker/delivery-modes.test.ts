/**
 * `delivery-v1` in the broker: delivery fields checked and forwarded, and
 * replace coalescing (C-DLV-5…9) — only the latest staged message per
 * (sender, recipient, thread) is delivered, exactly once, when the window
 * closes; caps with the contract's text; staged messages dropped when their
 * recipient (or, for asks, their sender) leaves; no replacement after handoff.
 * In memory under TestClock, so the 1500 ms window passes in microseconds; one
 * test runs the same over a real Unix socket with a short window.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_STAGED, MAX_STAGED_PER_RECIPIENT, MAX_STAGED_PER_SENDER } from "../../src/broker/ReplaceStaging.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, type RegisterOptions, withBroker } from "../support/broker.ts"
import { advance, withMemoryBroker } from "../support/memory.ts"
import type { WireClient } from "../support/wire.ts"

const WINDOW = 1500

const modern = (sessionId: string, extra: RegisterOptions = {}): RegisterOptions => ({
  sessionId,
  name: sessionId,
  frame: { features: [DELIVERY_V1] },
  ...extra
})

const replace = (threadId: string) => ({ delivery: "queue", queueMode: "replace", threadId })

/** Sends a frame and waits for its first answer: `delivered`, `delivery_failed` or `delivery_queued`. */
const sendFrame = (client: WireClient, to: string, msg: Message, extra: Readonly<Record<string, unknown>> = {}) =>
  Effect.andThen(
    client.send({ type: "send", to, message: msg, ...extra }),
    client.next(["delivered", "delivery_failed", "delivery_queued"], (frame) => frame.messageId === msg.id)
  )

const copies = (client: WireClient, messageId: string) =>
  client.received().filter((frame) => frame.type === "message" && frame.message.id === messageId).length

const messagesFrom = (client: WireClient, text: string) =>
  client.received().filter((frame) => frame.type === "message" && frame.message.content.text.startsWith(text))

describe("delivery-v1 fields", () => {
  it.effect("a queue/stack message is delivered at once and carries its mode to a recipient granted delivery-v1", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const msg = message("stacked")
      const ack = yield* sendFrame(a.client, "b", msg, { delivery: "queue", queueMode: "stack" })
      assert.strictEqual(ack.type, "delivered")
      const received = yield* messageFor(b.client, msg.id)
      assert.strictEqual(received.delivery, "queue")
      assert.strictEqual(received.queueMode, "stack")
      assert.isUndefined(received.threadId)
    }))

  it.effect("a base recipient gets a passive message without the delivery fields", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const base = yield* broker.session({ sessionId: "base", name: "base" })
      const msg = message("quiet note")
      assert.strictEqual((yield* sendFrame(a.client, "base", msg, { delivery: "passive" })).type, "delivered")
      const received = yield* messageFor(base.client, msg.id)
      assert.isFalse("delivery" in received)
      assert.isFalse("queueMode" in received)
    }))

  it.effect("a base sender's delivery fields are ignored: a replace send from it is delivered at once, not staged", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const base = yield* broker.session({ sessionId: "base", name: "base" })
      const b = yield* broker.session(modern("b"))
      const msg = message("from base")
      const ack = yield* sendFrame(base.client, "b", msg, replace("t"))
      assert.strictEqual(ack.type, "delivered")
      const received = yield* messageFor(b.client, msg.id)
      assert.isFalse("delivery" in received)
    }))

  it.effect("invalid combinations are refused with a clear reason and nothing is delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const cases: ReadonlyArray<readonly [Message, Readonly<Record<string, unknown>>, string]> = [
        [message("x"), { delivery: "loud" }, "Invalid delivery"],
        [message("x"), { delivery: "steer", queueMode: "stack" }, "queueMode is only valid"],
        [message("x"), { delivery: "queue", queueMode: "replace" }, "needs a threadId"],
        [message("x"), { delivery: "queue", threadId: "t" }, "threadId is only valid"],
        [message("x", { expectsReply: true }), { delivery: "passive" }, "An ask is never passive"]
      ]
      for (const [msg, fields, reason] of cases) {
        const ack = yield* sendFrame(a.client, "b", msg, fields)
        assert.strictEqual(ack.type, "delivery_failed")
        if (ack.type === "delivery_failed") {
          assert.strictEqual(ack.code, "E_INVALID_MESSAGE")
          assert.include(ack.reason, reason)
        }
      }
      yield* settled([a.client], [b.client])
      assert.strictEqual(b.client.received().filter((frame) => frame.type === "message").length, 0)
    }))
})

describe("replace coalescing", () => {
  it.effect("five updates on one thread: the sender gets delivery_queued, the recipient only the latest, once, after the window", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const updates = Array.from({ length: 5 }, (_, i) => message(`progress ${i}`))
      for (const update of updates) {
        const ack = yield* sendFrame(a.client, "b", update, replace("build"))
        assert.strictEqual(ack.type, "delivery_queued")
        if (ack.type === "delivery_queued") assert.strictEqual(ack.threadId, "build")
      }
      yield* settled([a.client], [b.client])
      assert.strictEqual(messagesFrom(b.client, "progress").length, 0, "nothing before the window closes")
      // The four replaced ones are reported superseded to the sender.
      for (const replaced of updates.slice(0, 4)) {
        const receipt = yield* a.client.next("message_receipt", (frame) => frame.receipt.messageId === replaced.id)
        assert.strictEqual(receipt.receipt.status, "superseded")
      }
      yield* advance(WINDOW)
      const latest = updates[4]!
      const delivered = yield* messageFor(b.client, latest.id)
      assert.strictEqual(delivered.threadId, "build")
      yield* advance(WINDOW * 4)
      yield* settled([a.client], [b.client])
      const seen = messagesFrom(b.client, "progress")
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(copies(b.client, latest.id), 1)
    }))

  it.effect("a replace message to a departed session goes, like a plain one, to its name's sole live holder (P49), at the window's close", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const gone = yield* broker.session({ sessionId: "twin-old", name: "Twin" })
      yield* gone.client.destroy
      yield* a.client.next("session_left", (frame) => frame.sessionId === "twin-old")
      const holder = yield* broker.session({ sessionId: "twin-new", name: "Twin" })
      const plain = message("plain to the old twin")
      assert.strictEqual((yield* sendFrame(a.client, "twin-old", plain)).type, "delivered")
      const update = message("update to the old twin")
      assert.strictEqual((yield* sendFrame(a.client, "twin-old", update, replace("t"))).type, "delivery_queued")
      yield* advance(WINDOW)
      yield* messageFor(holder.client, update.id)
      yield* settled([a.client], [holder.client])
      const ids = holder.client.received().flatMap((frame) => frame.type === "message" ? [frame.message.id] : [])
      assert.deepStrictEqual(ids, [plain.id, update.id])
      assert.isFalse(
        a.client.received().some((frame) => frame.type === "message_receipt" && frame.receipt.messageId === update.id),
        "no expired receipt: it was delivered"
      )
    }))

  it.effect("threads and recipients are separate keys; a message after handoff starts a new window and is not replaced", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const c = yield* broker.session(modern("c"))
      const x = message("x1")
      const y = message("y1")
      const toC = message("x-to-c")
      yield* sendFrame(a.client, "b", x, replace("x"))
      yield* sendFrame(a.client, "b", y, replace("y"))
      yield* sendFrame(a.client, "c", toC, replace("x"))
      yield* advance(WINDOW)
      yield* messageFor(b.client, x.id)
      yield* messageFor(b.client, y.id)
      yield* messageFor(c.client, toC.id)
      // C-DLV-7: handed over already; the next one on the same key is a new staging, not a replacement.
      const x2 = message("x2")
      assert.strictEqual((yield* sendFrame(a.client, "b", x2, replace("x"))).type, "delivery_queued")
      yield* settled([a.client], [b.client])
      assert.strictEqual(
        a.client.received().filter((frame) => frame.type === "message_receipt" && frame.receipt.messageId === x.id).length,
        0,
        "a delivered message is never reported superseded"
      )
      yield* advance(WINDOW)
      yield* messageFor(b.client, x2.id)
      assert.strictEqual(copies(b.client, x.id), 1)
    }))

  it.effect(`caps: ${MAX_STAGED_PER_SENDER} staged per sender, refused past it with the contract's text; replacing a staged key is not counted`, () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      yield* broker.session(modern("b"))
      for (let i = 0; i < MAX_STAGED_PER_SENDER; i++) {
        assert.strictEqual((yield* sendFrame(a.client, "b", message(`t${i}`), replace(`t${i}`))).type, "delivery_queued")
      }
      const over = yield* sendFrame(a.client, "b", message("one too many"), replace("extra"))
      assert.strictEqual(over.type, "delivery_failed")
      if (over.type === "delivery_failed") {
        assert.strictEqual(over.reason, "Replace-mode delivery queue is full; retry after pending updates are delivered.")
        assert.strictEqual(over.code, "E_REPLACE_QUEUE_FULL")
      }
      // Replacing thread t7 takes no new place.
      assert.strictEqual((yield* sendFrame(a.client, "b", message("t7 again"), replace("t7"))).type, "delivery_queued")
      // Once the window closed, places are free again.
      yield* advance(WINDOW)
      assert.strictEqual((yield* sendFrame(a.client, "b", message("after"), replace("extra"))).type, "delivery_queued")
    }))

  it.effect(`caps: ${MAX_STAGED} staged overall across senders and recipients, refused past it with the contract's text`, () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const senders = MAX_STAGED / MAX_STAGED_PER_SENDER
      // Each recipient holds at most half of what the others leave free (its share), so the room fills only
      // over eleven recipients at least: filled in turn, each takes all its share allows, the last one place.
      const shares = [250, 250, 250, 125, 63, 31, 16, 8, 4, 2, 1]
      assert.strictEqual(shares.reduce((a, b) => a + b), MAX_STAGED)
      const order = shares.flatMap((share, k) => Array.from({ length: share }, () => `sink${k}`))
      for (let k = 0; k < shares.length; k++) yield* broker.session(modern(`sink${k}`))
      yield* broker.session(modern("fresh"))
      for (let s = 0; s < senders; s++) {
        const sender = yield* broker.session(modern(`s${s}`))
        yield* sender.client.sendRaw(encodeFrames(Array.from({ length: MAX_STAGED_PER_SENDER }, (_, i) => {
          const n = s * MAX_STAGED_PER_SENDER + i
          return JSON.stringify({ type: "send", to: order[n], message: message(`m${n}`), ...replace(`t${n}`) })
        })))
        yield* settled([sender.client])
        assert.strictEqual(sender.client.count("delivery_queued"), MAX_STAGED_PER_SENDER)
      }
      assert.strictEqual((yield* broker.broker.stats).staged, MAX_STAGED)
      // A recipient with nothing staged for it, from a sender with nothing staged: only the overall cap refuses.
      const last = yield* broker.session(modern("late"))
      const refused = yield* sendFrame(last.client, "fresh", message("no room"), replace("t"))
      assert.strictEqual(refused.type, "delivery_failed")
      if (refused.type === "delivery_failed") {
        assert.strictEqual(refused.reason, Reason.replaceQueueFull)
        assert.isTrue(refused.retryable, "the text says retry, and the refusal is not recorded: a retry is judged afresh")
      }
    }), 60_000)

  it.effect("caps: four recipients that never read cannot fill the overall room; each holds at most half of what is left free", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      // Four recipients that do not read (their window never closes here: the clock stands still), each sent
      // MAX_STAGED_PER_RECIPIENT updates by ten senders: without the share they would hold all 1,000 places.
      const stuck = MAX_STAGED / MAX_STAGED_PER_RECIPIENT
      for (let k = 0; k < stuck; k++) yield* broker.session(modern(`stuck${k}`))
      const senders = MAX_STAGED / MAX_STAGED_PER_SENDER
      const refusals: Array<string> = []
      for (let s = 0; s < senders; s++) {
        const sender = yield* broker.session(modern(`s${s}`))
        yield* sender.client.sendRaw(encodeFrames(Array.from({ length: MAX_STAGED_PER_SENDER }, (_, i) => {
          const n = s * MAX_STAGED_PER_SENDER + i
          return JSON.stringify({ type: "send", to: `stuck${Math.floor(n / MAX_STAGED_PER_RECIPIENT)}`, message: message(`m${n}`), ...replace(`t${n}`) })
        })))
        yield* settled([sender.client])
        for (const frame of sender.client.received()) {
          if (frame.type !== "delivery_failed") continue
          assert.strictEqual(frame.code, "E_REPLACE_QUEUE_FULL")
          assert.isTrue(frame.retryable)
          refusals.push(frame.reason)
        }
      }
      // The first three took their 250; the fourth, half of the 250 left; the rest were refused, naming it.
      assert.strictEqual((yield* broker.broker.stats).staged, 875)
      assert.strictEqual(refusals.length, 125)
      assert.deepStrictEqual([...new Set(refusals)], [Reason.replaceQueueShareFull(`session "stuck3" (stuck3)`, 125)])
      // Recipients that hold none are still served, from senders with room of their own: eight of them, one each.
      for (let k = 0; k < 8; k++) {
        yield* broker.session(modern(`reader${k}`))
        const other = yield* broker.session(modern(`other${k}`))
        const answer = yield* sendFrame(other.client, `reader${k}`, message(`for reader ${k}`), replace("t"))
        assert.strictEqual(answer.type === "delivery_failed" ? answer.reason : answer.type, "delivery_queued")
      }
      // A stuck one is still refused: the places left stay with the others.
      const late = yield* broker.session(modern("late"))
      const again = yield* sendFrame(late.client, "stuck0", message("more"), replace("more"))
      assert.strictEqual(again.type === "delivery_failed" ? again.code : again.type, "E_REPLACE_QUEUE_FULL")
    }), 60_000)

  it.effect(`caps: ${MAX_STAGED_PER_RECIPIENT} staged for one recipient that never reads; replace sends to the others still go`, () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ outboxCapacity: 4, linkCapacity: 8 })
      const stuck = yield* broker.session(modern("stuck"))
      const reader = yield* broker.session(modern("reader"))
      yield* stuck.client.pause
      // Eleven senders with 100 threads each for the recipient that never reads (more than the overall cap):
      // their messages fall due and wait.
      const senders = MAX_STAGED / MAX_STAGED_PER_SENDER + 1
      let queued = 0
      let refusedForStuck = 0
      for (let s = 0; s < senders; s++) {
        const sender = yield* broker.session(modern(`s${s}`))
        yield* sender.client.sendRaw(encodeFrames(Array.from({ length: MAX_STAGED_PER_SENDER }, (_, i) =>
          JSON.stringify({ type: "send", to: "stuck", message: message(`s${s}:${i}`), ...replace(`t${i}`) }))))
        yield* settled([sender.client])
        queued += sender.client.count("delivery_queued")
        for (const frame of sender.client.received()) {
          if (frame.type !== "delivery_failed") continue
          assert.strictEqual(frame.code, "E_REPLACE_QUEUE_FULL")
          assert.strictEqual(frame.reason, Reason.replaceQueueFullFor(`session "stuck" (stuck)`, MAX_STAGED_PER_RECIPIENT))
          assert.isTrue(frame.retryable)
          refusedForStuck++
        }
        yield* advance(WINDOW)
      }
      // An unrelated replace send, to a recipient that reads, is staged and delivered.
      const other = yield* broker.session(modern("other"))
      const update = message("for the reader")
      const answer = yield* sendFrame(other.client, "reader", update, replace("t"))
      assert.strictEqual(answer.type === "delivery_failed" ? answer.reason : answer.type, "delivery_queued")
      yield* advance(WINDOW)
      yield* messageFor(reader.client, update.id)
      // A few went before its link and outbox filled; the rest wait, up to the recipient's cap.
      assert.strictEqual((yield* broker.broker.stats).staged, MAX_STAGED_PER_RECIPIENT)
      assert.strictEqual(queued + refusedForStuck, senders * MAX_STAGED_PER_SENDER)
      // Once it reads, its places are free again.
      yield* stuck.client.resume
      for (let turn = 0; turn < 100 && (yield* broker.broker.stats).staged > 0; turn++) yield* stuck.client.roundTrip
      assert.strictEqual((yield* broker.broker.stats).staged, 0)
      assert.strictEqual((yield* sendFrame(other.client, "stuck", message("now it reads"), replace("t"))).type, "delivery_queued")
    }), 60_000)

  it.effect("a recipient that leaves loses its staged messages and the sender is told; nothing reaches it when it is back", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const staged = message("for b")
      yield* sendFrame(a.client, "b", staged, replace("t"))
      yield* b.client.send({ type: "unregister" })
      yield* settled([b.client], [a.client])
      const notice = yield* a.client.next("message_receipt", (frame) => frame.receipt.messageId === staged.id)
      assert.strictEqual(notice.receipt.status, "expired")
      assert.strictEqual(notice.receipt.detail, Reason.stagedRecipientLeft)
      const back = yield* broker.session(modern("b"))
      yield* advance(WINDOW * 2)
      yield* settled([a.client], [back.client])
      assert.strictEqual(copies(back.client, staged.id), 0)
      assert.strictEqual(copies(b.client, staged.id), 0)
    }))

  it.effect("a sender that leaves drops its staged asks, while its staged plain messages are still delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const question = message("staged question", { expectsReply: true })
      const note = message("staged note")
      assert.strictEqual((yield* sendFrame(a.client, "b", question, replace("q"))).type, "delivery_queued")
      assert.strictEqual((yield* sendFrame(a.client, "b", note, replace("n"))).type, "delivery_queued")
      yield* a.client.send({ type: "unregister" })
      yield* settled([a.client])
      yield* advance(WINDOW)
      yield* messageFor(b.client, note.id)
      yield* settled([], [b.client])
      assert.strictEqual(copies(b.client, question.id), 0)
    }))

  it.effect("a staged ask whose asker's connection drops is dropped, and the asker is told why when it is back: an expired receipt, and a retry answered with the same reason", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const question = message("staged question", { expectsReply: true })
      assert.strictEqual((yield* sendFrame(a.client, "b", question, replace("q"))).type, "delivery_queued")
      // The connection drops (no unregister): the session is gone until it registers again.
      yield* a.client.destroy
      yield* settled([b.client])
      const back = yield* broker.session(modern("a"))
      const notice = yield* back.client.next("message_receipt", (frame) => frame.receipt.messageId === question.id)
      assert.strictEqual(notice.receipt.status, "expired")
      assert.strictEqual(notice.receipt.detail, Reason.stagedAskerLeft)
      const retry = yield* sendFrame(back.client, "b", question, replace("q"))
      assert.strictEqual(retry.type, "delivery_failed")
      if (retry.type === "delivery_failed") assert.strictEqual(retry.reason, Reason.stagedAskerLeft)
      yield* advance(WINDOW * 2)
      yield* settled([back.client], [b.client])
      assert.strictEqual(copies(b.client, question.id), 0)
    }))

  it.effect("cancel_message withdraws a staged message: the sender is answered delivered, the recipient never gets it", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const staged = message("withdrawn before its window closed")
      assert.strictEqual((yield* sendFrame(a.client, "b", staged, replace("t"))).type, "delivery_queued")
      yield* a.client.send({ type: "cancel_message", messageId: staged.id })
      const answer = yield* a.client.next(["delivered", "delivery_failed"], (frame) => frame.messageId === staged.id)
      assert.strictEqual(answer.type, "delivered")
      yield* advance(WINDOW * 2)
      yield* settled([a.client], [b.client])
      assert.strictEqual(copies(b.client, staged.id), 0)
    }))

  it.effect("cancel_ask withdraws a staged ask: it never reaches its target, and a reply to it is refused", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const question = message("still wanted?", { expectsReply: true })
      assert.strictEqual((yield* sendFrame(a.client, "b", question, replace("q"))).type, "delivery_queued")
      yield* a.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([a.client], [b.client])
      yield* advance(WINDOW * 2)
      yield* settled([a.client], [b.client])
      assert.strictEqual(copies(b.client, question.id), 0)
      const late = yield* sendFrame(b.client, "a", message("answer", { replyTo: question.id }))
      assert.strictEqual(late.type, "delivery_failed")
    }))

  it.effect("a staged reply whose ask was answered meanwhile is not delivered: one ask, one reply; its sender is told why", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const question = message("which one?", { expectsReply: true })
      assert.strictEqual((yield* sendFrame(a.client, "b", question)).type, "delivered")
      yield* messageFor(b.client, question.id)
      const stagedReply = message("staged answer", { replyTo: question.id })
      assert.strictEqual((yield* sendFrame(b.client, "a", stagedReply, replace("x"))).type, "delivery_queued")
      const plainReply = message("plain answer", { replyTo: question.id })
      assert.strictEqual((yield* sendFrame(b.client, "a", plainReply)).type, "delivered")
      yield* advance(WINDOW * 2)
      yield* settled([b.client], [a.client])
      assert.deepStrictEqual([copies(a.client, plainReply.id), copies(a.client, stagedReply.id)], [1, 0])
      const notice = yield* b.client.next("message_receipt", (frame) => frame.receipt.messageId === stagedReply.id)
      assert.deepStrictEqual([notice.receipt.status, notice.receipt.detail], ["expired", Reason.replyNoAsk])
    }))

  it.effect("a staged ask whose target meanwhile asked its sender is refused as mutual at delivery, not delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const stagedAsk = message("a asks b, staged", { expectsReply: true })
      assert.strictEqual((yield* sendFrame(a.client, "b", stagedAsk, replace("q"))).type, "delivery_queued")
      const reverse = message("b asks a", { expectsReply: true })
      assert.strictEqual((yield* sendFrame(b.client, "a", reverse)).type, "delivered")
      yield* advance(WINDOW * 2)
      yield* settled([a.client], [b.client])
      assert.strictEqual(copies(b.client, stagedAsk.id), 0)
      const notice = yield* a.client.next("message_receipt", (frame) => frame.receipt.messageId === stagedAsk.id)
      assert.deepStrictEqual([notice.receipt.status, notice.receipt.detail], ["expired", Reason.mutualAsk])
    }))

  it.effect("a same-id retry of a staged message is answered from its record as the first time, delivery_queued with its deliverAt, and not staged twice (known issue 19)", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const msg = message("once")
      const first = yield* sendFrame(a.client, "b", msg, replace("t"))
      yield* advance(100)
      const again = yield* sendFrame(a.client, "b", msg, replace("t"))
      assert.strictEqual(first.type, "delivery_queued")
      assert.deepStrictEqual(again, first)
      yield* advance(WINDOW)
      yield* settled([a.client], [b.client])
      assert.strictEqual(copies(b.client, msg.id), 1)
    }))
})

describe("replace coalescing over a Unix socket", () => {
  it.live("the latest of three updates is delivered once the window closes, and only it", () =>
    Effect.gen(function*() {
      // Real time: the window must outlast three sends on a loaded machine (with 50 ms, u0's window
      // sometimes closed before u1 arrived), and the test waits for it once.
      const broker = yield* withBroker({ idleExit: null, replaceWindow: 1000 })
      const a = yield* broker.session(modern("a"))
      const b = yield* broker.session(modern("b"))
      const updates = [message("u0"), message("u1"), message("u2")]
      for (const update of updates) assert.strictEqual((yield* sendFrame(a.client, "b", update, replace("t"))).type, "delivery_queued")
      yield* messageFor(b.client, updates[2]!.id)
      // A later staging of the same key and its delivery: everything before it has been written.
      const marker = message("marker")
      yield* sendFrame(a.client, "b", marker, replace("t"))
      yield* messageFor(b.client, marker.id)
      assert.strictEqual(copies(b.client, updates[0]!.id), 0)
      assert.strictEqual(copies(b.client, updates[1]!.id), 0)
      assert.strictEqual(copies(b.client, updates[2]!.id), 1)
    }))
})

// C-DLV-9 drops a leaving sender's staged asks; the rest it staged is delivered at once, so that it reaches
// its recipient before the sender's session_left (after which a client gives up on asks to it, C-BRK-33).
describe("a sender that leaves with replace messages staged", () => {
  it.effect("a staged reply written with its sender's unregister reaches the asker at once, before the session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const asker = yield* broker.session({ sessionId: "asker", name: "asker" })
      const replier = yield* broker.session({ sessionId: "replier", name: "replier", frame: { features: [DELIVERY_V1] } })
      yield* asker.client.next("session_joined", (f) => f.session.id === "replier")
      const question = message("still there?", { expectsReply: true })
      yield* asker.client.send({ type: "send", to: "replier", message: question })
      yield* messageFor(replier.client, question.id)
      const answer = message("yes, and leaving", { replyTo: question.id })
      yield* replier.client.sendRaw(encodeFrames([
        JSON.stringify({ type: "send", to: "asker", message: answer, delivery: "queue", queueMode: "replace", threadId: "t" }),
        JSON.stringify({ type: "unregister" })
      ]))
      // No clock moves: the window (1.5 s) is not waited out.
      yield* asker.client.next("session_left", (f) => f.sessionId === "replier")
      const order = asker.client.received().flatMap((f) =>
        f.type === "message" && f.message.id === answer.id ? ["answer"] : f.type === "session_left" ? ["left"] : []
      )
      assert.deepStrictEqual(order, ["answer", "left"])
    }))
})
