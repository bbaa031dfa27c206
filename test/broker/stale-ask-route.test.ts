/**
 * The receipt route of an ask whose copy came back unconfirmed after the ask
 * was over, and was dropped unasked (MailDelivery.dropStale, Receipts.unread).
 * Withdrawn by `cancel_ask` before anyone answered it, the receiver never got
 * it as far as the broker knows (no `received` count covered it): a later
 * `cancel_message` of it sends the receiver no `message_control` and is
 * answered as a cancel of mail the mailbox held (`delivered`, the record then
 * cancelled), and a `supersedes` naming it is refused. Answered before its copy
 * came back, it was read (a reply answers it), so its route stays and a
 * cancel of it reaches the receiver as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send, type Session } from "../support/broker.ts"
import { type MemoryNetwork, withMemoryBroker } from "../support/memory.ts"

const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/** Bob's connection drops with the question read and unconfirmed; alice sees him leave. */
const bobDrops = (alice: Session, bob: Session) =>
  Effect.gen(function*() {
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
  })

/** Bob registers again (no session live under his id: any instance, to the broker) and has read nothing. */
const bobBack = (world: MemoryNetwork, alice: Session) =>
  Effect.gen(function*() {
    const back = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
    yield* settled([back.client, alice.client])
    assert.strictEqual(back.client.count("message"), 0, "the withdrawn question was asked again")
    return back
  })

/** Alice asks bob, whose client reads the question and never confirms it. */
const asked = Effect.gen(function*() {
  const world = yield* withMemoryBroker()
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
  const question = message("still need this?", { expectsReply: true })
  assertDelivered(yield* send(alice.client, "bob", question))
  yield* messageFor(bob.client, question.id)
  return { world, alice, bob, question }
})

/** Alice cancels the question after withdrawing it: bob, back, reads no control; the cancel is answered `delivered`. */
const cancelReachesNobody = (alice: Session, back: Session, questionId: string) =>
  Effect.gen(function*() {
    yield* alice.client.send({ type: "cancel_message", messageId: questionId })
    assert.strictEqual((yield* ackFor(alice.client, questionId)).type, "delivered")
    yield* back.client.roundTrip
    yield* back.client.expectNothing(["message", "message_control"])
  })

describe("an ask withdrawn by cancel_ask, its copy back unconfirmed and dropped: no control follows it", () => {
  it.effect("withdrawn while its copy waits in the mailbox: a cancel of it sends the returning receiver no message_control", () =>
    Effect.gen(function*() {
      const { world, alice, bob, question } = yield* asked
      yield* bobDrops(alice, bob)
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      const back = yield* bobBack(world, alice)
      yield* cancelReachesNobody(alice, back, question.id)
      // Cancelled now, as a cancel of mail in the mailbox leaves it: a same-id retry hears so.
      assertFailed(yield* send(alice.client, "bob", question), "E_DELIVERY_CANCELLED")
    }))

  it.effect("withdrawn before its receiver's connection dropped: a cancel of it sends the returning receiver no message_control", () =>
    Effect.gen(function*() {
      const { world, alice, bob, question } = yield* asked
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      yield* bobDrops(alice, bob)
      const back = yield* bobBack(world, alice)
      yield* cancelReachesNobody(alice, back, question.id)
    }))

  it.effect("a send superseding it is refused E_SUPERSEDE_TARGET, and the returning receiver reads no message_control", () =>
    Effect.gen(function*() {
      const { world, alice, bob, question } = yield* asked
      yield* bobDrops(alice, bob)
      yield* alice.client.send({ type: "cancel_ask", messageId: question.id })
      yield* settled([alice.client])
      const back = yield* bobBack(world, alice)
      assertFailed(yield* send(alice.client, "bob", message("instead", { supersedes: question.id })), "E_SUPERSEDE_TARGET")
      yield* back.client.roundTrip
      yield* back.client.expectNothing(["message", "message_control"])
    }))
})

describe("an ask answered before its copy came back unconfirmed: it was read, and its route stays", () => {
  it.effect("a cancel of it reaches the returning receiver as message_control, answered delivered", () =>
    Effect.gen(function*() {
      const { world, alice, bob, question } = yield* asked
      const answer = message("yes", { replyTo: question.id })
      assertDelivered(yield* send(bob.client, "alice", answer))
      yield* messageFor(alice.client, answer.id)
      yield* bobDrops(alice, bob)
      const back = yield* bobBack(world, alice)
      yield* alice.client.send({ type: "cancel_message", messageId: question.id })
      assert.strictEqual((yield* ackFor(alice.client, question.id)).type, "delivered")
      const control = yield* back.client.next("message_control")
      assert.deepStrictEqual([control.control.messageId, control.control.action], [question.id, "cancel"])
    }))
})
