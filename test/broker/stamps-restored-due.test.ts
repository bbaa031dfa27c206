/**
 * A restored ask's mail is due at the due time stored with it (`Mail.askDueAt`, review revby by1), through a durable
 * restart: a replace-staged ask's edge opens until then (Asks.openStaged), and a copy in the mailbox is judged past its
 * deadline by it (StaleAsks.pastDeadline). The ask is received while the stamps lead the clock by an hour (a send an
 * hour ahead, the clock then set back), and the broker restarts 5 s later: the stored due time is the clock at its
 * receipt plus its 60 s timeout, while every other reading is later — the stamp deadline (receipt + timeout) an hour
 * later, the fallback for a row without one (that less the stored stamps' lead over the new clock, AskEdges.askDueOf)
 * and a fresh timeout from the restart both 5 s later. So at 61 s after the receipt each check below holds only if the
 * restore used the stored due time. On a durable broker (memory disk) on the TestClock; time passes only as modelled:
 * the store's lazy flush (`LAZY_FLUSH`, so the crash keeps the ask), the lead, the downtime and the ask's timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import type { BrokerCoreOptions } from "../../src/broker/index.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { DELIVERY_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, advanceTo, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000
const ASK_TIMEOUT_MS = 60_000
/** How long after the ask the broker restarts. */
const DOWN_MS = 5_000

/**
 * The first run: a durable broker on a fresh disk, alice (`delivery-v1`) and bob (`received-v1`, never confirming);
 * its stamps put an hour ahead of its clock (alice's `m0` to bob), and the clock then back at START for the ask.
 */
const firstRun = Effect.gen(function*() {
  const net = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const options: BrokerCoreOptions = { askTimeout: ASK_TIMEOUT_MS, replaceWindow: "10 minutes" }
  yield* TestClock.setTime(START + HOUR)
  const broker = yield* durableBroker(net, disk, options)
  const alice = yield* net.session({ sessionId: "alice", name: "alice", frame: { features: [DELIVERY_V1] } })
  const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
  assertDelivered(yield* send(alice.client, "bob", message("m0")))
  yield* TestClock.setTime(START)
  /** The broker crashes with what it stored (after the lazy flush) and restarts DOWN_MS after START. */
  const restart = Effect.gen(function*() {
    yield* advance(LAZY_FLUSH)
    yield* broker.crash
    yield* TestClock.setTime(START + DOWN_MS)
    return yield* durableBroker(net, disk, options)
  })
  return { net, alice, bob, restart }
})

describe("a restored ask's mail is due at its stored due time (the stamps an hour ahead at its receipt)", () => {
  it.effect("a copy in the mailbox, its recipient back 61 s after the ask: dropped as expired, its asker told so", () =>
    Effect.gen(function*() {
      const { alice, bob, net, restart } = yield* firstRun
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id) // read, never confirmed: it stays stored
      yield* restart
      const alice2 = yield* net.session({ sessionId: "alice", name: "alice", frame: { features: [DELIVERY_V1] } })
      yield* advanceTo(START + ASK_TIMEOUT_MS + 1)
      const bob2 = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
      yield* bob2.client.roundTrip
      yield* alice2.client.roundTrip
      const told = alice2.client.received().flatMap((frame) =>
        frame.type === "message_receipt" && frame.receipt.messageId === ask.id ? [[frame.receipt.status, frame.receipt.detail]] : []
      )
      assert.deepStrictEqual(told, [["expired", Reason.askExpired]])
      yield* bob2.client.expectNothing("message", (frame) => frame.message.id === ask.id)
    }))

  it.effect("a replace-staged ask, answered 61 s after it: its edge closed at its due time, the reply refused", () =>
    Effect.gen(function*() {
      const { alice, net, restart } = yield* firstRun
      const ask = message("shall I go on?", { expectsReply: true })
      yield* alice.client.send({ type: "send", to: "bob", message: ask, delivery: "queue", queueMode: "replace", threadId: "t" })
      yield* alice.client.next("delivery_queued", (frame) => frame.messageId === ask.id)
      yield* restart
      yield* net.session({ sessionId: "alice", name: "alice", frame: { features: [DELIVERY_V1] } })
      const bob2 = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
      yield* messageFor(bob2.client, ask.id) // the restored staged ask, its edge opened at the restart
      yield* advanceTo(START + ASK_TIMEOUT_MS + 1)
      const answer = yield* send(bob2.client, "alice", message("yes", { replyTo: ask.id }))
      assert.deepStrictEqual(
        answer.type === "delivery_failed" ? [answer.code, answer.reason] : answer.type,
        [DeliveryCode.ReplyTarget, Reason.replyNoAsk],
        "the reply was taken past the ask's stored due time"
      )
    }))
})
