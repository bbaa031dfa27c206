/**
 * `delivery-v1` through `IntercomClient`: a replace send resolves as
 * `staged` (the broker's `delivery_queued`), the recipient sees the sender's
 * mode on the inbound message, the sender sees a `superseded` receipt for a
 * replaced message; invalid combinations and modes a broker did not grant
 * are refused before anything is written. In memory under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { TestClock } from "effect/testing"
import { randomUUID } from "node:crypto"
import { sendFrameText } from "../../src/client/requests.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { subscribe } from "./support.ts"

const msg = (text: string, extra: Partial<Message> = {}): Message => ({
  id: randomUUID(),
  timestamp: 0,
  content: { text },
  ...extra
})

describe("IntercomClient delivery modes", () => {
  it.effect("replace: the send is staged; the replaced one gets a superseded receipt; the recipient gets the latest with its mode", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const a = yield* world.client("a")
      const b = yield* world.client("b")
      yield* Effect.all([a.connect, b.connect])
      const controls = yield* subscribe(a.controls, "a's controls")
      const first = msg("v1")
      const second = msg("v2")
      const staged = yield* a.send({ to: "b", message: first, delivery: "queue", queueMode: "replace", threadId: "status" })
      assert.strictEqual(staged.delivery, "staged")
      assert.strictEqual(staged.threadId, "status")
      assert.strictEqual(staged.deliverAt, 1500)
      yield* a.send({ to: "b", message: second, delivery: "queue", queueMode: "replace", threadId: "status" })
      const receipt = yield* controls.next()
      if (receipt._tag === "Receipt") {
        assert.deepStrictEqual([receipt.receipt.messageId, receipt.receipt.status], [first.id, "superseded"])
      } else assert.fail("expected a receipt")
      yield* TestClock.adjust(1500)
      const inbound = yield* b.messages.pipe(Stream.take(1), Stream.runHead)
      assert.isTrue(Option.isSome(inbound))
      if (Option.isSome(inbound)) {
        assert.strictEqual(inbound.value.message.id, second.id)
        assert.deepStrictEqual(inbound.value.delivery, { delivery: "queue", queueMode: "replace", threadId: "status" })
      }
    }))

  it.effect("an invalid combination fails with InvalidMessage and its reason; nothing reaches the target", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const a = yield* world.client("a")
      const b = yield* world.client("b")
      yield* Effect.all([a.connect, b.connect])
      const error = yield* Effect.flip(a.send({ to: "b", message: msg("?", { expectsReply: true }), delivery: "passive" }))
      assert.strictEqual(error._tag, "InvalidMessage")
      if (error._tag === "InvalidMessage") assert.include(error.reason, "An ask is never passive")
      const plain = msg("after")
      yield* a.send({ to: "b", message: plain })
      const first = yield* b.messages.pipe(Stream.take(1), Stream.runHead)
      assert.strictEqual(Option.getOrUndefined(first)?.message.id, plain.id)
    }))
})

describe("sendFrameText and delivery-v1", () => {
  it("a default (steer) send carries no delivery fields", () => {
    const text = sendFrameText({ to: "b", message: msg("x"), delivery: "steer" }, "send", new Set([DELIVERY_V1]), 0)
    assert.isString(text)
    if (typeof text === "string") assert.notInclude(text, "delivery")
  })

  it("the passive alias goes on the wire as delivery passive", () => {
    const text = sendFrameText({ to: "b", message: msg("x"), passive: true }, "send", new Set([DELIVERY_V1]), 0)
    assert.isString(text)
    if (typeof text === "string") {
      assert.include(text, `"delivery":"passive"`)
      assert.notInclude(text, `"passive"`.concat(":"))
    }
  })

  it("a mode other than steer to a broker without delivery-v1 is refused, not sent as a steer", () => {
    const refused = sendFrameText({ to: "b", message: msg("x"), delivery: "queue" }, "send", new Set(), 0)
    assert.notStrictEqual(typeof refused, "string")
    if (typeof refused !== "string") {
      assert.strictEqual(refused.code, DeliveryCode.DeliveryUnsupported)
      assert.include(refused.reason, "delivery-v1")
    }
  })
})
