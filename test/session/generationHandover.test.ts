/**
 * Known issue 15: a session generation that closes while its inbound fiber is
 * in the middle of a message must leave that message, and every one read after
 * it, to the next generation of the same client; and a message the old
 * generation already handed to its host is not handed over again.
 *
 * A real `IntercomClient` on the in-memory network, under TestClock. In the
 * first two tests the first generation's host journal never finishes a
 * checkpoint, so the inbound fiber is caught mid-message when the generation
 * closes (a host's checkpoint may wait: `InboundJournal.checkpoint` is an
 * Effect). The third needs no journal: a fiber yields to others every
 * `Scheduler.MaxOpsBeforeYield` operations (2048 by default, a few here so
 * that three messages are enough), and a close that comes in at such a yield
 * interrupts the inbound fiber wherever it was; run at several budgets, it
 * also catches the close inside the host's `deliver` (known issue 18).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Queue, Scheduler, Scope } from "effect"
import { IntercomClient, type IntercomClientService } from "../../src/client/IntercomClient.ts"
import { Host, type HostService, type Inbound } from "../../src/session/Host.ts"
import { makeJournalKeeper } from "../../src/session/InboundJournal.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { message } from "../support/broker.ts"
import { memoryNetwork, settle } from "../support/memory.ts"
import { settleWithin } from "../support/steps.ts"
import { makeMemoryClient, memoryClientOptions } from "../client/support.ts"
import { info, makeRecordingHost } from "./support.ts"

const A_ID = "aaaaaaaa-3333-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-3333-4000-8000-00000000000b"

const identity = { name: "bob", cwd: "/work", model: "test-model" }

/** How many steps a wait of the yield probe may take (a few are needed, see `settleWithin`). */
const STEPS = 10

/** The yield probe's bound: at the budgets it runs, generation 1 has taken all three by about 100 yields. */
const MAX_YIELDS = 400

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

/** A broker on the in-memory network and bob's client of it (not yet connected). */
const bobOnBroker = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  yield* world.startBroker({ idleExit: null })
  const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
  return { world, bob }
})

