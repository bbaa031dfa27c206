/**
 * A `DeliveryExpired` read after a loss is the loss (afterLoss.ts `BY_REFUSAL`, task afterloss3), as an eviction is
 * (review revci CI2): the broker's record "Mailbox delivery expired" (`Reason.expired`) is written also of mail its
 * recipient READ — written to a `received-v1` recipient that closed before confirming, given back to the mailbox
 * (Custody.ts), then left there past the mailbox's retention (MailDelivery.ts `prune` → `lost`). Until this task it
 * was passed on as given, "not delivered". The client's own `ASK_TIMED_OUT_UNWRITTEN`, which its asker settles with
 * the broker on (session/Ask.ts `timedOutUnwritten`), is still passed on as given.
 *
 * Part 1, real broker core in memory under TestClock (retention 1 s): the delivered-and-read message's re-send is
 * answered E_DELIVERY_EXPIRED with `Reason.expired`; the clock is moved past the retention (a modelled wait for the
 * mailbox's expiry, not a barrier). Part 2, the client on a fake broker under TestClock (refusedAfterLoss.ts): its
 * first write lost, every later write refused with exactly that answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { afterLossOf } from "../../src/client/afterLoss.ts"
import { ConnectionLost, deliveryError } from "../../src/client/errors.ts"
import { ASK_TIMED_OUT_UNWRITTEN } from "../../src/client/requests.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { assertFailed } from "../support/assertions.ts"
import { send } from "../support/broker.ts"
import { advance } from "../support/memory.ts"
import { readThenGivenBack } from "./readGivenBack.ts"
import { refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const viaSend: SendVia = (client, m) => client.send({ to: "bob", message: m })

describe("an expiry read after a loss is the loss (task afterloss3; as review revci CI2 made an eviction)", () => {
  it.effect("the record's expiry of a message its recipient read is the loss at once, carrying it", () =>
    Effect.gen(function*() {
      // Part 1: delivered and read, given back unconfirmed, expired; the re-send is answered from that record.
      const { alice, read } = yield* readThenGivenBack({ mailboxRetention: "1 second" })
      // The mailbox's retention runs out (modelled on the TestClock); the next send prunes it.
      yield* advance("2 seconds")
      assertFailed(yield* send(alice.client, "bob", read), "E_DELIVERY_EXPIRED", Reason.expired)

      // Part 2: the client reading that answer to its re-send after a loss.
      const ended = yield* refusedAfterLoss(
        "eeeeeeee-3333-4000-8000-0000000000e1",
        read,
        { code: DeliveryCode.DeliveryExpired, reason: Reason.expired },
        viaSend
      )
      assert.instanceOf(ended.failure, ConnectionLost, `a message its recipient read ended as ${String(ended.failure)}`)
      assert.strictEqual(ended.laterWrites, 1, "written again")
      assert.strictEqual(ended.failure instanceof ConnectionLost ? ended.failure.refusal?.reason : undefined, Reason.expired)
      assert.isTrue(ended.endedAtReconnect, `not ended at once: ${ended.endedAfterMs} ms after the loss`)
    }))

  it("a DeliveryExpired with the client's own 'ask timed out unwritten' reason is still read as given (afterLossOf), for its asker to settle on", () => {
    const own = deliveryError({ messageId: "m-own", code: DeliveryCode.DeliveryExpired, reason: ASK_TIMED_OUT_UNWRITTEN, retryable: false })
    assert.strictEqual(afterLossOf(own), "asGiven")
    const record = deliveryError({ messageId: "m-record", code: DeliveryCode.DeliveryExpired, reason: Reason.expired, retryable: false })
    assert.strictEqual(afterLossOf(record), "unknown")
  })
})
