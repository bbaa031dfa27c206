/**
 * A message restored from the host's journal whose sender superseded it while no process of this client was
 * there to read the control (helper sim7022): the broker does not queue the superseded copy again and may not give
 * the control again (KeptControls keeps it only for the instance that read the message), so the superseding
 * message itself — `supersedes` naming the restored one — is what tells this generation. A restored message still
 * waiting in the hand-off is then handed over withdrawn, as the control would have it (one the host took before the
 * superseding message arrived: test/session/supersedesHanded.test.ts).
 * Fake client, TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import type { JournalRecord } from "../../src/session/Host.ts"
import { C, drainHandOff, type FakeClient, inboundMessage, restoredSession, settle } from "./support.ts"

const HOUR = 60 * 60 * 1000

/** m2, checkpointed by the last process, which ended before it confirmed it to the broker. */
const restored: JournalRecord = {
  from: C,
  message: { id: "m2", timestamp: HOUR, brokerReceivedAt: HOUR, content: { text: "old instructions" } },
  receivedAt: HOUR
}

/** m3, which its sender sent to replace m2 once the last process was gone: the broker received it later. */
const superseding = inboundMessage(C, "m3", "new instructions", { brokerReceivedAt: 2 * HOUR, supersedes: "m2" })

/** Starts a session whose journal restores `record` (m2), its host refusing the first `refused` deliveries. */
const restart = (refused: number, record: JournalRecord = restored) => restoredSession([record], { refused })


/** The next message the host took. */
const next = (host: Effect.Success<ReturnType<typeof restart>>["host"]) => Queue.take(host.inbox)

const receiptsOf = (client: FakeClient, messageId: string) =>
  client.posts.flatMap((post) =>
    post._tag === "Receipt" && post.receipt.messageId === messageId ? [post.receipt.status] : []
  )

describe("a restored message its sender superseded while no process of the client read the control", () => {
  it.effect("still waiting in the hand-off when the superseding message arrives: handed over withdrawn", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart(5)
      yield* client.push(superseding)
      yield* settle
      yield* drainHandOff
      const old = yield* next(host)
      const replacement = yield* next(host)
      assert.strictEqual(old.message.id, "m2", "setup: the restored m2 comes first")
      assert.include(old.text, "Withdrawn", "the restored m2 was handed over live after m3 superseded it")
      assert.strictEqual(old.intent, "passive", "the restored m2 could start a turn")
      assert.strictEqual(replacement.message.id, "m3")
      assert.notStrictEqual(replacement.intent, "passive", "the superseding m3 is live")
      assert.deepStrictEqual(withdrawals, ["m2 supersede"], "the journal was not told m2 was withdrawn")
      assert.include(receiptsOf(client, "m2"), "superseded", "m2's sender was not told it was seen superseded")
    }))

  it.effect("the control read as well (before m3, as the broker sends them): m2 is withdrawn and answered once", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart(5)
      yield* client.control({
        _tag: "Control",
        from: C,
        control: { messageId: "m2", action: "supersede", timestamp: 2 * HOUR }
      })
      yield* client.push(superseding)
      yield* settle
      yield* drainHandOff
      const old = yield* next(host)
      assert.include(old.text, "Withdrawn")
      assert.deepStrictEqual(withdrawals, ["m2 supersede"], "m2's withdrawal was saved twice")
      assert.deepStrictEqual(
        receiptsOf(client, "m2").filter((status) => status === "superseded"),
        ["superseded"],
        "m2 was answered superseded twice"
      )
    }))


  it.effect("a restored ask still waiting when the superseding message arrives: no longer pending", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* restart(5, {
        from: C,
        // Received a moment before the restart: an ask received an hour ago has expired.
        message: { ...restored.message, brokerReceivedAt: 2 * HOUR - 1000, expectsReply: true },
        receivedAt: 2 * HOUR - 1000
      })
      const before = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(before.asks.map((ask) => ask.message.id), ["m2"], "setup: the restored ask is pending")
      yield* client.push(superseding)
      yield* settle
      const after = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(after.asks.map((ask) => ask.message.id), [], "the superseded ask m2 is still owed")
      yield* drainHandOff
      assert.strictEqual((yield* next(host)).intent, "passive", "the superseded ask m2 was handed over live")
    }))
})
