/**
 * P62 and the mailbox: a reply queued for an absent asker closes the ask's
 * edge, but when the mailbox then drops it — evicted by its bounds, cancelled
 * by its sender, or read by a connection that closed before confirming it and
 * then evicted — the ask was never answered. Its edge opens again until the
 * ask's own deadline, so the replier, told the reply was lost, can send it
 * again (Asks.answerLost).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, type RegisterOptions, send, type Session } from "../support/broker.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, type MemoryBroker, memoryNetwork, nextStepAt, withMemoryBroker } from "../support/memory.ts"
import type { WireClient, WireError } from "../support/wire.ts"

const noAsk = "Reply target does not match a pending ask"

/** The ids of the replies (`replyTo` set) `client` received, in order. */
const repliesIn = (client: WireClient) =>
  client.received().flatMap((f) => f.type === "message" && f.message.replyTo !== undefined ? [f.message.id] : [])

/**
 * `asker` asks the replier, which got it, then leaves; the replier has seen it go.
 * Returns the question and when the broker received it.
 */
const askThenLeave = (asker: Session, replier: Session) =>
  Effect.gen(function*() {
    const question = message("what is 2+2?", { expectsReply: true })
    assertDelivered(yield* send(asker.client, "replier", question))
    const askedAt = (yield* messageFor(replier.client, question.id)).message.brokerReceivedAt ?? Number.NaN
    yield* asker.client.destroy
    yield* replier.client.next("session_left", (f) => f.sessionId === asker.id)
    return { question, askedAt }
  })

/** The replier's `expired` receipt for `lost`, with the mailbox's reason. */
const expectLost = (replier: Session, lost: Message) =>
  Effect.gen(function*() {
    const notice = yield* replier.client.next("message_receipt", (f) => f.receipt.messageId === lost.id)
    assert.strictEqual(notice.receipt.status, "expired")
    return notice.receipt.detail ?? ""
  })

const session = (broker: MemoryBroker, sessionId: string, options: RegisterOptions = {}) =>
  broker.session({ sessionId, name: sessionId, ...options })

/**
 * A `received-v1` asker asks the replier, which answers live; the asker runs `beforeLeaving` (a withdrawal,
 * or nothing), then drops without confirming it read the reply: the reply goes back to the mailbox (of 2)
 * and two notes push it out, and the replier is told it was lost.
 */
const answeredThenEvicted = (beforeLeaving: (asker: Session, question: Message) => Effect.Effect<void, WireError>) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker({ mailboxCapacity: 2 })
    const confirming = { frame: { features: [RECEIVED_V1] } }
    const asker = yield* session(broker, "asker", confirming)
    const replier = yield* session(broker, "replier")
    const question = message("what is 2+2?", { expectsReply: true })
    assertDelivered(yield* send(asker.client, "replier", question))
    yield* messageFor(replier.client, question.id)
    const first = message("4", { replyTo: question.id })
    assertDelivered(yield* send(replier.client, "asker", first))
    yield* messageFor(asker.client, first.id)
    yield* beforeLeaving(asker, question)
    yield* asker.client.destroy
    yield* replier.client.next("session_left", (f) => f.sessionId === asker.id)
    for (const note of [message("note 1"), message("note 2")]) {
      assertDelivered(yield* send(replier.client, "asker", note), "queued")
    }
    yield* expectLost(replier, first)
    return { broker, confirming, replier, question }
  })


