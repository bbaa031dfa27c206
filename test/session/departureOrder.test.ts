/**
 * A peer's departure never overtakes what it sent before it (C-ASK-9,
 * C-RPL-10). The client reads messages and presence events into separate
 * streams, each drained by its own fiber, so a consumer may see a `Left`
 * before the message read ahead of it; and a broker may write a departure
 * ahead of output queued before it (ours did before it wrote departures
 * after the queued output; parked output still can be). A child that answers
 * its parent and exits at once must still answer the ask (the same over the
 * broker core: integration.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Queue } from "effect"
import { B, inboundMessage, settle, withPeers } from "./support.ts"

describe("a departure after a message (C-ASK-9, C-RPL-10)", () => {
  it.effect("a reply then its sender's Left: the ask returns the reply, and the host is handed nothing", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      // Both read before either fiber runs, as from one socket read.
      yield* client.push(inboundMessage(B, "reply-1", "8080", { replyTo: questionId }))
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      const result = yield* Fiber.join(asking)
      yield* settle
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\n8080", false])
      assert.strictEqual(yield* Queue.size(host.inbox), 0, "the reply was not handed over as a message")
    }))

  it.effect("an ask then its asker's Left: the ask is retired, not left pending (C-RPL-10)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "ask-1", "still there?", { expectsReply: true }))
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 0)
      const pending = yield* session.intercom({ action: "pending" })
      assert.strictEqual(pending.text, "No unresolved inbound asks.")
    }))

  it.effect("a Left with no message before it still ends the wait on that peer (C-ASK-9)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], [`Reply peer disconnected before answering: ${B.id}`, true])
    }))
})
