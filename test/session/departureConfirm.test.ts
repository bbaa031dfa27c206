/**
 * Acting on a peer's `Left` (C-ASK-9, C-RPL-10) without holding up the
 * presence stream, and telling an ask the departed incarnation had from one
 * made to the incarnation that rejoined.
 *
 * - The `list` round trip that confirms a waited-on peer is gone runs per
 *   waiting ask, off the presence fiber: a stalled one leaves the departures
 *   read after it to be acted on meanwhile, and the session's close ends it.
 * - Departures waiting for a host that takes no message are kept once per
 *   peer, and at most `DEPARTURES_LIMIT` peers: past it the oldest is acted
 *   on at once, so nothing grows without bound.
 * - An ask sent before the asked peer's `session_left` was read fails with
 *   `ReplyPeerDisconnected` even when the peer is back by the time the
 *   session acts on the departure: the question went to the incarnation that
 *   left. (An ask sent after the rejoin keeps waiting: rejoinedPeer.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import { deliveryError } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { DEPARTURES_LIMIT } from "../../src/session/Departures.ts"
import { B, C, type FakeClient, inboundMessage, info, settle, slowJournalSession, slowJournalSessionFor, withPeers } from "./support.ts"

/** `slowJournalSession` after a message from C was read: a `Left` read after it waits for that save. */
const slowJournal = Effect.gen(function*() {
  const { client, gate, session } = yield* slowJournalSession
  yield* session.intercom({ action: "status" })
  yield* client.push(inboundMessage(C, "c-1", "fyi"))
  yield* settle
  return { client, gate, session }
})

/** `slowJournalSession` waiting on an ask to B, then reading a message from C (see `slowJournal`). */
const slowJournalAsking = Effect.gen(function*() {
  const { client, gate, session } = yield* slowJournalSession
  const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
  yield* settle
  assert.strictEqual(client.sends.length, 1, "the question went to B")
  yield* client.push(inboundMessage(C, "c-1", "fyi"))
  yield* settle
  return { asking, client, gate }
})

/**
 * Refuses the first send as `E_TARGET_REBOUND` after B left and `rejoined` (B
 * restarted, or another session took its name) joined: the `Left` and `Joined`
 * are read before the refusal, so before the question is resent. Every other
 * send is delivered.
 */
const reboundAfterRestart = (client: FakeClient, rejoined: SessionInfo): void => {
  let first = true
  client.onSend = (request) =>
    Effect.gen(function*() {
      if (!first) return { messageId: request.message.id, delivery: "socket_delivered" as const }
      first = false
      client.sessions = [...client.sessions.filter((s) => s.id !== B.id), rejoined]
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      yield* client.presence({ _tag: "Joined", session: rejoined })
      return yield* Effect.fail(deliveryError({
        messageId: request.message.id,
        code: DeliveryCode.TargetRebound,
        reason: Reason.targetRebound,
        retryable: true
      }))
    })
}

describe("a departure's confirmation (C-ASK-9, C-RPL-10)", () => {
  it.effect("a list round trip that stalls does not hold up the departures read after it", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, session } = yield* Scope.provide(withPeers(), scope)
      const listInterrupted = yield* Deferred.make<void>()
      yield* client.push(inboundMessage(C, "ask-c", "still there?", { expectsReply: true }))
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 1, "C's ask is pending")
      // A dead connection: the round trip for B's departure never comes back.
      client.onList = Effect.onInterrupt(Effect.never, () => Deferred.succeed(listInterrupted, undefined))
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      yield* settle
      yield* client.presence({ _tag: "Left", sessionId: C.id })
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 0, "C's departure was acted on while B's round trip waits")
      assert.isUndefined(asking.pollUnsafe(), "the ask on B waits for its round trip")
      // The session's close ends the round trip with it.
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.await(listInterrupted)
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
    }))

  it.effect("an ask sent before the peer left fails though the peer rejoined before the session acted", () =>
    Effect.gen(function*() {
      const { asking, client, gate } = yield* slowJournalAsking
      // B restarted after it got the question: its Left and Joined are read while the
      // session still saves C's message, so it acts on the Left with B listed again.
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      yield* client.presence({ _tag: "Joined", session: B })
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask ended without waiting for its timeout")
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], [`Reply peer disconnected before answering: ${B.id}`, true])
    }))

  it.effect("a question resent after E_TARGET_REBOUND to the rejoined peer keeps its wait", () =>
    Effect.gen(function*() {
      const { client, gate, session } = yield* slowJournal
      const rejoined = { ...B, endpointEpoch: "epoch-new" }
      reboundAfterRestart(client, rejoined)
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      assert.deepStrictEqual(client.sends.map((s) => s.targetEpoch), [B.endpointEpoch, "epoch-new"])
      // The session acts on B's Left (read before the resend) with the rejoined B listed.
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the rejoined B has the question: the ask still waits")
      yield* client.push(inboundMessage(rejoined, "ans-1", "8080", { replyTo: client.sends[1]?.message.id ?? "" }))
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], [`**Reply from B:**\n8080`, false])
    }))

  it.effect("a question resent after E_TARGET_REBOUND to another session of the name waits on that one", () =>
    Effect.gen(function*() {
      const { client, gate, session } = yield* slowJournal
      const other = info("d0d0d0d0-1111-2222", { name: "B", endpointEpoch: "epoch-other" })
      reboundAfterRestart(client, other)
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      assert.deepStrictEqual(client.sends.map((s) => s.targetId), [B.id, other.id])
      // The old B's departure is not the departure of the session that has the question.
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the ask waits on the session it resent the question to")
      yield* client.presence({ _tag: "Left", sessionId: other.id })
      yield* settle
      yield* settle
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], [`Reply peer disconnected before answering: ${other.id}`, true])
    }))

  it.effect("departures noted while the host takes no message are bounded: past the limit the oldest is acted on", () =>
    Effect.gen(function*() {
      // Only B's message waits: C's ask is recorded, then nothing read after B's message is handled.
      const { client, gate, session } = yield* slowJournalSessionFor((id) => id === "b-1")
      yield* session.intercom({ action: "status" })
      yield* client.push(inboundMessage(C, "ask-c", "still there?", { expectsReply: true }))
      yield* settle
      yield* client.push(inboundMessage(B, "b-1", "fyi"))
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 1, "C's ask is pending")
      // The first departure is taken up at once, and waits for B's message with C's noted behind it.
      yield* client.presence({ _tag: "Left", sessionId: "gone-first" })
      yield* settle
      yield* client.presence({ _tag: "Left", sessionId: C.id })
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 1, "C's departure waits for B's message")
      for (let i = 0; i < DEPARTURES_LIMIT; i++) yield* client.presence({ _tag: "Left", sessionId: `gone-${i}` })
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 0, "C's departure, the oldest noted, was acted on")
      yield* Deferred.succeed(gate, undefined)
    }))
})
