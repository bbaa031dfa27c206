/**
 * A message the host's journal could not checkpoint (C-DLV-14) is confirmed
 * to the broker only once the host took it. Until then the session's memory
 * is its only copy, so a generation that ends first — a pi session that
 * closes while its access is already refused, a journal on a full disk —
 * must leave it unconfirmed, for the broker to give the session's next client.
 *
 * A real `IntercomClient` (`confirmWhenHandled`, as the session runtimes run
 * it) on the in-memory network, under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Queue, Scope } from "effect"
import { IntercomClient, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import * as path from "node:path"
import * as HandledLog from "../../src/session/HandledLog.ts"
import { Host, HostOutputGone, type HostService, type JournalRecord } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { message, tempDir } from "../support/broker.ts"
import { memoryNetwork, settle } from "../support/memory.ts"
import { settleWithin } from "../support/steps.ts"
import { makeMemoryClient, memoryClientOptions } from "../client/support.ts"
import { makeRecordingHost, type RecordingHost } from "./support.ts"

const A_ID = "aaaaaaaa-7777-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-7777-4000-8000-00000000000b"

const identity = { name: "bob", cwd: "/work", model: "test-model" }

/** How many steps a wait may take when fibers started outside any step are still at work (`settleWithin`). */
const STEPS = 10

/** A session generation of `client` over `host` in a Scope of its own; `close` ends it. */
const generation = (client: IntercomClientService, host: HostService) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Layer.buildWithScope(
      IntercomSession.layer().pipe(
        Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client), Host.layer(host)))
      ),
      scope
    )
    return { close: Scope.close(scope, Exit.void) }
  })

/** `host` with a journal whose every checkpoint fails, as a closed pi session's does. */
const unsaved = (host: RecordingHost): HostService => ({
  ...host.service,
  journal: {
    checkpoint: () => Effect.fail("the pi session of this intercom generation has ended"),
    undelivered: Effect.succeed([])
  }
})

/** A broker, alice, and bob's first client (connected under `host`'s generation). */
const world = (host: HostService) =>
  Effect.gen(function*() {
    const network = yield* memoryNetwork()
    yield* network.startBroker({ idleExit: null })
    const alice = yield* network.session({ sessionId: A_ID, name: "alice" })
    const bob = yield* makeMemoryClient(memoryClientOptions(network, B_ID, "bob", { confirmWhenHandled: true }))
    const one = yield* generation(bob.client, host)
    yield* settle(bob.client.connect)
    /** bob's next process: a new client of the same session, under a host that takes everything. */
    const next = Effect.gen(function*() {
      const later = yield* makeMemoryClient(memoryClientOptions(network, B_ID, "bob", { confirmWhenHandled: true }))
      const taking = yield* makeRecordingHost(identity)
      yield* generation(later.client, taking.service)
      yield* settle(later.client.connect)
      yield* settle(later.client.list)
      return (yield* Queue.clear(taking.inbox)).map((inbound) => inbound.message.id)
    })
    return { alice, bob, one, next }
  })

