/**
 * Review revat probes (merge turnc, cb0aa372): a message its sender withdrew
 * before the host took it must be handed over passive, marked withdrawn.
 *
 * - AT1: the `withdrawals` map keeps the newest 1,000 controls of ALL senders;
 *   controls from anyone else (for ids this session never received) evict the
 *   withdrawal of a message still waiting for the host, which is then handed
 *   over live (`trigger`) and its turn starts with it.
 * - AT2: `withdrawals` is per generation (runInbound); a message the first
 *   generation checkpointed and the host never took is restored by the next
 *   generation from the journal and handed over live, its ask pending again.
 *
 * Each test FAILS on main at cb0aa372.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../src/client/IntercomClient.ts"
import type { MessageControl, SessionInfo } from "../src/protocol/frames.ts"
import { Host, type HostService, type JournalRecord } from "../src/session/Host.ts"
import { HANDOFF_RETRY_INTERVAL } from "../src/session/HostHandoff.ts"
import { IntercomSession } from "../src/session/IntercomSession.ts"
import type { FakeClient } from "./session/support.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle, withPeers } from "./session/support.ts"

const withdraw = (client: FakeClient, from: SessionInfo, messageId: string, action: MessageControl["action"]) =>
  Effect.andThen(client.control({ _tag: "Control", from, control: { messageId, action, timestamp: 0 } }), settle)

const retry = Effect.andThen(TestClock.adjust(HANDOFF_RETRY_INTERVAL), settle)

describe("review revat: withdrawals", () => {
  it.effect("AT1: 1,000 controls from another sender evict C's withdrawal: the cancelled message is handed live", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      host.failDeliveries = 1
      yield* client.push(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      yield* withdraw(client, C, "m-1", "cancel")
      // B cancels 1,000 ids this session never received (or long took): no message of B's waits.
      for (let i = 0; i < 1000; i++) {
        yield* client.control({ _tag: "Control", from: B, control: { messageId: `x-${i}`, action: "cancel", timestamp: 0 } })
      }
      yield* settle
      yield* retry
      const handed = yield* Queue.take(host.inbox)
      assert.strictEqual(handed.intent, "passive", "C withdrew m-1 before the host took it")
      assert.include(handed.text, "Withdrawn:")
      assert.isUndefined(yield* session.beginTurn(), "no turn begins with a withdrawn message")
    }))

  it.effect("AT2: a message withdrawn in generation 1 and restored by generation 2 from the journal is handed live", () =>
    Effect.gen(function*() {
      const saved: Array<JournalRecord> = []
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const identity = { name: "self", cwd: "/work", model: "test-model" }
      const build = (host: HostService) =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          const context = yield* Layer.buildWithScope(
            IntercomSession.layer({}).pipe(
              Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(host)))
            ),
            scope
          )
          return { session: Context.get(context, IntercomSession), close: Scope.close(scope, Exit.void) }
        })
      const journal = {
        checkpoint: (record: JournalRecord) => Effect.sync(() => void saved.push(record)),
        undelivered: Effect.sync(() => [...saved])
      }

      // Generation 1: the host refuses (a pi host not ready, say); B cancels its ask; the generation ends.
      const first = yield* makeRecordingHost(identity)
      first.failDeliveries = 1_000
      const one = yield* build({ ...first.service, journal })
      yield* client.push(inboundMessage(B, "q-1", "delete the branch?", { expectsReply: true }))
      yield* settle
      assert.deepStrictEqual(saved.map((record) => record.message.id), ["q-1"], "checkpointed")
      yield* withdraw(client, B, "q-1", "cancel")
      assert.deepStrictEqual((yield* Effect.orDie(one.session.pending)).asks, [], "closed in generation 1")
      yield* one.close

      // Generation 2 restores the undelivered message.
      const second = yield* makeRecordingHost(identity)
      const two = yield* build({ ...second.service, journal })
      yield* settle
      const handed = yield* Queue.take(second.inbox)
      assert.strictEqual(handed.message.id, "q-1")
      assert.strictEqual(handed.intent, "passive", "B withdrew q-1 before any host took it")
      assert.deepStrictEqual((yield* Effect.orDie(two.session.pending)).asks, [], "B's withdrawn ask is not owed")
    }))
})
