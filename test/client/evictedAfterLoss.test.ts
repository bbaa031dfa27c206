/**
 * Review revce, item CE2: a `DeliveryEvicted` read after a loss is classed by its reason (afterLoss.ts `BY_REFUSAL`).
 * "Mailbox capacity evicted the delivery" (`Reason.evicted`) is the broker's record of the first write (queued, then
 * evicted: never delivered) and is passed on as given; "… evicted the delivery at once, so nothing was queued …"
 * (`Reason.notQueued`) is the mailbox full now and leaves the first write unknown: the loss at once, carrying it.
 * Until this fix (since task afterloss2) both were the loss, the record's verdict among them.
 *
 * Part 1, real broker core in memory (as test/broker/send.test.ts's eviction test): the record of an evicted message
 * answers its re-send E_DELIVERY_EVICTED with `Reason.evicted`. Part 2, the client on a fake broker under TestClock
 * (refusedAfterLoss.ts): its first write lost, every later write refused so.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost, DeliveryEvicted } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, send } from "../support/broker.ts"
import { withMemoryBroker } from "../support/memory.ts"
import { refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

describe("an eviction read after a loss, by its reason (review revce CE2)", () => {
  it.effect("the record's eviction (the broker's answer to a re-send of evicted mail) is passed on as given, at once", () =>
    Effect.gen(function*() {
      // Part 1: the record's answer to a re-send of an evicted message.
      const broker = yield* withMemoryBroker({ mailboxCapacity: 1 })
      const sender = yield* broker.session({ sessionId: "cccccccc-2222-4000-8000-0000000000ce", name: "sender" })
      const target = yield* broker.session({ sessionId: "target", name: "Target" })
      yield* target.client.destroy
      yield* sender.client.next("session_left")
      const evicted = message("queued, then evicted")
      assertDelivered(yield* send(sender.client, "target", evicted), "queued")
      assertDelivered(yield* send(sender.client, "target", message("pushes it out")), "queued")
      const replay = yield* send(sender.client, "target", evicted)
      assertFailed(replay, "E_DELIVERY_EVICTED", Reason.evicted)

      // Part 2: the client reading that answer to its re-send after a loss.
      const viaSend: SendVia = (client, m) => client.send({ to: "target", message: m })
      const ended = yield* refusedAfterLoss(
        "dddddddd-2222-4000-8000-0000000000ce",
        evicted,
        { code: "E_DELIVERY_EVICTED", reason: Reason.evicted },
        viaSend
      )
      assert.instanceOf(ended.failure, DeliveryEvicted, `the record's eviction ended as ${String(ended.failure)}`)
      assert.strictEqual(ended.laterWrites, 1, "written again")
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
