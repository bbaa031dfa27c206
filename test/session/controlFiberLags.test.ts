/**
 * The session's control fiber is a stream of its own and may lag behind the message fiber (here: saving an
 * earlier withdrawal to a slow journal). An OLD message's cancel that the client read before a NEW message its
 * sender sent under the same id, and that this fiber handles only after the new message reached the hand-off,
 * does nothing (review revbb BB2): it does not withdraw the new message, does not close it as an ask, and
 * answers no `cancellation_requested` for its id — the control's read number (`ControlEvent` `read`) is lower
 * than the new message's, so it is an earlier message's. The client reads the cancel first, then the message,
 * as a broker's registration gives kept controls ahead of the mailbox's mail (MailDelivery hooks.registered).
 * The cancel of the message it is about, still waiting in the hand-off, is still acted on, also with a newer
 * message under its id read behind it (and test/session/controlForgottenLag.test.ts: one the record forgot). Over
 * the fake session client, on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import {
  C,
  holdControlFiber,
  inboundMessage,
  journalSession,
  retryFiveSeconds,
  settle,
  slowWithdrawalJournal
} from "./support.ts"

const HOUR = 60 * 60 * 1000

/** C's first m-1 handed over, then (2 h later) C's "other" waiting in the hand-off while its withdrawal is saved slowly. */
const lagging = Effect.gen(function*() {
  const { client, host, session } = yield* journalSession(slowWithdrawalJournal("other"))
  yield* client.push(inboundMessage(C, "m-1", "first task"))
  yield* settle
  assert.strictEqual((yield* Queue.take(host.inbox)).intent, "trigger", "setup: the first m-1 was live")
  // Past the broker's replay record and the admission window (as withdrawalIdReused.test.ts).
  yield* TestClock.adjust(2 * HOUR)
  // The host refuses hand-offs for a while: C's "other" waits in the hand-off, and so does what comes behind it;
  // the client reads C's cancel of "other": the control fiber withdraws it and saves that (slowly).
  yield* holdControlFiber({ client, host })
  /** Until the host took both: "other", then what came behind it. */
  const drain = Effect.gen(function*() {
    yield* retryFiveSeconds
    assert.strictEqual((yield* Queue.take(host.inbox)).message.id, "other", "setup: other first")
    return yield* Queue.take(host.inbox)
  })
  /** The receipts this session answered for message `id`, by status. */
  const receipts = (id: string) =>
    client.posts.flatMap((post) => post._tag === "Receipt" && post.receipt.messageId === id ? [post.receipt.status] : [])
  return { client, drain, receipts, session }
})

/** The old m-1's cancel (kept for this client's return, say), then a new m-1 under the reused id. */
const oldCancelThenNew = (client: Effect.Success<typeof lagging>["client"], extra: { readonly expectsReply?: boolean }) =>
  Effect.gen(function*() {
    yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })
    yield* client.push(inboundMessage(C, "m-1", "an unrelated new task", extra))
    yield* settle
    assert.isUndefined(yield* client.service.withdrawal(C.id, "m-1"), "setup: the client's record forgot the old cancel")
  })

describe("an old cancel the control fiber handles after a new message under its id (review revbb BB2)", () => {
  it.effect("does not withdraw the new message, nor answer a cancellation_requested for its id", () =>
    Effect.gen(function*() {
      const { client, drain, receipts } = yield* lagging
      yield* oldCancelThenNew(client, {})
      const second = yield* drain
      assert.strictEqual(second.message.content.text, "an unrelated new task", "setup: the new m-1 was handed over")
      assert.strictEqual(second.intent, "trigger", "the new m-1 was handed over withdrawn by the old m-1's cancel")
      assert.notInclude(second.text, "Withdrawn")
      assert.notInclude(receipts("m-1"), "cancellation_requested", "the old cancel was answered under the new m-1's id")
      assert.include(receipts("other"), "cancellation_requested", "setup: a cancel that applies is answered")
    }))

  it.effect("still withdraws the old message it is about while that one waits, a newer one under its id read behind it", () =>
    Effect.gen(function*() {
      const { client, drain } = yield* lagging
      // The old m-2 waits behind "other"; its cancel is read, then a newer m-2 (joined to the one still waiting).
      yield* client.push(inboundMessage(C, "m-2", "the old m-2"))
      yield* settle
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-2", action: "cancel", timestamp: 0 } })
      yield* client.push(inboundMessage(C, "m-2", "a newer m-2"))
      yield* settle
      assert.isTrue(yield* client.service.readSince(C.id, "m-2", 3), "setup: a newer m-2 was read after the cancel (marked 3: three messages read before it)")
      const second = yield* drain
      assert.strictEqual(second.message.content.text, "the old m-2", "setup: the old m-2 came next")
      assert.strictEqual(second.intent, "passive", "the old m-2, cancelled while it waited, was handed over live")
      assert.include(second.text, "Withdrawn")
    }))

  it.effect("does not close a new ask under that id", () =>
    Effect.gen(function*() {
      const { client, drain, session } = yield* lagging
      yield* oldCancelThenNew(client, { expectsReply: true })
      const second = yield* drain
      assert.strictEqual(second.message.content.text, "an unrelated new task", "setup: the new m-1 was handed over")
      assert.strictEqual(second.intent, "trigger", "the new ask was handed over withdrawn")
      const asks = (yield* Effect.orDie(session.pending)).asks
      assert.deepStrictEqual(asks.map((ask) => ask.message.id), ["m-1"], "the new ask was closed by the old m-1's cancel")
    }))
})