describe("P62: a reply lost before it reached its asker leaves the ask open", () => {
  it.effect("a queued reply the mailbox evicts: the replier may reply again, and that reply reaches the asker", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ mailboxCapacity: 2 })
      const asker = yield* session(broker, "asker")
      const replier = yield* session(broker, "replier")
      const { question } = yield* askThenLeave(asker, replier)

      const first = message("4", { replyTo: question.id })
      assertDelivered(yield* send(replier.client, "asker", first), "queued")
      // Two more from the replier: the mailbox holds two, and the sender with the most loses its oldest.
      const notes = [message("note 1"), message("note 2")]
      for (const note of notes) assertDelivered(yield* send(replier.client, "asker", note), "queued")
      assert.match(yield* expectLost(replier, first), /^Mailbox capacity evicted the delivery/)

      const again = message("4, again", { replyTo: question.id })
      assertDelivered(yield* send(replier.client, "asker", again), "queued")
      // Answered once more: a further reply is refused, as for any answered ask.
      assertFailed(yield* send(replier.client, "asker", message("5", { replyTo: question.id })), "E_REPLY_TARGET", noAsk)

      const back = yield* session(broker, "asker")
      assert.strictEqual((yield* messageFor(back.client, again.id)).message.replyTo, question.id)
      yield* settled([replier.client], [back.client])
      assert.deepStrictEqual(repliesIn(back.client), [again.id])
    }))

  it.effect("a queued reply its sender cancels: the replier may reply again, and only that reply reaches the asker", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const asker = yield* session(broker, "asker")
      const replier = yield* session(broker, "replier")
      const { question } = yield* askThenLeave(asker, replier)

      const first = message("wrong answer", { replyTo: question.id })
      assertDelivered(yield* send(replier.client, "asker", first), "queued")
      yield* replier.client.send({ type: "cancel_message", messageId: first.id })
      assert.strictEqual((yield* ackFor(replier.client, first.id)).type, "delivered")

      const again = message("right answer", { replyTo: question.id })
      assertDelivered(yield* send(replier.client, "asker", again), "queued")
      assertFailed(yield* send(replier.client, "asker", message("third", { replyTo: question.id })), "E_REPLY_TARGET", noAsk)

      const back = yield* session(broker, "asker")
      yield* messageFor(back.client, again.id)
      yield* settled([replier.client], [back.client])
      assert.deepStrictEqual(repliesIn(back.client), [again.id])
    }))

  it.effect("the edge opens again only until the ask's own deadline", () =>
    Effect.gen(function*() {
      const askTimeout = 60_000
      const broker = yield* withMemoryBroker({ askTimeout })
      const replier = yield* session(broker, "replier")
      /** A reply queued for the asker that left, then cancelled by the replier at `cancelAt`. */
      const replyThenCancel = (questionId: string, cancelAt: number) =>
        Effect.gen(function*() {
          const reply = message("an answer", { replyTo: questionId })
          assertDelivered(yield* send(replier.client, "asker", reply), "queued")
          yield* nextStepAt(cancelAt)
          yield* replier.client.send({ type: "cancel_message", messageId: reply.id })
          assert.strictEqual((yield* ackFor(replier.client, reply.id)).type, "delivered")
        })

      // Lost before the deadline: open again, until the deadline and no longer.
      const early = yield* askThenLeave(yield* session(broker, "asker"), replier)
      yield* replyThenCancel(early.question.id, early.askedAt + 1_000)
      yield* nextStepAt(early.askedAt + askTimeout)
      assertFailed(yield* send(replier.client, "asker", message("late", { replyTo: early.question.id })), "E_REPLY_TARGET", noAsk)

      // Lost once the deadline has come: it stays closed. (Just before it, a reply is still accepted.)
      const late = yield* askThenLeave(yield* session(broker, "asker"), replier)
      yield* replyThenCancel(late.question.id, late.askedAt + 1_000)
      yield* nextStepAt(late.askedAt + askTimeout - 1)
      const inTime = message("just in time", { replyTo: late.question.id })
      assertDelivered(yield* send(replier.client, "asker", inTime), "queued")
      yield* replier.client.send({ type: "cancel_message", messageId: inTime.id })
      assert.strictEqual((yield* ackFor(replier.client, inTime.id)).type, "delivered")
      assertFailed(yield* send(replier.client, "asker", message("late", { replyTo: late.question.id })), "E_REPLY_TARGET", noAsk)
    }))

  it.effect("a reply delivered live, read but never confirmed, then evicted from the mailbox: the replier may reply again", () =>
    Effect.gen(function*() {
      // Gone without confirming it read the reply: the reply goes back to the mailbox, then is pushed out.
      const { broker, confirming, question, replier } = yield* answeredThenEvicted(() => Effect.void)
      const again = message("4, again", { replyTo: question.id })
      assertDelivered(yield* send(replier.client, "asker", again), "queued")
      const back = yield* session(broker, "asker", confirming)
      yield* messageFor(back.client, again.id)
      yield* settled([replier.client], [back.client])
      assert.deepStrictEqual(repliesIn(back.client), [again.id])
    }))
})

