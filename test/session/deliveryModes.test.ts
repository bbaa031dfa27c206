/**
 * Delivery modes in the session runtime (C-DLV-1…6, C-ASK-10): the tool's
 * `delivery`/`queueMode`/`threadId`/`passive` reach the client's send, bad
 * combinations are refused before anything is sent, a staged replace says
 * `Message queued for <to> (...)`, and each inbound mode reaches the Host
 * with its intent (steer, followUp, passive). Over the scripted client.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { Reason } from "../../src/protocol/delivery.ts"
import { intentFor } from "../../src/session/InboundIntent.ts"
import { B, inboundMessage, settle, withPeers } from "./support.ts"

describe("outgoing delivery modes", () => {
  it.effect("send passes delivery, queueMode and threadId on; the legacy passive alias becomes delivery passive", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.intercom({ action: "send", to: "B", message: "q", delivery: "queue" })
      yield* session.intercom({ action: "send", to: "B", message: "p", passive: true })
      yield* session.intercom({ action: "send", to: "B", message: "s" })
      const fields = client.sends.map((request) => [request.message.content.text, request.delivery ?? "-", request.queueMode ?? "-"])
      assert.deepStrictEqual(fields, [["q", "queue", "-"], ["p", "passive", "-"], ["s", "-", "-"]])
    }))

  it.effect("a staged replace message answers `Message queued for <to> (...)` with the thread in details", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.onSend = (request) =>
        Effect.succeed({ messageId: request.message.id, delivery: "staged", threadId: request.threadId ?? "", deliverAt: 1500 })
      const result = yield* session.intercom({
        action: "send",
        to: "B",
        message: "progress 40%",
        delivery: "queue",
        queueMode: "replace",
        threadId: "build"
      })
      assert.isFalse(result.isError)
      assert.match(result.text, /^Message queued for B \(.+\)$/)
      assert.include(result.text, `thread "build"`)
      assert.strictEqual(result.details.staged, true)
      assert.strictEqual(result.details.threadId, "build")
      assert.deepStrictEqual(
        [client.sends[0]?.delivery, client.sends[0]?.queueMode, client.sends[0]?.threadId],
        ["queue", "replace", "build"]
      )
    }))

  it.effect("a staged replace ask the broker drops (its asker's connection closed, C-DLV-9) ends the wait at once with the broker's reason", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.onSend = (request) =>
        Effect.succeed({ messageId: request.message.id, delivery: "staged", threadId: request.threadId ?? "", deliverAt: 1500 })
      const asking = yield* Effect.forkChild(session.intercom({
        action: "ask",
        to: "B",
        message: "which path?",
        delivery: "queue",
        queueMode: "replace",
        threadId: "plan"
      }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      // Another message's receipt leaves the wait alone.
      yield* client.control({ _tag: "Receipt", from: B, receipt: { messageId: "other", status: "expired", timestamp: 0, detail: "x" } })
      yield* settle
      assert.isUndefined(asking.pollUnsafe())
      // What the broker keeps for the asker and writes once it is back (ReplaceStaging.ts).
      yield* client.control({
        _tag: "Receipt",
        from: B,
        receipt: { messageId: questionId, status: "expired", timestamp: 0, detail: Reason.stagedAskerLeft }
      })
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask still waits after the receipt")
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.strictEqual(result.text, `The broker dropped this ask before delivering it: ${Reason.stagedAskerLeft}`)
      assert.strictEqual(result.details.error, "AskExpired")
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("bad combinations are error results naming the problem, and nothing is sent (C-DLV-3, C-DLV-4, C-ASK-10)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const cases = [
        [{ action: "ask", to: "B", message: "?", delivery: "passive" }, "An ask is never passive"],
        [{ action: "ask", to: "B", message: "?", passive: true }, "an ask is never passive"],
        [{ action: "send", to: "B", message: "x", passive: true, delivery: "steer" }, "conflicts"],
        [{ action: "send", to: "B", message: "x", delivery: "queue", queueMode: "replace" }, "needs a threadId"],
        [{ action: "send", to: "B", message: "x", threadId: "t" }, "threadId is only valid"],
        [{ action: "send", to: "B", message: "x", queueMode: "stack" }, "queueMode is only valid"],
        [{ action: "reply", to: "B", message: "x", passive: true }, "send-only"]
      ] as const
      for (const [params, text] of cases) {
        const result = yield* session.intercom(params)
        assert.isTrue(result.isError, JSON.stringify(params))
        assert.include(result.text, text)
        assert.strictEqual(result.details.error, "InvalidInput")
      }
      assert.deepStrictEqual(client.sends, [])
    }))
})

describe("inbound delivery modes reach the Host with their intent", () => {
  it("intentFor: passive never wakes; idle triggers; busy steers or follows up", () => {
    assert.strictEqual(intentFor("passive", true, false), "passive")
    assert.strictEqual(intentFor("passive", true, true), "passive")
    assert.strictEqual(intentFor(undefined, true, false), "trigger")
    assert.strictEqual(intentFor("queue", true, false), "trigger")
    assert.strictEqual(intentFor("steer", true, true), "steer")
    assert.strictEqual(intentFor(undefined, true, true), "steer")
    assert.strictEqual(intentFor("queue", true, true), "followUp")
    assert.strictEqual(intentFor("queue", false, true), "passive")
  })

  it.effect("idle: steer and queue trigger a turn, passive does not; busy: steer steers, queue follows up, passive stays passive", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      const push = (id: string, delivery: "steer" | "queue" | "passive" | undefined) =>
        client.push({
          ...inboundMessage(B, id, id),
          ...(delivery === undefined ? {} : { delivery: { delivery } })
        })
      yield* push("idle-default", undefined)
      yield* push("idle-queue", "queue")
      yield* push("idle-passive", "passive")
      yield* settle
      yield* session.setStatus("tool:bash")
      yield* push("busy-steer", "steer")
      yield* push("busy-queue", "queue")
      yield* push("busy-passive", "passive")
      yield* settle
      const intents = (yield* Queue.takeAll(host.inbox)).map((inbound) => [inbound.message.id, inbound.intent])
      assert.deepStrictEqual(intents, [
        ["idle-default", "trigger"],
        ["idle-queue", "trigger"],
        ["idle-passive", "passive"],
        ["busy-steer", "steer"],
        ["busy-queue", "followUp"],
        ["busy-passive", "passive"]
      ])
    }))
})
