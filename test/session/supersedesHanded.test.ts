/**
 * A message the host took already — restored from the journal and taken as the generation started, or taken by an
 * earlier process (the agent's history holds it) — whose sender superseded it while no process of this client read
 * the control: the broker then gives the superseding message alone, still naming it in `supersedes`, whichever
 * client instance registers (test/broker/supersede-unconfirmed-return). That message is the session's only sign, and
 * it withdraws the taken one as a control about a taken message would: its ask closed, the journal told
 * (`withdrawn`, `waiting` false: pi marks one still in its queue), its sender answered `superseded` — once, also
 * when the real control comes after it, and not for a message restored already withdrawn. A `supersedes` naming a
 * message this session never handled withdraws nothing, nor does one naming an id whose message here the broker
 * received after the superseding one (a newer message under a reused id). Fake client, TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Queue } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { type HandledMessage, Host, type JournalRecord } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { B, C, type FakeClient, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle } from "./support.ts"

const HOUR = 60 * 60 * 1000

/** m2, checkpointed by the last process, which ended before it confirmed it to the broker. */
const restored: JournalRecord = {
  from: C,
  message: { id: "m2", timestamp: HOUR, brokerReceivedAt: HOUR, content: { text: "old instructions" } },
  receivedAt: HOUR
}

/** m3, which its sender sent to replace m2 once the last process was gone: the broker received it later. */
const superseding = inboundMessage(C, "m3", "new instructions", { brokerReceivedAt: 2 * HOUR, supersedes: "m2" })

/** A session whose journal restores `undelivered` and whose agent's history holds `handled`; the host takes all. */
const restart = (undelivered: ReadonlyArray<JournalRecord>, handled: ReadonlyArray<HandledMessage> = []) =>
  Effect.gen(function*() {
    const withdrawals: Array<string> = []
    yield* TestClock.adjust(2 * HOUR)
    const client = yield* makeFakeClient(SELF.id)
    client.sessions = [SELF, B, C]
    const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
    const service = {
      ...host.service,
      journal: {
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed(undelivered),
        handled: Effect.succeed(handled),
        withdrawn: (_from: string, messageId: string, action: string, waiting: boolean) =>
          Effect.sync(() => void withdrawals.push(`${messageId} ${action}${waiting ? "" : " taken"}`))
      }
    }
    const session = yield* Layer.build(
      IntercomSession.layer().pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(service)))
      )
    ).pipe(Effect.map((context) => Context.get(context, IntercomSession)))
    yield* drain
    return { client, host, session, withdrawals }
  })

/** Lets the hand-off retry until the host took everything. */
const drain = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) {
    yield* TestClock.adjust(200)
    yield* settle
  }
})

const supersededReceipts = (client: FakeClient, messageId: string) =>
  client.posts.filter((post) =>
    post._tag === "Receipt" && post.receipt.messageId === messageId && post.receipt.status === "superseded"
  ).length

