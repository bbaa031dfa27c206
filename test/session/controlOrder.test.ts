/**
 * A cancel or supersede (P73) and the message it names reach the session by
 * two streams (`IntercomClient.controls`, `IntercomClient.messages`), each
 * drained by a fiber of its own: the control may be handled before the
 * message was recorded, or by another generation of the same client.
 *
 * - A plain message cancelled before it was read, or while it was being
 *   saved: handed over passive, marked withdrawn, and no turn begins with it.
 * - A supersede handled before the message it replaces was recorded: the old
 *   one is passive, the replacement (another id) triggers its turn, whether
 *   it came after the control or before it.
 * - A message withdrawn in one generation that the next generation of the
 *   same client is handed (the host refused it until the first ended): still
 *   withdrawn there, not acted on.
 *
 * Over the fake client on the TestClock; the last over a real client of a
 * broker on the in-memory network (the sender's `cancel` reaches the
 * receiving client as the broker writes it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Layer, Queue, Scope } from "effect"
import { IntercomClient, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { MessageControl, SessionInfo } from "../../src/protocol/frames.ts"
import { Host, type HostService, type JournalRecord } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { message } from "../support/broker.ts"
import { memoryNetwork, settle as step } from "../support/memory.ts"
import { settleWithin } from "../support/steps.ts"
import { makeMemoryClient, memoryClientOptions } from "../client/support.ts"
import type { FakeClient } from "./support.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle, slowJournalSession, withPeers } from "./support.ts"

const ALICE_ID = "aaaaaaaa-3333-4000-8000-00000000000a"
const BOB_ID = "bbbbbbbb-3333-4000-8000-00000000000b"

/** `from` withdraws (or replaces, by `supersededBy`) its message `messageId`. */
const withdraw = (
  client: FakeClient,
  from: SessionInfo,
  messageId: string,
  action: MessageControl["action"],
  supersededBy?: string
) =>
  Effect.andThen(
    client.control({
      _tag: "Control",
      from,
      control: { messageId, action, timestamp: 0, ...(supersededBy === undefined ? {} : { supersededBy }) }
    }),
    settle
  )

const CANCELLED = "Withdrawn: C cancelled this message before it reached you; it needs no action and no reply."
const REPLACED = "Withdrawn: C replaced this message with a later one before it reached you; it needs no action and no reply."

describe("a control handled before the message it names", () => {
  it.effect("a plain message cancelled before it was read: handed passive, marked withdrawn, and no turn begins with it", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* withdraw(client, C, "m-1", "cancel")
      yield* client.pushReadFirst(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      const handed = yield* Queue.take(host.inbox)
      assert.strictEqual(handed.intent, "passive")
      assert.include(handed.text, CANCELLED)
      assert.isUndefined(yield* session.beginTurn(), "no turn's context")
    }))

  it.effect("a plain message cancelled while it was being saved: handed passive, marked withdrawn, and no turn begins with it", () =>
    Effect.gen(function*() {
      const { client, gate, session } = yield* slowJournalSession
      yield* client.push(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      yield* withdraw(client, C, "m-1", "cancel")
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.isUndefined(yield* session.beginTurn(), "no turn's context")
    }))

  it.effect("a supersede handled before the old message was recorded, its replacement read after: the old one passive, the replacement triggers", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* withdraw(client, C, "m-1", "supersede", "m-2")
      yield* client.pushReadFirst(inboundMessage(C, "m-1", "use branch a"))
      yield* client.push(inboundMessage(C, "m-2", "use branch b"))
      yield* settle
      const old = yield* Queue.take(host.inbox)
      const replacement = yield* Queue.take(host.inbox)
      assert.deepStrictEqual([old.message.id, old.intent], ["m-1", "passive"])
      assert.include(old.text, REPLACED)
      assert.deepStrictEqual([replacement.message.id, replacement.intent], ["m-2", "trigger"])
      assert.notInclude(replacement.text, "Withdrawn")
      assert.strictEqual((yield* session.beginTurn())?.message.id, "m-2")
    }))

  it.effect("a supersede handled after its replacement was handed over: the replacement stays the turn's", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* client.push(inboundMessage(C, "m-2", "use branch b"))
      yield* settle
      yield* withdraw(client, C, "m-1", "supersede", "m-2")
      yield* client.pushReadFirst(inboundMessage(C, "m-1", "use branch a"))
      yield* settle
      const replacement = yield* Queue.take(host.inbox)
      const old = yield* Queue.take(host.inbox)
      assert.deepStrictEqual([replacement.message.id, replacement.intent], ["m-2", "trigger"])
      assert.deepStrictEqual([old.message.id, old.intent], ["m-1", "passive"])
      assert.strictEqual((yield* session.beginTurn())?.message.id, "m-2")
    }))
})