describe("known issue 15: a generation closed mid-message leaves it to the next one", () => {
  it.effect("the message being handled and those read after it reach the next generation's host, once", () =>
    Effect.gen(function*() {
      const { world, bob } = yield* bobOnBroker

      // Generation 1: its host's checkpoint of the first message never ends.
      const first = yield* makeRecordingHost(identity)
      const checkpointing = yield* Deferred.make<string>()
      const stuck: HostService = {
        ...first.service,
        journal: {
          checkpoint: (record) =>
            Effect.andThen(Deferred.succeed(checkpointing, record.message.id), Effect.never),
          undelivered: Effect.succeed([])
        }
      }
      const one = yield* generation(bob, stuck)
      yield* settle(bob.connect)

      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const sent = [message("one"), message("two"), message("three")]
      for (const m of sent) yield* alice.client.send({ type: "send", to: "bob", message: m })
      assert.strictEqual(yield* Deferred.await(checkpointing), sent[0]?.id)
      // Two round trips on bob: every message sent before them has been read by its client (and confirmed).
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* settle(one.close)
      assert.deepStrictEqual(first.attempts, [], "test setup: generation 1 handed nothing over")

      // Generation 2 of the same client, with a host that takes everything; its fibers start outside any step.
      const second = yield* makeRecordingHost(identity)
      yield* generation(bob, second.service)
      yield* settleWithin(STEPS, bob.list)
      const taken = yield* Queue.clear(second.inbox)
      assert.deepStrictEqual(taken.map((inbound) => inbound.message.id), sent.map((m) => m.id))
    }))

  it.effect("a message the closing generation's host took is not handed to the next generation", () =>
    Effect.gen(function*() {
      const { world, bob } = yield* bobOnBroker

      // Generation 1 takes the first message; its checkpoint of the second never ends.
      const first = yield* makeRecordingHost(identity)
      const checkpointing = yield* Deferred.make<string>()
      let checkpoints = 0
      const stuckOnSecond: HostService = {
        ...first.service,
        journal: {
          checkpoint: (record) =>
            ++checkpoints === 1
              ? Effect.void
              : Effect.andThen(Deferred.succeed(checkpointing, record.message.id), Effect.never),
          undelivered: Effect.succeed([])
        }
      }
      const one = yield* generation(bob, stuckOnSecond)
      yield* settle(bob.connect)

      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      const sent = [message("one"), message("two")]
      for (const m of sent) yield* alice.client.send({ type: "send", to: "bob", message: m })
      assert.strictEqual(yield* Deferred.await(checkpointing), sent[1]?.id)
      yield* settle(bob.list)
      yield* settle(bob.list)
      yield* settle(one.close)
      assert.deepStrictEqual((yield* Queue.clear(first.inbox)).map((inbound) => inbound.message.id), [sent[0]?.id])

      const second = yield* makeRecordingHost(identity)
      yield* generation(bob, second.service)
      // The new generation's fibers started outside any step; the host's confirmation of the kept message is theirs.
      yield* settleWithin(STEPS, bob.list)
      const taken = yield* Queue.clear(second.inbox)
      assert.deepStrictEqual(taken.map((inbound) => inbound.message.id), [sent[1]?.id])
    }))

  // Each budget puts the yields at other points of the same work. Without known issue 18's fix (at b197b1f),
  // 8, 11 and 20 hand a message twice to generation 1's host; so does 4 once the client keeps receipts.
  it.effect.each([4, 5, 6, 7, 8, 11, 20])(
    "wherever a cooperative yield lets the close in, each message reaches exactly one generation's host, once (MaxOpsBeforeYield %i)",
    (budget) =>
      Effect.gen(function*() {
        const outcomes: Array<string> = []
        // The fibers yield every few operations, so the inbound fiber is caught at many points of a message
        // (between two messages, mid-admission, inside or right after the hand-off), one point per number of
        // yields, until a few closes in a row came after generation 1 had taken all three: later ones find the same.
        for (let yields = 0, late = 0; late < 3 && yields < MAX_YIELDS; yields++) {
          const got = yield* Effect.scoped(Effect.gen(function*() {
            const { world, bob } = yield* bobOnBroker
            const first = yield* makeRecordingHost(identity)
            const one = yield* generation(bob, first.service)
            yield* settle(bob.connect)
            const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
            const sent = [message("one"), message("two"), message("three")]
            // The sends are under way, not done, when the yields begin.
            const sending = yield* Effect.forkChild(
              Effect.forEach(sent, (m) => alice.client.send({ type: "send", to: "bob", message: m }))
            )
            for (let i = 0; i < yields; i++) yield* Effect.yieldNow
            yield* one.close
            const second = yield* makeRecordingHost(identity)
            yield* generation(bob, second.service)
            // The fibers the yields let run go on outside any step: each wait may take a few more.
            yield* settleWithin(STEPS, Fiber.join(sending), "alice's sends")
            yield* settleWithin(STEPS, bob.list)
            yield* settleWithin(STEPS, bob.list)
            const index = (inbound: Inbound) => sent.findIndex((m) => m.id === inbound.message.id)
            const before = (yield* Queue.clear(first.inbox)).map(index)
            const after = (yield* Queue.clear(second.inbox)).map(index)
            return `${before.join(",")}|${after.join(",")}`
          }).pipe(Effect.provideService(Scheduler.MaxOpsBeforeYield, budget)))
          outcomes.push(got)
          late = got === "0,1,2|" ? late + 1 : 0
        }
        // "before|after": the messages (by their place in `sent`) generation 1's host took, then generation 2's.
        const wrong = outcomes.flatMap((got, yields) =>
          got.split("|").filter((part) => part !== "").join(",") === "0,1,2" ? [] : [`${yields} yields: ${got}`]
        )
        assert.isTrue(outcomes.some((got) => got.startsWith("0|")), "test setup: some closes came mid-chunk")
        assert.deepStrictEqual(wrong, [])
      }),
    60_000
  )

  // A guard of what `Inbound.ts` relies on: the checkpoint logs a failed checkpoint and goes on, but an
  // interruption inside its interruptible window is not recovered from, so the message is not handed over.
  it.effect("an interrupted checkpoint is an interruption, not a failed checkpoint to go on from", () =>
    Effect.gen(function*() {
      const keeper = makeJournalKeeper({ checkpoint: () => Effect.never, undelivered: Effect.succeed([]) })
      const steps: Array<string> = []
      const handling = yield* Effect.forkChild(
        Effect.uninterruptibleMask((interruptible) =>
          Effect.andThen(
            interruptible(keeper.checkpoint({ from: info(A_ID), message: message("x"), receivedAt: 0 })),
            Effect.sync(() => void steps.push("went on to hand it over"))
          )
        ),
        { startImmediately: true }
      )
      yield* Effect.yieldNow
      yield* Fiber.interrupt(handling)
      assert.deepStrictEqual(steps, [])
    }))
})
