/**
 * A `send` through IntercomSession lost on the way whose first write the broker delivered to the very session the
 * name resolves to when the client writes it again (task here): the client ends it as the loss marked
 * `firstWriteDeliveredHere` (test/client/deliveredHereAfterLoss.test.ts); the session reports it sent — `Message
 * sent to bob` and a note that it was delivered before the connection was lost — not `DeliveryUnknown`'s "may or may
 * not have been delivered …; it arrived there", which contradicted itself.
 *
 * The same world as that client test (test/client/queuedForDeparted.ts): the real broker core, durable, on the
 * in-memory network under TestClock, its commit held so the answer to alpha's send waits while alpha's connection is
 * destroyed; bob's first session left before the send, so the session sends by name; bob's second session, same name
 * and directory, takes the queued mail (P49). The clock moves only to the client's reconnect (100 ms), a modelled
 * outage, not a barrier.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Queue } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { messageFor } from "../support/broker.ts"
import { headless, Host, type Inbound } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { DELIVERED_BEFORE_LOSS_NOTE } from "../../src/session/Sending.ts"
import { queuedForDepartedWith } from "../client/queuedForDeparted.ts"

describe("a session's send lost on the way, its first write delivered to the session its name resolves to now (task here)", () => {
  it.effect("ends as sent, saying it was delivered before the connection was lost; the receiver has it once", () =>
    Effect.gen(function*() {
      const { exit, bobSecond } = yield* queuedForDepartedWith({
        alpha: "aaaaaaaa-8888-4000-8000-0000000000a1",
        bobFirst: "bbbbbbbb-8888-4000-8000-0000000000b1",
        bobSecond: "bbbbbbbb-8888-4000-8000-0000000000b2",
        observer: "cccccccc-8888-4000-8000-0000000000c1"
      }, "/a", (alpha) =>
        Effect.gen(function*() {
          const inbound = yield* Queue.unbounded<Inbound>()
          const host = headless({ name: "alpha", cwd: "/tmp/project", model: "test-model" }, (message) =>
            Effect.asVoid(Queue.offer(inbound, message)))
          const session = yield* IntercomSession.make().pipe(
            Effect.provideService(IntercomClient, alpha),
            Effect.provideService(Host, host)
          )
          return (sent) => session.send({ to: "bob", message: sent.content.text })
        }))
      assert.isDefined(exit, "the send still waited after the reconnect")
      if (exit === undefined) return
      assert.isTrue(Exit.isSuccess(exit), `the send ended ${Exit.isFailure(exit) ? String(exit.cause) : ""}`)
      if (!Exit.isSuccess(exit) || exit.value._tag !== "Sent") return assert.fail("the send was not reported sent")
      const sent = exit.value
      assert.strictEqual(sent.text, `Message sent to bob${DELIVERED_BEFORE_LOSS_NOTE}`)
      assert.strictEqual(sent.delivery, "socket_delivered")
      assert.isTrue(sent.deliveredBeforeLoss, "not marked deliveredBeforeLoss")
      assert.strictEqual((yield* messageFor(bobSecond.client, sent.messageId)).message.id, sent.messageId, "bob's second session did not take it")
      yield* bobSecond.client.roundTrip
      yield* bobSecond.client.expectNothing("message")
    }))
})
