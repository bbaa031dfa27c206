/**
 * A message its sender withdrew (a P73 `cancel` or `supersede` control)
 * before the host took it — the host refused it and the hand-off retries it
 * (C-DLV-12) — is handed over `passive`: stored in history, starting and
 * steering no turn, its text saying it was withdrawn and needs no action.
 *
 * - A plain message cancelled so: passive, marked, and no turn begins with it.
 * - An ask replaced so: passive, marked, without the reply hint; not pending.
 * - A control from another sender naming the same message id changes nothing.
 * - A cancel read while its ask is still being saved (the control overtook
 *   the message it names: two streams): the ask is closed as withdrawn once
 *   it is recorded, not left pending.
 *
 * Over the fake client on the TestClock (the hand-off's retry runs on it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { MessageControl, SessionInfo } from "../../src/protocol/frames.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import { HANDOFF_RETRY_INTERVAL } from "../../src/session/HostHandoff.ts"
import { REPLY_HINT } from "../../src/session/render.ts"
import type { FakeClient } from "./support.ts"
import { B, C, inboundMessage, settle, slowJournalSession, withPeers } from "./support.ts"

/** `from` withdraws (or replaces) its message `messageId`. */
const withdraw = (client: FakeClient, from: SessionInfo, messageId: string, action: MessageControl["action"]) =>
  Effect.andThen(client.control({ _tag: "Control", from, control: { messageId, action, timestamp: 0 } }), settle)

/** The hand-off's next attempt (after a refusal) runs. */
const retry = Effect.andThen(TestClock.adjust(HANDOFF_RETRY_INTERVAL), settle)

describe("a message withdrawn before the host took it", () => {
  it.effect("a plain message cancelled while the host refused it: handed passive, marked withdrawn, and no turn begins with it", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1
      yield* client.push(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      assert.deepStrictEqual(host.attempts, ["m-1"], "refused once; retried later")
      yield* withdraw(client, C, "m-1", "cancel")
      yield* retry
      const handed = yield* Queue.take(host.inbox)
      assert.strictEqual(handed.intent, "passive")
      assert.include(handed.text, "Withdrawn: C cancelled this message before it reached you; it needs no action and no reply.")
      assert.include(handed.text, "please delete the branch", "still shown, for the record")
      assert.isUndefined(yield* session.beginTurn(), "no turn's context")
    }))

  it.effect("an ask replaced while the host refused it: handed passive, marked withdrawn, without the reply hint; not pending", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1
      yield* client.push(inboundMessage(B, "q-1", "ready?", { expectsReply: true }))
      yield* settle
      yield* withdraw(client, B, "q-1", "supersede")
      yield* retry
      const handed = yield* Queue.take(host.inbox)
      assert.strictEqual(handed.intent, "passive")
      assert.include(handed.text, "Withdrawn: B replaced this message with a later one before it reached you; it needs no action and no reply.")
      assert.notInclude(handed.text, REPLY_HINT)
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks, [])
    }))

  it.effect("a control from another sender naming the same message id changes nothing: the message triggers its turn", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1
      yield* client.push(inboundMessage(C, "m-1", "fyi"))
      yield* settle
      yield* withdraw(client, B, "m-1", "cancel")
      yield* retry
      const handed = yield* Queue.take(host.inbox)
      assert.strictEqual(handed.intent, "trigger")
      assert.notInclude(handed.text, "Withdrawn")
      assert.strictEqual((yield* session.beginTurn())?.message.id, "m-1")
    }))

  it.effect("a cancel handled before its ask was recorded (the ask's save was slow): the ask is closed as withdrawn, not pending", () =>
    Effect.gen(function*() {
      const { client, gate, session } = yield* slowJournalSession
      yield* client.push(inboundMessage(B, "q-1", "ready?", { expectsReply: true }))
      yield* settle
      // The control stream is read by its own fiber: the cancel is handled while the ask waits for its save.
      yield* withdraw(client, B, "q-1", "cancel")
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks, [])
      const refused = yield* Effect.flip(session.reply({ replyTo: "q-1", message: "late" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.strictEqual(refused.withdrawn, true)
      assert.deepStrictEqual(client.sends, [])
    }))
})