describe("a message the journal could not checkpoint is confirmed only once the host took it", () => {
  it.effect("one the host never took before its generation ended reaches the session's next client", () =>
    Effect.gen(function*() {
      const refusing = yield* makeRecordingHost(identity)
      refusing.failDeliveries = Number.MAX_SAFE_INTEGER
      const { alice, bob, one, next } = yield* world(unsaved(refusing))
      const sent = message("read while the pi session closed")
      yield* alice.client.send({ type: "send", to: "bob", message: sent })
      // Two round trips on bob: the message was read, checkpointed (and refused), and handed over.
      yield* settle(bob.client.list)
      yield* settle(bob.client.list)
      assert.deepStrictEqual(refusing.attempts, [sent.id], "test setup: the host refused it once")
      yield* settle(one.close)
      assert.deepStrictEqual(refusing.attempts, [sent.id, sent.id], "test setup: the last attempt was refused too")
      yield* bob.close

      assert.deepStrictEqual(yield* next, [sent.id])
    }))

  // `intercom watch`'s host: a handled log and no journal of its own. Its log saves nothing, so a message whose
  // line its stdout could not take (`watch | head -1`) must come to the next watch of the name.
  it.effect("a host with only a handled log saves nothing: what it did not take because its output was gone reaches the next client", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir("ei-unsaved-"), "bob.handled.jsonl")
      const recording = yield* makeRecordingHost(identity)
      const attempts: Array<string> = []
      const host = HandledLog.withHandledLog({
        ...recording.service,
        deliver: (inbound) =>
          Effect.suspend(() => {
            attempts.push(inbound.message.id)
            return Effect.fail(new HostOutputGone({ detail: "write EPIPE" }))
          })
      }, HandledLog.make(file))
      const { alice, bob, one, next } = yield* world(host)
      const sent = message("its line met a closed stdout")
      yield* alice.client.send({ type: "send", to: "bob", message: sent })
      yield* settle(bob.client.list)
      yield* settle(bob.client.list)
      assert.deepStrictEqual(attempts, [sent.id], "test setup: the host could not take it")
      yield* settle(one.close)
      yield* bob.close

      assert.deepStrictEqual(yield* next, [sent.id])
      assert.deepStrictEqual(yield* HandledLog.make(file).handled, [], "not logged as handled")
    }))

  it.effect("one the host took is confirmed: the next client does not get it again", () =>
    Effect.gen(function*() {
      const taking = yield* makeRecordingHost(identity)
      const { alice, bob, next } = yield* world(unsaved(taking))
      const sent = message("taken without a checkpoint")
      yield* alice.client.send({ type: "send", to: "bob", message: sent })
      yield* settle(bob.client.list)
      yield* settle(bob.client.list)
      assert.deepStrictEqual((yield* Queue.clear(taking.inbox)).map((inbound) => inbound.message.id), [sent.id])
      // A round trip after the hand-over carries the confirmation before bob's process ends.
      yield* settle(bob.client.list)
      yield* bob.close

      assert.deepStrictEqual(yield* next, [])
    }))

  it.effect("one the closing generation's host took in its last attempt is confirmed: the next client does not get it again", () =>
    Effect.gen(function*() {
      const once = yield* makeRecordingHost(identity)
      once.failDeliveries = 1
      // No journal: nothing saves it before the host has it.
      const { alice, bob, one, next } = yield* world(once.service)
      const sent = message("refused once, then taken as the generation closed")
      yield* alice.client.send({ type: "send", to: "bob", message: sent })
      yield* settle(bob.client.list)
      yield* settle(bob.client.list)
      assert.deepStrictEqual(once.attempts, [sent.id], "test setup: the host refused it once")
      yield* settle(one.close)
      assert.deepStrictEqual((yield* Queue.clear(once.inbox)).map((inbound) => inbound.message.id), [sent.id])
      yield* bob.close

      assert.deepStrictEqual(yield* next, [], "handed to the host once")
    }))

  it.effect("a message read after one the journal could not save is not saved ahead of it: the next generation gets both in the order they were read", () =>
    Effect.gen(function*() {
      // A journal whose first checkpoint fails (a full disk, say) and whose later ones land.
      const saved: Array<JournalRecord> = []
      let failures = 1
      const journal = {
        checkpoint: (record: JournalRecord) =>
          failures-- > 0 ? Effect.fail("disk full") : Effect.sync(() => void saved.push(record)),
        undelivered: Effect.sync(() => [...saved])
      }
      const refusing = yield* makeRecordingHost(identity)
      refusing.failDeliveries = Number.MAX_SAFE_INTEGER
      const { alice, bob, one } = yield* world({ ...refusing.service, journal })
      const sent = [message("first: its checkpoint failed"), message("second")]
      for (const m of sent) yield* alice.client.send({ type: "send", to: "bob", message: m })
      yield* settle(bob.client.list)
      yield* settle(bob.client.list)
      yield* settle(one.close)
      assert.deepStrictEqual(refusing.attempts, [sent[0]?.id, sent[0]?.id, sent[1]?.id], "test setup: every attempt was refused")

      // The next generation, same client and journal, under a host that takes everything.
      const taking = yield* makeRecordingHost(identity)
      yield* generation(bob.client, { ...taking.service, journal })
      yield* settleWithin(STEPS, bob.client.list)
      assert.deepStrictEqual((yield* Queue.clear(taking.inbox)).map((inbound) => inbound.message.id), sent.map((m) => m.id))
    }))

  it.effect("with one client across generations, what the ended generation's host never took reaches the next generation's, in order", () =>
    Effect.gen(function*() {
      const refusing = yield* makeRecordingHost(identity)
      refusing.failDeliveries = Number.MAX_SAFE_INTEGER
      // No journal at all: nothing saves a message before the host has it.
      const { alice, bob, one } = yield* world(refusing.service)
      const sent = [message("first"), message("second")]
      for (const m of sent) yield* alice.client.send({ type: "send", to: "bob", message: m })
      yield* settle(bob.client.list)
      yield* settle(bob.client.list)
      yield* settle(one.close)
      assert.deepStrictEqual(refusing.attempts, [sent[0]?.id, sent[0]?.id, sent[1]?.id], "test setup: every attempt was refused")

      const taking = yield* makeRecordingHost(identity)
      yield* generation(bob.client, taking.service)
      // The new generation's fibers started outside any step.
      yield* settleWithin(STEPS, bob.client.list)
      assert.deepStrictEqual((yield* Queue.clear(taking.inbox)).map((inbound) => inbound.message.id), sent.map((m) => m.id))
    }))
})

