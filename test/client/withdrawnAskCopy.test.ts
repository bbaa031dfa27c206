/**
 * Copies of an ask whose sender withdrew it, after this client's reply to it was lost (the reply's `expired`
 * receipt, `replyLost`). Which copy is which (review revbb BB1, revbf BF2): the broker asks a question again for
 * a lost reply only while the ask lasts, and a withdrawn ask is over. So
 * - the sender's cancel read BEFORE the loss: nothing is asked again, and a copy that comes is a redelivery (a
 *   `received-v1` broker giving what the client never confirmed, or a cancelled copy and its cancel at a return,
 *   WithdrawnCopies.give) of the message passed on already: the pair is not reopened and the copy is dropped;
 * - the loss read BEFORE the cancel: the question asked again passes once more ("again", the same message, not
 *   a new one under a reused id), and the cancel read behind it closes the pair, so a copy after that is dropped.
 * Either way the client keeps the cancel (`withdrawal` says "cancel", which a session reads as it hands a copy
 * over), and that cancel, written again, reaches `controls` once. In memory, against a fake broker that writes
 * the frames it is told to ahead of each `list` answer (as test/client/controlsOnce.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ControlEvent } from "../../src/client/events.ts"
import { scriptedListClient } from "./support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

const ask = { type: "message", from: SENDER, message: { id: "q1", timestamp: 1, content: { text: "still need this?" }, expectsReply: true } }
const cancel = { type: "message_control", from: SENDER, control: { messageId: "q1", action: "cancel", timestamp: 2 } }

const label = (event: ControlEvent): string =>
  event._tag === "Control" ? `${event.control.action} ${event.control.messageId}` : event._tag

/** Bob, who read the ask and answered it (reply r1), with helpers to script the fake broker. */
const answeredAsk = Effect.gen(function*() {
  const { client, controls, listAfter, messages } = yield* scriptedListClient
  yield* listAfter([ask])
  yield* Effect.orDie(client.send({ to: SENDER.id, message: { id: "r1", timestamp: 3, content: { text: "yes" }, replyTo: "q1" } }))
  /** The ask and its cancel written again, then markers: once they are seen, anything before them was passed on. */
  const againThenMarkers = listAfter([
    ask,
    cancel,
    { ...ask, message: { id: "marker", timestamp: 6, content: { text: "marker" } } },
    { ...cancel, control: { messageId: "marker", action: "cancel", timestamp: 6 } }
  ]).pipe(
    Effect.andThen(messages.next((message) => message.message.id === "marker")),
    Effect.andThen(controls.next((event) => label(event) === "cancel marker"))
  )
  return { again: againThenMarkers, client, controls, listAfter, messages }
})

const lost = { type: "message_receipt", from: SENDER, receipt: { messageId: "r1", status: "expired", timestamp: 4 } }

describe("copies of a withdrawn ask after its reply was lost (reviews revbb BB1, revbf BF2)", () => {
  it.effect("cancel read before the loss: the copy is a redelivery, dropped; the ask stays withdrawn, its cancel passed once", () =>
    Effect.gen(function*() {
      const { again, client, controls, listAfter, messages } = yield* answeredAsk
      yield* listAfter([cancel])
      yield* controls.next((event) => label(event) === "cancel q1")
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "q1"), "cancel", "setup: the cancel was recorded")
      // bob's reply is lost after the ask was withdrawn: the broker asks nothing again, the pair is not reopened.
      yield* listAfter([lost])
      yield* again
      assert.deepStrictEqual(
        messages.seen().map((message) => message.message.id),
        ["q1", "marker"],
        "a redelivered copy of the withdrawn ask was passed on again"
      )
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "q1"), "cancel", "the copy made the client forget the withdrawal")
      assert.deepStrictEqual(
        controls.seen().filter((event) => event._tag === "Control").map(label),
        ["cancel q1", "cancel marker"],
        "the cancel written again reached controls a second time"
      )
    }))

  it.effect("loss read, then the cancel before the question asked again: the copy behind the cancel is dropped", () =>
    Effect.gen(function*() {
      const { again, client, controls, listAfter, messages } = yield* answeredAsk
      // The question asked again was kept for a later connection, say, and the sender's cancel came first: read
      // behind the cancel, the copy is of a withdrawn ask the consumer has, and passing it again adds nothing.
      yield* listAfter([lost, cancel])
      yield* controls.next((event) => label(event) === "cancel q1")
      yield* again
      assert.deepStrictEqual(
        messages.seen().map((message) => message.message.id),
        ["q1", "marker"],
        "a copy of the withdrawn ask read after its cancel was passed on again"
      )
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "q1"), "cancel")
    }))

  it.effect("loss read before the cancel: the question asked again passes once, the ask stays withdrawn, its cancel passed once", () =>
    Effect.gen(function*() {
      const { again, client, controls, listAfter, messages } = yield* answeredAsk
      // The loss, then the question asked again (the broker writes it behind the receipt), then the sender's cancel.
      yield* listAfter([lost, ask, cancel])
      yield* controls.next((event) => label(event) === "cancel q1")
      yield* messages.next((message) => message.message.id === "q1")
      yield* messages.next((message) => message.message.id === "q1")
      assert.deepStrictEqual(messages.seen().map((message) => message.message.id), ["q1", "q1"], "setup: asked again, it passed once more")
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "q1"), "cancel", "the question asked again lost the withdrawal")
      yield* again
      assert.deepStrictEqual(
        messages.seen().map((message) => message.message.id),
        ["q1", "q1", "marker"],
        "a copy of the withdrawn ask read after its cancel was passed on again"
      )
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "q1"), "cancel")
      assert.deepStrictEqual(
        controls.seen().filter((event) => event._tag === "Control").map(label),
        ["cancel q1", "cancel marker"],
        "the cancel written again reached controls a second time"
      )
    }))
})
