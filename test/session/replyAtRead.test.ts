/**
 * C-ORD-32: a reply to the live ask resolves it as the client reads it, not
 * when the message fiber reaches it behind earlier messages whose host
 * journal checkpoints are slow. The slow checkpoint is the fault modelled (an
 * `Effect.sleep` on the TestClock), never a barrier: the tests never advance
 * the clock to let the reply through. The reply is the ask's: it is never
 * handed to the host, and gets its receipts once; a message that is not the
 * waiter's reply still waits its turn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Fiber, Layer, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, receiptsFor as receiptsOf, SELF, settle } from "./support.ts"

/** How long the host journal takes to checkpoint each message. */
const CHECKPOINT = "2 seconds"

/** A session whose host journal takes `CHECKPOINT` per message, on the TestClock; checkpointed ids in order. */
const slowCheckpointSession = Effect.gen(function*() {
  const client = yield* makeFakeClient(SELF.id)
  client.sessions = [SELF, B, C]
  const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
  const checkpointed: Array<string> = []
  const service = {
    ...host.service,
    journal: {
      checkpoint: (record: { readonly message: { readonly id: string } }) =>
        Effect.andThen(Effect.sleep(CHECKPOINT), Effect.sync(() => void checkpointed.push(record.message.id))),
      undelivered: Effect.succeed([])
    }
  }
  const context = yield* Layer.build(
    IntercomSession.layer({}).pipe(
      Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(service)))
    )
  )
  return { client, host, checkpointed, session: Context.get(context, IntercomSession) }
})

describe("C-ORD-32 a reply to the live ask resolves it as it is read", () => {
  it.effect("behind two messages whose checkpoints are slow, the reply resolves the ask at once; it is not handed to the host and is acknowledged once", () =>
    Effect.gen(function*() {
      const { client, host, checkpointed, session } = yield* slowCheckpointSession
      const asking = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* client.push(inboundMessage(C, "m2", "second"))
      yield* settle
      assert.deepStrictEqual(checkpointed, [], "m1's checkpoint holds the message fiber")
      yield* client.push(inboundMessage(B, "answer", "GET only", { replyTo: questionId }))
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask ended with no clock advance")
      const result = yield* Fiber.join(asking)
      assert.strictEqual(result.text, "**Reply from B:**\nGET only")
      assert.deepStrictEqual(checkpointed, [], "resolved with no clock advance: m1 is still checkpointing")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
      // The earlier messages still reach the host, in order; the reply never does, nor is answered again.
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      assert.deepStrictEqual(checkpointed, ["m1", "m2"], "the reply is not checkpointed")
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m1", "m2"])
      yield* TestClock.adjust("1 minute")
      assert.notInclude(host.attempts, "answer", "the reply never went to the host")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"], "one of each, in that order")
    }))

  it.effect("a message that is not the waiter's reply (another sender, another replyTo) waits its turn behind the slow one", () =>
    Effect.gen(function*() {
      const { client, host, checkpointed, session } = yield* slowCheckpointSession
      const asking = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* settle
      // From C with the question's id, and from B answering something else: neither answers the ask.
      yield* client.push(inboundMessage(C, "wrong-sender", "not yours", { replyTo: questionId }))
      yield* client.push(inboundMessage(B, "wrong-question", "old answer", { replyTo: "q-older" }))
      yield* settle
      assert.strictEqual(asking.pollUnsafe(), undefined, "the ask still waits")
      assert.deepStrictEqual(receiptsOf(client, "wrong-sender"), [], "not admitted yet: behind m1")
      assert.deepStrictEqual(receiptsOf(client, "wrong-question"), [])
      for (let i = 0; i < 3; i++) {
        yield* TestClock.adjust(CHECKPOINT)
        yield* settle
      }
      assert.deepStrictEqual(checkpointed, ["m1", "wrong-sender", "wrong-question"])
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m1", "wrong-sender", "wrong-question"])
      assert.strictEqual(asking.pollUnsafe(), undefined, "still no answer")
      yield* Fiber.interrupt(asking)
    }))

  it.effect("a copy of the reply read again after it was taken gets a duplicate receipt from the message fiber, in order, and never reaches the host", () =>
    Effect.gen(function*() {
      const { client, host, checkpointed, session } = yield* slowCheckpointSession
      const asking = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* settle
      const reply = inboundMessage(B, "answer", "GET only", { replyTo: questionId })
      yield* client.push(reply)
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask ended with no clock advance")
      assert.strictEqual((yield* Fiber.join(asking)).text, "**Reply from B:**\nGET only")
      // The broker's copy once more (say, given again after a reconnect, RecentMessages' "again").
      yield* client.pushReadFirst(reply)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"], "the copy waits behind m1")
      yield* TestClock.adjust(CHECKPOINT)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "answer"), [
        "receiver_received",
        "acknowledged: matched reply waiter",
        "acknowledged: duplicate message id suppressed"
      ])
      assert.deepStrictEqual(checkpointed, ["m1"])
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(host.attempts, ["m1"])
    }))

  it.effect("a generation that closes as soon as it took the reply still posts its receipts once; the next generation never hands the reply to its host", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      const layer = IntercomSession.layer({}).pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(host.service)))
      )
      const first = yield* Scope.make()
      const session = Context.get(yield* Layer.buildWithScope(layer, first), IntercomSession)
      const asking = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      // Read, taken, and the generation closed before its receipts fiber ran.
      yield* client.push(inboundMessage(B, "answer", "GET only", { replyTo: questionId }))
      yield* Scope.close(first, Exit.void)
      assert.strictEqual(Exit.isSuccess(yield* Fiber.await(asking)) ? "answered" : "ended", "answered", "the ask had its reply")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
      yield* Layer.build(layer)
      yield* settle
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(host.attempts, [], "the reply was the ask's: no generation hands it to a host")
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
    }))
})
