/**
 * An ask its asker withdrew (a P73 `cancel` or `supersede` control: its
 * asker cancelled or superseded the message): closed, not answered.
 *
 * - The current turn's ask withdrawn: the turn keeps it, and a `reply`
 *   without `to` in that turn is refused, saying the asker withdrew it; it is
 *   never taken as the answer to another asker's single pending ask.
 * - A queued ask withdrawn before its turn: named by `replyTo`, the same.
 * - A withdrawn ask that is not the turn's, named by `to` alone (in another
 *   asker's turn or out of any), or by `replyTo` and `to` while another
 *   asker's open ask uses its id: the same, never "No pending ask".
 * - A control from another sender naming the same message id leaves the ask
 *   open.
 * - An ask answered by a staged answer, then withdrawn: when the broker later
 *   replaces that answer (`superseded` receipt) it is not pending again.
 *
 * Over the fake client (which delivers every send) on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import type { MessageControl, SessionInfo } from "../../src/protocol/frames.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import type { FakeClient } from "./support.ts"
import { B, C, inboundMessage, settle, withPeers } from "./support.ts"

/** What `reply` says for B's ask `askId` that B withdrew. */
const withdrawnText = (askId: string) =>
  `The ask ${askId} from B was withdrawn by B: B no longer waits for an answer, so this reply was not sent. ` +
  "If B still needs it, send it to B as a plain message (a send without replyTo)."

/** `from` withdraws (or replaces) its message `messageId`. */
const withdraw = (client: FakeClient, from: SessionInfo, messageId: string, action: MessageControl["action"]) =>
  Effect.andThen(client.control({ _tag: "Control", from, control: { messageId, action, timestamp: 0 } }), settle)

describe("an ask its asker withdrew", () => {
  for (const action of ["cancel", "supersede"] as const) {
    it.effect(`the current turn's ask (${action}): a reply in that turn is refused as withdrawn, and never answers another asker's ask`, () =>
      Effect.gen(function*() {
        const { client, host, session } = yield* withPeers({ askTimeoutMs: 60_000 })
          yield* client.push(inboundMessage(B, "q-b", "B asks", { expectsReply: true }))
        yield* Queue.take(host.inbox)
        yield* session.beginTurn()
        yield* client.push(inboundMessage(C, "q-c", "C asks", { expectsReply: true }))
        yield* settle
        yield* withdraw(client, B, "q-b", action)
        const refused = yield* Effect.flip(session.reply({ message: "for B" }))
        assert.instanceOf(refused, AskNoLongerOpen)
        assert.strictEqual(refused.message, withdrawnText("q-b"))
        assert.deepStrictEqual(client.sends, [], "nothing was sent: not to B, not to C as the answer to C's ask")
        const pending = yield* Effect.orDie(session.pending)
        assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), ["q-c"], "C's ask is still owed")
      }))
  }

  it.effect("a pending ask withdrawn before its turn: a reply naming it is refused as withdrawn", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-b", "B asks", { expectsReply: true }))
      yield* settle
      yield* withdraw(client, B, "q-b", "cancel")
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks, [])
      const refused = yield* Effect.flip(session.reply({ replyTo: "q-b", message: "late" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.strictEqual(refused.message, withdrawnText("q-b"))
      assert.deepStrictEqual(client.sends, [])
    }))

  it.effect("a withdrawn ask that is not the turn's: `to` naming its asker is refused as withdrawn, in another asker's turn and out of any", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-b", "B asks", { expectsReply: true }))
      yield* settle
      yield* withdraw(client, B, "q-b", "cancel")
      const outOfTurn = yield* Effect.flip(session.reply({ to: "B", message: "late" }))
      assert.instanceOf(outOfTurn, AskNoLongerOpen)
      assert.strictEqual(outOfTurn.message, withdrawnText("q-b"))
      yield* Queue.take(host.inbox)
      yield* client.push(inboundMessage(C, "q-c", "C asks", { expectsReply: true }))
      const fromC = yield* Queue.take(host.inbox)
      yield* session.beginTurn({ from: fromC.from.id, messageId: fromC.message.id })
      const inCsTurn = yield* Effect.flip(session.reply({ to: "B", message: "late" }))
      assert.instanceOf(inCsTurn, AskNoLongerOpen)
      assert.strictEqual(inCsTurn.message, withdrawnText("q-b"))
      assert.deepStrictEqual(client.sends, [], "nothing was sent")
    }))

  it.effect("`replyTo` and `to` naming a withdrawn ask whose id another asker's open ask uses: refused as withdrawn", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-1", "B asks", { expectsReply: true }))
      yield* client.push(inboundMessage(C, "q-1", "C asks", { expectsReply: true }))
      yield* settle
      yield* withdraw(client, B, "q-1", "supersede")
      const refused = yield* Effect.flip(session.reply({ to: "B", replyTo: "q-1", message: "late" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.strictEqual(refused.message, withdrawnText("q-1"))
      assert.deepStrictEqual(client.sends, [], "nothing was sent, to B or to C")
      const pending = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(pending.asks.map((ask) => ask.from.id), [C.id], "C's ask is still owed")
    }))

  it.effect("a control from another sender naming the same message id leaves the ask open", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-1", "B asks", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      yield* withdraw(client, C, "q-1", "cancel")
      yield* Effect.orDie(session.reply({ message: "for B" }))
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [[B.id, "q-1"]])
    }))

  it.effect("an ask answered by a staged answer, then withdrawn, is not pending again when that answer is replaced", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      client.onSend = (request) =>
        Effect.succeed({ messageId: request.message.id, delivery: "staged", threadId: request.threadId ?? "", deliverAt: 1500 })
      yield* client.push(inboundMessage(B, "q-b", "B asks", { expectsReply: true }))
      yield* settle
      const replied = yield* Effect.orDie(session.reply({ replyTo: "q-b", message: "8080" }))
      yield* withdraw(client, B, "q-b", "cancel")
      yield* client.control({
        _tag: "Receipt",
        from: B,
        receipt: { messageId: replied.messageId, status: "superseded", timestamp: 0, detail: "Replaced" }
      })
      yield* settle
      const pending = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(pending.asks.map((ask) => ask.message.id), [])
    }))
})