/** Builds one session generation of `client` in a Scope of its own; closing it ends the generation. */
const generation = (client: IntercomClientService, host: HostService) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer().pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client), Host.layer(host)))
      ),
      scope
    )
    return { session: Context.get(context, IntercomSession), close: Scope.close(scope, Exit.void) }
  })

const identity = { name: "self", cwd: "/work", model: "test-model" }

describe("a control handled by an earlier generation of the same client", () => {
  it.effect("a message cancelled while the first generation's host refused it is handed to the next generation passive, marked withdrawn", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const first = yield* makeRecordingHost(identity)
      first.failDeliveries = 1000
      const one = yield* generation(client.service, first.service)
      yield* client.push(inboundMessage(C, "m-1", "please delete the branch"))
      yield* settle
      assert.deepStrictEqual(first.attempts, ["m-1"], "refused; retried later")
      yield* withdraw(client, C, "m-1", "cancel")
      yield* one.close
      const second = yield* makeRecordingHost(identity)
      const two = yield* generation(client.service, second.service)
      yield* settle
      const handed = yield* Queue.take(second.inbox)
      assert.strictEqual(handed.message.id, "m-1")
      assert.strictEqual(handed.intent, "passive")
      assert.include(handed.text, CANCELLED)
      assert.isUndefined(yield* two.session.beginTurn(), "no turn's context")
    }))

  it.effect("a message its first generation saved, then its sender replaced: restored by the next generation passive, marked withdrawn", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const saved: Array<JournalRecord> = []
      const journal = {
        checkpoint: (record: JournalRecord) => Effect.sync(() => void saved.push(record)),
        undelivered: Effect.sync(() => [...saved])
      }
      const first = yield* makeRecordingHost(identity)
      first.failDeliveries = 1000
      const one = yield* generation(client.service, { ...first.service, journal })
      yield* client.push(inboundMessage(C, "m-1", "use branch a"))
      yield* settle
      assert.deepStrictEqual(saved.map((record) => record.message.id), ["m-1"], "saved before the host refused it")
      yield* withdraw(client, C, "m-1", "supersede", "m-2")
      yield* one.close
      const second = yield* makeRecordingHost(identity)
      const two = yield* generation(client.service, { ...second.service, journal })
      yield* settle
      const handed = yield* Queue.take(second.inbox)
      assert.strictEqual(handed.message.id, "m-1")
      assert.strictEqual(handed.intent, "passive")
      assert.include(handed.text, REPLACED)
      assert.isUndefined(yield* two.session.beginTurn(), "no turn's context")
    }))

  it.effect("over a real client: a message its sender cancelled while the first generation's host refused it reaches the next generation passive", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, BOB_ID, "bob"))
      const first = yield* makeRecordingHost(identity)
      first.failDeliveries = 1000
      const one = yield* generation(bob, first.service)
      yield* step(bob.connect)
      const alice = yield* world.session({ sessionId: ALICE_ID, name: "alice" })
      const sent = message("please delete the branch")
      yield* alice.client.send({ type: "send", to: "bob", message: sent })
      yield* step(bob.list)
      assert.deepStrictEqual(first.attempts, [sent.id], "refused; retried later")
      yield* alice.client.send({ type: "cancel_message", messageId: sent.id })
      const answer = yield* step(alice.client.next(["delivered", "delivery_failed"], (frame) => frame.messageId === sent.id), "cancel answer")
      assert.strictEqual(answer.type, "delivered", "the broker sent bob the cancel")
      // Two round trips on bob: the cancel written before them has been read by its client.
      yield* step(bob.list)
      yield* step(bob.list)
      yield* step(one.close, "close")
      const second = yield* makeRecordingHost(identity)
      const two = yield* generation(bob, second.service)
      yield* settleWithin(10, bob.list)
      const taken = yield* Queue.clear(second.inbox)
      assert.deepStrictEqual(taken.map((inbound) => [inbound.message.id, inbound.intent]), [[sent.id, "passive"]])
      assert.include(taken[0]?.text ?? "", "Withdrawn: alice cancelled this message before it reached you")
      assert.isUndefined(yield* two.session.beginTurn(), "no turn's context")
    }))
})