describe("supersedes naming a message the host took already", () => {
  it.effect("restored and taken before the superseding message came: the journal and its sender are told", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart([restored])
      const old = yield* Queue.take(host.inbox)
      assert.notInclude(old.text, "Withdrawn", "setup: m2 was handed over before m3 came")
      yield* client.push(superseding)
      yield* drain
      const replacement = yield* Queue.take(host.inbox)
      assert.strictEqual(replacement.message.id, "m3")
      assert.notStrictEqual(replacement.intent, "passive", "the superseding m3 is live")
      assert.deepStrictEqual(
        { withdrawals, superseded: supersededReceipts(client, "m2") },
        { withdrawals: ["m2 supersede taken"], superseded: 1 },
        "the host was not told the taken m2 was superseded / its sender not answered once"
      )
    }))

  it.effect("taken by an earlier process (the agent's history holds it): the journal and its sender are told", () =>
    Effect.gen(function*() {
      const { client, withdrawals } = yield* restart([], [{ fromId: C.id, messageId: "m2", receivedAt: 2 * HOUR - 1000 }])
      yield* client.push(superseding)
      yield* drain
      assert.deepStrictEqual(
        { withdrawals, superseded: supersededReceipts(client, "m2") },
        { withdrawals: ["m2 supersede taken"], superseded: 1 },
        "the host was not told m2, taken before the restart, was superseded"
      )
    }))

  it.effect("a restored ask taken before the superseding message came: no longer pending", () =>
    Effect.gen(function*() {
      const { client, session } = yield* restart([{
        from: C,
        // Received a moment before the restart: an ask received an hour ago has expired.
        message: { ...restored.message, brokerReceivedAt: 2 * HOUR - 1000, expectsReply: true },
        receivedAt: 2 * HOUR - 1000
      }])
      const before = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(before.asks.map((ask) => ask.message.id), ["m2"], "setup: the taken ask is pending")
      yield* client.push(superseding)
      yield* drain
      const after = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(after.asks.map((ask) => ask.message.id), [], "the superseded ask m2 is still owed")
    }))

  it.effect("the real control read after the superseding message: answered and saved once", () =>
    Effect.gen(function*() {
      const { client, withdrawals } = yield* restart([restored])
      yield* client.push(superseding)
      yield* drain
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m2", action: "supersede", timestamp: 2 * HOUR } })
      yield* drain
      assert.deepStrictEqual(
        { withdrawals, superseded: supersededReceipts(client, "m2") },
        { withdrawals: ["m2 supersede taken"], superseded: 1 },
        "the control after m3 withdrew the taken m2 a second time"
      )
    }))

  it.effect("restored already withdrawn and taken so: not answered or saved again", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart([{ ...restored, withdrawn: "supersede" }])
      assert.include((yield* Queue.take(host.inbox)).text, "Withdrawn", "setup: m2 handed over withdrawn")
      yield* client.push(superseding)
      yield* drain
      assert.deepStrictEqual(
        { withdrawals, superseded: supersededReceipts(client, "m2") },
        { withdrawals: [], superseded: 0 },
        "m2, restored withdrawn, was withdrawn again"
      )
    }))

  it.effect("a new message under the id of one restored withdrawn, taken, then superseded: it is withdrawn", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart([{ ...restored, withdrawn: "supersede" }])
      yield* Queue.take(host.inbox)
      // Past the de-duplication window (an hour), a message under the reused id m2 is a new one.
      yield* TestClock.adjust(2 * HOUR)
      yield* client.push(inboundMessage(C, "m2", "reused id", { brokerReceivedAt: 4 * HOUR }))
      yield* drain
      assert.notInclude((yield* Queue.take(host.inbox)).text, "Withdrawn", "setup: the new m2 is live")
      yield* client.push(inboundMessage(C, "m4", "newer", { brokerReceivedAt: 4 * HOUR + 1000, supersedes: "m2" }))
      yield* drain
      assert.deepStrictEqual(
        { withdrawals, superseded: supersededReceipts(client, "m2") },
        { withdrawals: ["m2 supersede taken"], superseded: 1 },
        "the new m2 was taken for the one restored withdrawn, and left live"
      )
    }))

  it.effect("a restored message under the id that the broker received after the superseding one: left live", () =>
    Effect.gen(function*() {
      // The m2 restored is a newer one under the reused id: the broker received it after m3, which named the old m2.
      const { client, withdrawals } = yield* restart([{
        ...restored,
        message: { ...restored.message, brokerReceivedAt: 2 * HOUR + 500 }
      }])
      yield* client.push(superseding)
      yield* drain
      assert.deepStrictEqual({ withdrawals, superseded: supersededReceipts(client, "m2") }, { withdrawals: [], superseded: 0 })
    }))

  it.effect("naming a message this session never handled: nothing is withdrawn or answered", () =>
    Effect.gen(function*() {
      const { client, withdrawals } = yield* restart([])
      yield* client.push(superseding)
      yield* drain
      assert.deepStrictEqual({ withdrawals, superseded: supersededReceipts(client, "m2") }, { withdrawals: [], superseded: 0 })
    }))
})
