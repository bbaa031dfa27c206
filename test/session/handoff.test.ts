/**
 * C-DLV-12: a message the host refuses is handed over again every 100 ms
 * while the session generation is current, in arrival order, without holding
 * up a reply to the live ask (C-ORD-32); after the generation closes it gets
 * exactly one more attempt and is then abandoned, with a warning and a count.
 * A message the host took is not handed to it again, even when the generation
 * closed while `deliver` had not yet returned (known issue 18). A host that
 * dies while a message is prepared (`exposeTool`) counts as a refusal too.
 * TestClock drives every retry.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Logger, Metric, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host, HostOutputGone } from "../../src/session/Host.ts"
import { inboundAbandoned } from "../../src/session/HostHandoff.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle, withPeers } from "./support.ts"


const REFUSE_ALWAYS = Number.MAX_SAFE_INTEGER

describe("C-DLV-12 the hand-off to the host is retried", () => {
  it.effect("a host that refuses 3 times gets every message exactly once, in arrival order", () =>
    Effect.gen(function*() {
      const { client, host } = yield* withPeers()
      host.failDeliveries = 3
      for (const id of ["m1", "m2", "m3"]) yield* client.push(inboundMessage(B, id, id))
      yield* settle
      assert.deepStrictEqual(host.attempts, ["m1"], "later messages wait behind the refused one")
      yield* TestClock.adjust("99 millis")
      assert.deepStrictEqual(host.attempts, ["m1"])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(host.attempts, ["m1", "m1"])
      yield* TestClock.adjust("200 millis")
      yield* settle
      assert.deepStrictEqual(host.attempts, ["m1", "m1", "m1", "m1", "m2", "m3"])
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m1", "m2", "m3"])
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(host.attempts.length, 6, "nothing is handed over twice")
      const accepted = client.receipts().filter((r) => r.detail === "accepted by receiver").map((r) => r.messageId)
      assert.deepStrictEqual(accepted, ["m1", "m2", "m3"])
    }))

  it.effect("an ask whose hand-off is being retried stays pending", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 2
      yield* client.push(inboundMessage(B, "q-1", "ready?", { expectsReply: true }))
      yield* settle
      const pendingIds = Effect.map(session.pending, (pending) => pending.asks.map((ask) => ask.message.id))
      assert.deepStrictEqual(yield* pendingIds, ["q-1"])
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(host.attempts, ["q-1", "q-1"])
      assert.deepStrictEqual(yield* pendingIds, ["q-1"])
      yield* TestClock.adjust("100 millis")
      assert.strictEqual((yield* Queue.take(host.inbox)).message.id, "q-1")
      assert.deepStrictEqual(yield* pendingIds, ["q-1"], "taken by the host, still unanswered")
    }))

  it.effect("C-ORD-32: a reply to the live ask resolves it at once while an earlier message is stuck; that one still arrives", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = REFUSE_ALWAYS
      const asking = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?" }))
      yield* settle
      yield* client.push(inboundMessage(C, "stuck", "fyi"))
      yield* settle
      assert.deepStrictEqual(host.attempts, ["stuck"])
      const questionId = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(B, "answer", "GET only", { replyTo: questionId }))
      const result = yield* Fiber.join(asking)
      assert.strictEqual(result.text, "**Reply from B:**\nGET only")
      host.failDeliveries = 0
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["stuck"])
      assert.notInclude(host.attempts, "answer", "the reply never went to the host")
    }))

  it.effect("after the generation closes each message gets exactly one more attempt; a refused one is abandoned, logged and counted", () => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel !== "Warn") return
      const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
      warnings.push(parts.filter((part) => typeof part === "string").join(" "))
    })
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, host } = yield* withPeers().pipe(Scope.provide(scope))
      // m1 is refused 3 times while current and once more after the close; m2 is taken on its one attempt.
      host.failDeliveries = 4
      yield* client.push(inboundMessage(B, "m1", "first"))
      yield* client.push(inboundMessage(C, "m2", "second"))
      yield* settle
      yield* TestClock.adjust("200 millis")
      assert.deepStrictEqual(host.attempts, ["m1", "m1", "m1"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(host.attempts, ["m1", "m1", "m1", "m1", "m2"])
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m2"])
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(host.attempts.length, 5, "no attempt after the last one")
      assert.strictEqual((yield* Metric.value(inboundAbandoned)).count, 1)
      const abandoned = warnings.filter((line) => line.startsWith("Intercom abandoned"))
      assert.deepStrictEqual(abandoned, [
        `Intercom abandoned message m1 from "B" (${B.id}): the host did not take it before the session ended`
      ])
    }).pipe(
      Effect.provide(Logger.layer([capture])),
      Effect.provideService(Metric.MetricRegistry, new Map())
    )
  })

  it.effect("a host whose exposeTool dies: that hand-off is retried like a refusal, and later messages are still handed over", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      let exposeCalls = 0
      yield* Layer.build(
        IntercomSession.layer({ toolVisibility: "after-first-use" }).pipe(Layer.provide(Layer.mergeAll(
          Layer.succeed(IntercomClient, client.service),
          Host.layer({
            ...host.service,
            exposeTool: () => Effect.suspend(() => {
              exposeCalls++
              return Effect.die("exposeTool broke")
            })
          })
        )))
      )
      yield* client.push(inboundMessage(B, "m1", "first"))
      yield* settle
      assert.strictEqual(exposeCalls, 1)
      assert.deepStrictEqual(host.attempts, [], "preparing m1 died before deliver")
      yield* TestClock.adjust("99 millis")
      assert.deepStrictEqual(host.attempts, [])
      yield* TestClock.adjust("1 millis")
      assert.deepStrictEqual(host.attempts, ["m1"], "retried after the refusal interval")
      yield* client.push(inboundMessage(C, "m2", "second"))
      yield* settle
      assert.deepStrictEqual(host.attempts, ["m1", "m2"])
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m1", "m2"])
    }))

  // `intercom watch | head -1`: the watch's stdout lost its reader, so its host can show nothing more.
  it.effect("a host whose output is gone (HostOutputGone): nothing is retried or handed over after it, not even at the close, and nothing is abandoned or warned about", () => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel !== "Warn") return
      const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
      warnings.push(parts.filter((part) => typeof part === "string").join(" "))
    })
    return Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      const attempts: Array<string> = []
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(
        IntercomSession.layer().pipe(Layer.provide(Layer.mergeAll(
          Layer.succeed(IntercomClient, client.service),
          Host.layer({
            ...host.service,
            deliver: (inbound) =>
              Effect.suspend(() => {
                attempts.push(inbound.message.id)
                return Effect.fail(new HostOutputGone({ detail: "write EPIPE" }))
              })
          })
        ))),
        scope
      )
      yield* client.push(inboundMessage(B, "m1", "first"))
      yield* client.push(inboundMessage(C, "m2", "second"))
      yield* settle
      assert.deepStrictEqual(attempts, ["m1"])
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(attempts, ["m1"], "m1 is not retried, and m2 is not handed over behind it")
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(attempts, ["m1"], "no last attempt when the generation closes")
      assert.strictEqual((yield* Metric.value(inboundAbandoned)).count, 0, "nothing counted as abandoned")
      assert.deepStrictEqual(warnings, [], "no retry or abandonment warning")
      const accepted = client.receipts().filter((r) => r.detail === "accepted by receiver")
      assert.deepStrictEqual(accepted, [], "neither message was taken")
    }).pipe(
      Effect.provide(Logger.layer([capture])),
      Effect.provideService(Metric.MetricRegistry, new Map())
    )
  })

  // Known issue 18: the close interrupted `deliver` after the host had taken the message, the interruption
  // looked like a refusal, and the finalizer's last attempt handed the message to the same host again.
  it.effect("a generation that closes while the host is taking a message waits for it, and the host gets it once", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B]
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      // The host takes the message at once, then finishes its own work before `deliver` returns.
      const finishing = yield* Deferred.make<void>()
      const took = yield* Deferred.make<void>()
      const scope = yield* Scope.make()
      yield* Layer.buildWithScope(
        IntercomSession.layer().pipe(Layer.provide(Layer.mergeAll(
          Layer.succeed(IntercomClient, client.service),
          Host.layer({
            ...host.service,
            deliver: (inbound) =>
              Effect.andThen(host.service.deliver(inbound), Effect.andThen(Deferred.succeed(took, undefined), Deferred.await(finishing)))
          })
        ))),
        scope
      )
      yield* client.push(inboundMessage(B, "m1", "first"))
      yield* Deferred.await(took)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
      yield* settle
      assert.isUndefined(closing.pollUnsafe(), "the close waits for the hand-off in progress")
      yield* Deferred.succeed(finishing, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(host.attempts, ["m1"])
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m1"])
      const accepted = client.receipts().filter((r) => r.detail === "accepted by receiver").map((r) => r.messageId)
      assert.deepStrictEqual(accepted, ["m1"])
    }))
})
