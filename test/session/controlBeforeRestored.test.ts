/**
 * A NEW message restored from the host's journal after a restart has no read number (`InboundContext.read` is
 * never journaled), so the read number cannot tell it from an OLD message its sender sent under the same id and
 * cancelled. The broker can: it stamps the control (`MessageControl.timestamp`) and the message
 * (`brokerReceivedAt`) on its one clock, and a control stamped before it received the message is an earlier
 * message's (review revbi BI2). The old message's cancel that the broker gives this client instance again at its
 * registration (KeptControls) therefore does not withdraw the restored new message — neither when the session's
 * control fiber reads it while the message waits in the hand-off (`HostHandoff.withdraw`), nor when the client
 * recorded it before the generation restored the message (`IntercomClient.withdrawal`, read by `handOver`).
 * Fake client, TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { JournalRecord } from "../../src/session/Host.ts"
import { C, type FakeClient, restoredSession, settle } from "./support.ts"

const HOUR = 60 * 60 * 1000

/** The new m-1, which the broker received 2 h after the old one; checkpointed by the last process. */
const restored: JournalRecord = {
  from: C,
  message: { id: "m-1", timestamp: 2 * HOUR, brokerReceivedAt: 2 * HOUR, content: { text: "an unrelated new task" } },
  receivedAt: 2 * HOUR
}

/** The OLD m-1's cancel, stamped by the broker long before it received the new m-1. */
const oldCancel = (client: FakeClient) =>
  client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })

/**
 * Starts a session whose journal restores `restored`, its host refusing the first `refused` deliveries (the host is
 * not ready at once: the restored message waits in the hand-off); `before` runs first. `withdrawals`: the withdrawals
 * the journal was told of.
 */
const restart = (before: (client: FakeClient) => Effect.Effect<void>, refused = 5) =>
  restoredSession([restored], { refused, before })

/** Lets the hand-off retry until the host takes the message; returns what it took. */
const handedOver = (host: Effect.Success<ReturnType<typeof restart>>["host"]) =>
  Effect.gen(function*() {
    for (let i = 0; i < 10; i++) {
      yield* TestClock.adjust(200)
      yield* settle
    }
    const handed = yield* Queue.take(host.inbox)
    assert.strictEqual(handed.message.content.text, "an unrelated new task", "setup: the restored m-1 was handed over")
    return handed
  })

describe("an old control of a reused id and a new message restored under it", () => {
  it.effect("read by the control fiber while the restored message waits: the message is handed over live", () =>
    Effect.gen(function*() {
      const { client, host } = yield* restart(() => Effect.void)
      yield* oldCancel(client)
      yield* settle
      const handed = yield* handedOver(host)
      assert.notInclude(handed.text, "Withdrawn", "the restored new m-1 was handed over withdrawn")
      assert.notStrictEqual(handed.intent, "passive", "the restored new m-1 was handed over passive")
    }))

  it.effect("recorded by the client before the generation restored the message: the message is handed over live", () =>
    Effect.gen(function*() {
      const { host } = yield* restart(oldCancel)
      const handed = yield* handedOver(host)
      assert.notInclude(handed.text, "Withdrawn", "the restored new m-1 was handed over withdrawn")
      assert.notStrictEqual(handed.intent, "passive", "the restored new m-1 was handed over passive")
    }))

  it.effect("read once the host took the restored message: neither the journal nor its sender is told", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart(() => Effect.void, 0)
      const handed = yield* handedOver(host)
      assert.notInclude(handed.text, "Withdrawn", "setup: handed over live")
      yield* oldCancel(client)
      yield* settle
      // pi's journal knows a message by (sender, id): told, it would mark the new m-1 withdrawn in pi's queue and in
      // what a later restart restores.
      assert.deepStrictEqual(withdrawals, [], "the journal was told the new m-1 was withdrawn")
      const receipts = client.posts.flatMap((post) =>
        post._tag === "Receipt" && post.receipt.messageId === "m-1" ? [post.receipt.status] : []
      )
      assert.notInclude(receipts, "cancellation_requested", "the old cancel was answered under the new m-1's id")
    }))

  it.effect("a cancel the broker stamped in the millisecond it received the restored message still withdraws it", () =>
    Effect.gen(function*() {
      const { client, host } = yield* restart(() => Effect.void)
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 2 * HOUR } })
      yield* settle
      const handed = yield* handedOver(host)
      assert.include(handed.text, "Withdrawn", "the restored m-1's own cancel did not withdraw it")
      assert.strictEqual(handed.intent, "passive")
    }))
})
