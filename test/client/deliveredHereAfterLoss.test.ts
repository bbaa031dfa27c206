/**
 * A send by name lost on the way whose first write the broker delivered to the very session the name resolves to
 * when the client writes it again (task lossgrant, gap 3; review revdh DH1): the first write was queued for bob's
 * first session, gone, and bob's next session of the same name and directory took that mail (P49), so the record
 * names the first session as the target and the second as the receiver. The re-send by name resolves to the second:
 * the broker refuses it `E_MESSAGE_ID_REUSE` saying the message was delivered to the session the target resolves to
 * now (`Reason.messageIdReuseDeliveredHere`), and the client ends the send at once as the loss carrying that refusal,
 * marked `firstWriteDeliveredHere`, whose message says not to send it again — what docs/client.md (Reconnect and
 * liveness) says. Until this task only the pure reading was tested (idReuseReasonsAfterLoss.test.ts).
 *
 * The real broker core, durable, on the in-memory network under TestClock (queuedForDeparted.ts): its commit is held
 * so the answer to alpha's send waits while alpha's connection is destroyed; the clock moves only to the client's
 * reconnect (100 ms), a modelled outage, not a barrier.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { messageFor } from "../support/broker.ts"
import { queuedForDeparted } from "./queuedForDeparted.ts"

describe("a send lost on the way, its first write delivered to the session its name resolves to now (task lossgrant)", () => {
  it.effect("ends at the reconnect as ConnectionLost marked firstWriteDeliveredHere, saying not to send it again; the receiver has it once", () =>
    Effect.gen(function*() {
      // bob's next session, of the same name and directory, takes the mail queued for the first (P49).
      const { failure: error, ended, sent, bobSecond } = yield* queuedForDeparted({
        alpha: "aaaaaaaa-7777-4000-8000-0000000000a1",
        bobFirst: "bbbbbbbb-7777-4000-8000-0000000000b1",
        bobSecond: "bbbbbbbb-7777-4000-8000-0000000000b2",
        observer: "cccccccc-7777-4000-8000-0000000000c1"
      }, "/a")
      assert.strictEqual((yield* messageFor(bobSecond.client, sent.id)).message.id, sent.id, "setup: bob's second session did not take it")
      assert.instanceOf(error, ConnectionLost, ended ? `the send ended as ${String(error)}` : "the send still waited after the reconnect")
      if (!(error instanceof ConnectionLost)) return
      assert.deepInclude(error.refusal, { code: DeliveryCode.MessageIdReuse, reason: Reason.messageIdReuseDeliveredHere })
      assert.isTrue(error.firstWriteDeliveredHere, "not marked firstWriteDeliveredHere")
      assert.notStrictEqual(error.firstWriteReceived, true, "marked as delivered to an earlier session")
      assert.notStrictEqual(error.firstWriteQueued, true, "marked as queued")
      assert.include(error.message, "Do not send it again: that session has it.")
      yield* bobSecond.client.roundTrip
      yield* bobSecond.client.expectNothing("message")
    }))
})
