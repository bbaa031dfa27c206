/**
 * A withdrawal (P73) of a message the host has not taken is not forgotten
 * before the message is handed over:
 *
 * - AT1: the hand-off keeps it on the waiting message, so 1,000 controls of
 *   another sender (for ids this session never received) do not evict it:
 *   the message is still handed over passive, marked withdrawn, no turn.
 * - AT2: the journal saves it (`InboundJournal.withdrawn`), so the next
 *   generation, restoring the checkpointed message, hands it over passive and
 *   does not count its ask as pending; a journal without `withdrawn` restores
 *   the record as it was (withdrawn unknown, handed over live).
 * - AT3: a cancel read before its ask closes the ask as soon as it is
 *   recorded: queued behind a message the host refuses, it is not pending,
 *   and a reply to its asker is refused, nothing sent.
 *
 * Over the fake client on the TestClock (the hand-off's retry runs on it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import { TestClock } from "effect/testing"
import type { MessageControl, SessionInfo } from "../../src/protocol/frames.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import { type InboundJournal, type JournalRecord } from "../../src/session/Host.ts"
import { HANDOFF_RETRY_INTERVAL } from "../../src/session/HostHandoff.ts"
import type { FakeClient } from "./support.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, sessionGeneration, settle, withPeers } from "./support.ts"

/** `from` withdraws (or replaces) its message `messageId`. */
const withdraw = (client: FakeClient, from: SessionInfo, messageId: string, action: MessageControl["action"]) =>
  Effect.andThen(client.control({ _tag: "Control", from, control: { messageId, action, timestamp: 0 } }), settle)

/** The hand-off's next attempt (after a refusal) runs. */
const retry = Effect.andThen(TestClock.adjust(HANDOFF_RETRY_INTERVAL), settle)

/** A journal in memory: checkpoints in order, and the withdrawals saved (when `keepsWithdrawals`). */
const memoryJournal = (keepsWithdrawals: boolean) => {
  const saved: Array<JournalRecord> = []
  const withdrawn = new Map<string, MessageControl["action"]>()
  const key = (fromId: string, messageId: string) => `${fromId}\u0000${messageId}`
  const journal: InboundJournal = {
    checkpoint: (record) => Effect.sync(() => void saved.push(record)),
    undelivered: Effect.sync(() =>
      saved.map((record) => {
        const action = withdrawn.get(key(record.from.id, record.message.id))
        return action === undefined ? record : { ...record, withdrawn: action }
      })
    ),
    ...(keepsWithdrawals
      ? {
        withdrawn: (fromId: string, messageId: string, action: MessageControl["action"]) =>
          Effect.sync(() => void withdrawn.set(key(fromId, messageId), action))
      }
      : {})
  }
  return { saved, journal }
}

/** Generation 1 checkpoints B's ask, its host refuses it, B cancels it; generation 2 restores it. */
const restoredAfterCancel = (keepsWithdrawals: boolean) =>
  Effect.gen(function*() {
    const { journal, saved } = memoryJournal(keepsWithdrawals)
    const client = yield* makeFakeClient(SELF.id)
    client.sessions = [SELF, B, C]
    const identity = { name: "self", cwd: "/work", model: "test-model" }

    const first = yield* makeRecordingHost(identity)
    first.failDeliveries = 1_000
    const one = yield* sessionGeneration({ ...first.service, journal }, client)
    yield* client.push(inboundMessage(B, "q-1", "delete the branch?", { expectsReply: true }))
    yield* settle
    assert.deepStrictEqual(saved.map((record) => record.message.id), ["q-1"], "checkpointed")
    yield* withdraw(client, B, "q-1", "cancel")
    assert.deepStrictEqual((yield* Effect.orDie(one.session.pending)).asks, [], "closed in generation 1")
    yield* one.close

    // A new process (a new client, which never read the cancel): only the journal can say it was withdrawn.
    const next = yield* makeFakeClient(SELF.id)
    next.sessions = [SELF, B, C]
    const second = yield* makeRecordingHost(identity)
    const two = yield* sessionGeneration({ ...second.service, journal }, next)
    yield* settle
    const handed = yield* Queue.take(second.inbox)
    assert.strictEqual(handed.message.id, "q-1")
    return { handed, pending: (yield* Effect.orDie(two.session.pending)).asks }
  })

describe("a withdrawal kept until its message is handed over", () => {
  it.effect("AT1: 1,000 controls of another sender do not evict a waiting message's withdrawal: handed passive, no turn", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1
      yield* client.push(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      yield* withdraw(client, C, "m-1", "cancel")
      for (let i = 0; i < 1000; i++) {
        yield* client.control({ _tag: "Control", from: B, control: { messageId: `x-${i}`, action: "cancel", timestamp: 0 } })
      }
      yield* settle
      yield* retry
      const handed = yield* Queue.take(host.inbox)
      assert.strictEqual(handed.message.id, "m-1")
      assert.strictEqual(handed.intent, "passive", "C withdrew m-1 before the host took it")
      assert.include(handed.text, "Withdrawn:")
      assert.isUndefined(yield* session.beginTurn(), "no turn begins with a withdrawn message")
    }))

  it.effect("AT2: an ask cancelled in generation 1 and restored from the journal by generation 2 is handed passive, not pending", () =>
    Effect.gen(function*() {
      const { handed, pending } = yield* restoredAfterCancel(true)
      assert.strictEqual(handed.intent, "passive", "B withdrew q-1 before any host took it")
      assert.include(handed.text, "Withdrawn:")
      assert.deepStrictEqual(pending, [], "B's withdrawn ask is not owed")
    }))

  it.effect("AT2: a journal without withdrawn restores the cancelled ask as it was saved: live, pending", () =>
    Effect.gen(function*() {
      const { handed, pending } = yield* restoredAfterCancel(false)
      assert.strictEqual(handed.intent, "trigger")
      assert.deepStrictEqual(pending.map((ask) => ask.message.id), ["q-1"])
    }))

  it.effect("AT3: a cancel read before its ask, queued behind a refused message: not pending, a reply to its asker refused", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1_000
      // The host refuses C's earlier message: the hand-off retries it, and what follows waits.
      yield* client.push(inboundMessage(C, "m-0", "fyi"))
      yield* settle
      // B's cancel is read before B's ask (the controls are a stream of their own).
      yield* withdraw(client, B, "q-1", "cancel")
      yield* client.pushReadFirst(inboundMessage(B, "q-1", "delete the branch?", { expectsReply: true }))
      yield* settle
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks, [], "B withdrew q-1")
      const refused = yield* Effect.flip(session.reply({ to: "B", message: "yes, deleting it" }))
      assert.instanceOf(refused, AskNoLongerOpen)
      assert.deepStrictEqual(client.sends, [], "nothing is sent to B")
    }))
})
