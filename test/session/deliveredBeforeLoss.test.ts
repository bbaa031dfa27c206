/**
 * What the session makes of a send its client ends as the loss marked `firstWriteDeliveredHere` (task here): the
 * connection was lost before the broker confirmed the message, and the broker reached after the reconnect refused
 * the re-send because its record says the first attempt was delivered to the session `to` resolves to now. A `reply`
 * and a `progress_update` are reported sent, with a note saying so (a `send` through a real broker:
 * deliveredHereAfterLoss.test.ts), and so is an ask to a busy peer, which waits for nothing; an ask and a blocking
 * `contact_supervisor` end as they did, on an error, whose text says the question arrived and the ask no longer waits,
 * never "may or may not have been delivered".
 *
 * Over the fake client (its send answered with that loss), not a real broker: a reply, an ask and a `supervisor_send`
 * go to a session id, which the broker resolves to that id's session, the one its record of the first write names
 * (broker/SendReplays.ts `reuseReason` gives this reason only when the re-send resolves to another session than the record's
 * target), so a real broker does not end these as that loss; the session's reading of it is checked all the same.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { ConnectionLost, deliveryError } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { DeliveredBeforeLoss } from "../../src/session/errors.ts"
import { peerBusyText } from "../../src/session/health.ts"
import { DELIVERED_BEFORE_LOSS_NOTE } from "../../src/session/Sending.ts"
import { B, type FakeClient, inboundMessage, settle, SUP, supervisorBridge, withPeers } from "./support.ts"

/** Every send ends as the client ends one whose first write the broker's record says arrived where `to` resolves now. */
const deliveredHere: FakeClient["onSend"] = (request) =>
  Effect.fail(
    new ConnectionLost({
      operation: "send",
      messageId: request.message.id,
      refusal: deliveryError({
        messageId: request.message.id,
        code: DeliveryCode.MessageIdReuse,
        reason: Reason.messageIdReuseDeliveredHere,
        retryable: false
      }),
      firstWriteDeliveredHere: true
    })
  )

/** The reason the session quotes for that loss, `to` being `to`. */
const reasonFor = (to: string) =>
  `the broker reached after the reconnect refused the re-send «${Reason.messageIdReuseDeliveredHere}» ` +
  `(${DeliveryCode.MessageIdReuse}), as its record says the first attempt was delivered to the session "${to}" ` +
  `resolves to now`

/** The text an ask ends on for that loss. */
const askEndedText = (to: string) =>
  `Message to "${to}" was delivered before the connection to the broker was lost: ${reasonFor(to)}. ` +
  `Do not send it again: that session has it. This ask has ended without waiting for the answer, and asked the ` +
  `broker to withdraw the question (cancel_ask): a reply to it may be refused, or arrive later as a new message.`

/** A child bound to SUP whose every send ends as `deliveredHere`, and its `contact_supervisor`. */
const childLosing = Effect.gen(function*() {
  const unit = yield* withPeers({ childBridge: supervisorBridge })
  unit.client.supervisorSessionId = SUP.id
  unit.client.onSend = deliveredHere
  const tool = unit.session.contactSupervisor
  if (tool === undefined) return yield* Effect.die(new Error("contact_supervisor is missing"))
  return { tool, unit }
})

describe("a send lost on the way whose first write the broker's record says arrived where `to` resolves now", () => {
  it.effect("a reply is reported sent, noting it was delivered before the loss, and answers the ask", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      client.onSend = deliveredHere
      yield* client.push(inboundMessage(B, "q-1", "ready?", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      const result = yield* session.intercom({ action: "reply", message: "yes" })
      assert.deepStrictEqual(
        [result.text, result.isError, result.details["delivered"], result.details["deliveredBeforeLoss"]],
        [`Reply sent to B${DELIVERED_BEFORE_LOSS_NOTE}`, false, true, true]
      )
      // Answered, as a reply read in time is: `pending` no longer offers the ask.
      assert.deepStrictEqual((yield* session.pending).asks, [])
    }))

  it.effect("an ask ends on an error saying the question arrived and the ask no longer waits, and withdraws the ask", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.onSend = deliveredHere
      const failure = yield* Effect.flip(session.ask({ to: "B", message: "ready?" }))
      assert.instanceOf(failure, DeliveredBeforeLoss)
      assert.strictEqual(failure.message, askEndedText("B"))
      assert.notInclude(failure.message, "may or may not")
      yield* settle
      assert.deepStrictEqual(client.cancelAsks(), [client.sends[0]?.message.id ?? "none"])
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("an ask to a busy peer, which waits for nothing, is reported sent as it is delivered, noting the loss", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.sessions = client.sessions.map((peer) => peer.id === B.id ? { ...peer, acceptsAsks: false } : peer)
      client.onSend = deliveredHere
      const sent = yield* session.ask({ to: "B", message: "ready?" })
      assert.strictEqual(sent._tag, "Sent")
      if (sent._tag !== "Sent") return
      assert.deepStrictEqual(
        [sent.text, sent.delivery, sent.reason, sent.deliveredBeforeLoss],
        [`${peerBusyText("B")}${DELIVERED_BEFORE_LOSS_NOTE}`, "socket_delivered", "peer_busy", true]
      )
      yield* settle
      assert.deepStrictEqual(client.cancelAsks(), [], "the delivered question was withdrawn")
    }))

  it.effect("a progress_update is reported sent, noting it was delivered before the loss", () =>
    Effect.gen(function*() {
      const { tool } = yield* childLosing
      const progress = yield* tool({ reason: "progress_update", message: "Half done." })
      assert.deepStrictEqual(
        [progress.text, progress.isError, progress.details["delivered"], progress.details["deliveredBeforeLoss"]],
        [`Progress update sent to supervisor planner${DELIVERED_BEFORE_LOSS_NOTE}`, false, true, true]
      )
    }))

  it.effect("a blocking contact_supervisor ends on the ask's error, saying the question arrived and the ask no longer waits", () =>
    Effect.gen(function*() {
      const { tool, unit } = yield* childLosing
      const result = yield* tool({ reason: "need_decision", message: "Which API?" })
      assert.deepStrictEqual(
        [result.text, result.isError, result.details["error"]],
        [askEndedText("planner"), true, "DeliveredBeforeLoss"]
      )
      assert.isFalse(yield* unit.session.waiting)
    }))
})
