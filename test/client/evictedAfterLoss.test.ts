/**
 * A `DeliveryEvicted` read after a loss is the loss, whichever its reason (afterLoss.ts `BY_REFUSAL`).
 * "… evicted the delivery at once, so nothing was queued …" (`Reason.notQueued`) is the mailbox full now; the
 * broker's record "Mailbox capacity evicted the delivery" (`Reason.evicted`) is written also of mail its recipient
 * READ: written to a `received-v1` recipient that closed before confirming, given back to the mailbox (Custody.ts),
 * then pushed out by the mailbox's bound (MailDelivery.ts `evicted` → `lost`). Review revce CE2 had made the record's
 * "not delivered", passed on as given; review revci CI2 showed the read one, so both end the loss, carrying the
 * refusal (until task afterloss2, the record's was passed on as given).
 *
 * Part 1, real broker core in memory (mailbox capacity 1): the delivered-and-read message's re-send is answered
 * E_DELIVERY_EVICTED with `Reason.evicted`. Part 2, the client on a fake broker under TestClock
 * (refusedAfterLoss.ts): its first write lost, every later write refused with exactly that answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, send } from "../support/broker.ts"
import { readThenGivenBack } from "./readGivenBack.ts"
import { refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

describe("an eviction read after a loss is the loss, whichever its reason (reviews revce CE2, revci CI2)", () => {
  it.effect("the record's eviction of a message its recipient read is the loss at once, carrying it", () =>
    Effect.gen(function*() {
      // Part 1: delivered and read, given back unconfirmed, evicted; the re-send is answered from that record.
      const { alice, read } = yield* readThenGivenBack({ mailboxCapacity: 1 })
      assertDelivered(yield* send(alice.client, "bob", message("pushes it out")), "queued")
      assertFailed(yield* send(alice.client, "bob", read), "E_DELIVERY_EVICTED", Reason.evicted)

      // Part 2: the client reading that answer to its re-send after a loss.
      const viaSend: SendVia = (client, m) => client.send({ to: "bob", message: m })
      const ended = yield* refusedAfterLoss(
        "eeeeeeee-2222-4000-8000-0000000000c2",
        read,
        { code: DeliveryCode.DeliveryEvicted, reason: Reason.evicted },
        viaSend
      )
      assert.instanceOf(ended.failure, ConnectionLost, `a message its recipient read ended as ${String(ended.failure)}`)
      assert.strictEqual(ended.laterWrites, 1, "written again")
      assert.strictEqual(ended.failure instanceof ConnectionLost ? ended.failure.refusal?.reason : undefined, Reason.evicted)
    }))

  it.effect("a mailbox full now (nothing queued) is the loss at once, carrying it", () =>
    Effect.gen(function*() {
      const viaSend: SendVia = (client, m) => client.send({ to: "target", message: m })
      const reason = Reason.notQueued("capacity", 1, 100)
      const ended = yield* refusedAfterLoss(
        "dddddddd-2222-4000-8000-0000000000cf",
        message("x"),
        { code: DeliveryCode.DeliveryEvicted, reason },
        viaSend
      )
      assert.instanceOf(ended.failure, ConnectionLost, `the mailbox full now ended as ${String(ended.failure)}`)
      assert.strictEqual(ended.laterWrites, 1, "written again")
      assert.strictEqual(ended.failure instanceof ConnectionLost ? ended.failure.refusal?.reason : undefined, reason)
    }))
})