// An ask its asker withdrew after the reply had closed its edge stays withdrawn when that reply is lost:
// a new reply is refused, and the replier's own ask to the asker is not refused as mutual. A durable broker
// keeps the withdrawal across a restart (WithdrawnAsks.ts), so a reply restored and then lost does not reopen it.
describe("an ask withdrawn after its reply closed it", () => {
  it.effect("by cancel_ask: a new reply is refused E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const { question, replier } = yield* answeredThenEvicted((asker, question) =>
        asker.client.send({ type: "cancel_ask", messageId: question.id })
      )
      assertFailed(yield* send(replier.client, "asker", message("4, again", { replyTo: question.id })), "E_REPLY_TARGET")
    }))

  it.effect("by cancel_message on the ask: a new reply is refused E_REPLY_TARGET", () =>
    Effect.gen(function*() {
      const { question, replier } = yield* answeredThenEvicted((asker, question) =>
        Effect.gen(function*() {
          yield* asker.client.send({ type: "cancel_message", messageId: question.id })
          yield* asker.client.next("delivered", (f) => f.messageId === question.id)
        })
      )
      assertFailed(yield* send(replier.client, "asker", message("4, again", { replyTo: question.id })), "E_REPLY_TARGET")
    }))

  it.effect("by cancel_ask: the replier's own ask to the returning asker is delivered, not refused as mutual", () =>
    Effect.gen(function*() {
      const { broker, confirming, replier } = yield* answeredThenEvicted((asker, question) =>
        asker.client.send({ type: "cancel_ask", messageId: question.id })
      )
      yield* session(broker, "asker", confirming)
      assertDelivered(yield* send(replier.client, "asker", message("your turn?", { expectsReply: true })))
    }))

  it.effect("by cancel_ask, then a durable broker's restart before the reply is lost: a new reply is still refused", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { mailboxCapacity: 2 })
      const confirming = { frame: { features: [RECEIVED_V1] } }
      const asker = yield* world.session({ sessionId: "asker", name: "asker", ...confirming })
      const replier = yield* world.session({ sessionId: "replier", name: "replier" })
      const question = message("what is 2+2?", { expectsReply: true })
      assertDelivered(yield* send(asker.client, "replier", question))
      yield* messageFor(replier.client, question.id)
      const first4 = message("4", { replyTo: question.id })
      assertDelivered(yield* send(replier.client, "asker", first4))
      // Read, never confirmed: the reply stays in the store, and comes back to the mailbox after the restart.
      yield* messageFor(asker.client, first4.id)
      yield* asker.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([asker.client])
      yield* advance(LAZY_FLUSH) // the withdrawal is committed
      yield* first.crash

      yield* durableBroker(world, disk, { mailboxCapacity: 2 })
      const replier2 = yield* world.session({ sessionId: "replier", name: "replier" })
      // The asker comes back and is handed the restored reply, then goes again without confirming it.
      const asker2 = yield* world.session({ sessionId: "asker", name: "asker", ...confirming })
      yield* messageFor(asker2.client, first4.id)
      yield* asker2.client.destroy
      yield* replier2.client.next("session_left", (f) => f.sessionId === asker2.id)
      // Two notes push the restored reply out of the asker's mailbox (of 2): the replier is told it was lost.
      for (const note of [message("note 1"), message("note 2")]) {
        assertDelivered(yield* send(replier2.client, "asker", note), "queued")
      }
      yield* expectLost(replier2, first4)
      assertFailed(yield* send(replier2.client, "asker", message("4, again", { replyTo: question.id })), "E_REPLY_TARGET")
    }))
})
