/**
 * The asker's settling round trip at its own deadline (`ask-expiry-v1`,
 * `awaitAnswer` in Ask.ts) when its connection drops before the answer:
 * full sessions on the in-memory broker under TestClock, the asker's inbound
 * frames held back at will and its connection cut at will (the frames held
 * then are lost with it, never confirmed to the broker).
 *
 * - A reply the broker accepted (its sender told `delivered`), unread when
 *   the connection drops during the settle, is given back on the rejoin and
 *   answers the ask: the client settles again on the new connection.
 * - A reply to a question whose acknowledgement was never read, the question
 *   not written again at the reconnect (its timeout up since its first send),
 *   is given back at the `register` and answers the ask: the client settles
 *   on the new connection (Ask.ts `settleUnwritten`; sim seed 28741).
 * - With no reply, the wait ends with `ReplyTimeout` once the new connection
 *   is live (the notice given back, or that connection's settle).
 * - A broker restarted without the ask (memory mode) gives nothing back:
 *   the wait ends once the new connection is live (its state epoch).
 * - A connection that does not come back within the rejoin grace ends the
 *   wait with `ReplyTimeout` then.
 * - The wait for the next connection is the rejoin grace's, not the client's
 *   `connectTimeoutMs`: a reply given back on a connection live later than
 *   that, within the grace, answers the ask.
 * - A client closed while its asker's settle waits for the next connection
 *   ends that wait at once, not at the reconnect's next attempt.
 * - A blocking `contact_supervisor` waits the same way (`awaitAnswer`), and
 *   settles the same way when its question is not written again
 *   (`settleUnwritten`).
 *
 * Size note: about 420 lines, one dialer and the cases of one concept (the
 * settle across a lost connection).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Queue, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { BrokerStateLost, ReplyTimeout } from "../../src/session/errors.ts"
import { ConnectionClosed, type Connection } from "../../src/transport/Connection.ts"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { readChildBridge } from "../../src/session/supervisorBridge.ts"
import { authorizeChild } from "../../src/session/SupervisorLaunch.ts"
import { layeredMember } from "../support/layeredMember.ts"
import { settle, step, withMemoryBroker } from "../support/memory.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const TIMEOUT = 10_000

/**
 * A dialer over `world` whose connections hand on what they read only while
 * the gate is open (`hold`), and which the test can `cut`: the live
 * connection is destroyed and the batch it holds is lost with it. `settled`
 * completes once a `list` marked `settle: true` was written; `holdAtSend`
 * closes the gate as the next `send` (or `supervisor_send`) frame is written; `refuse` makes
 * every later dial fail (`refused` counts them) until `allow`; `loseSends`
 * drops the `send` frames written from then on, before the broker reads
 * them, until the next dial (`sendLost` completes at the first).
 */
const cuttableDialer = (world: { readonly dial: Effect.Effect<Connection, never, Scope.Scope> }) => {
  let gate: Deferred.Deferred<void> | undefined
  let refusing = false
  let refused = 0
  let cutLive: Effect.Effect<void> = Effect.void
  let losing = false
  const settled = Deferred.makeUnsafe<void>()
  const sendLost = Deferred.makeUnsafe<void>()
  let holdingAtSend = false
  const watch = (frames: ReadonlyArray<OutFrame>) => {
    if (frames.some((frame) => frameText(frame).includes(`"settle":true`))) Deferred.doneUnsafe(settled, Exit.void)
    if (holdingAtSend && frames.some((frame) => /^\{"type":"(supervisor_)?send"/.test(frameText(frame)))) {
      holdingAtSend = false
      gate = Deferred.makeUnsafe<void>()
    }
  }
  /** `frames` less the `send` frames while `loseSends` holds. */
  const kept = (frames: ReadonlyArray<OutFrame>): ReadonlyArray<OutFrame> => {
    if (!losing) return frames
    const left = frames.filter((frame) => !frameText(frame).startsWith(`{"type":"send"`))
    if (left.length < frames.length) Deferred.doneUnsafe(sendLost, Exit.void)
    return left
  }
  const dial = (_socketPath: string) =>
    refusing
      ? Effect.suspend(() => {
        refused++
        return Effect.fail(new IntercomNotConnected({ reason: "the test refuses connections" }))
      })
      : Effect.map(world.dial, (connection): Connection => {
        losing = false
        let dead = false
        cutLive = Effect.suspend(() => {
          dead = true
          const held = gate
          gate = undefined
          return Effect.andThen(connection.destroy, held === undefined ? Effect.void : Deferred.succeed(held, undefined))
        })
        const handOn = (frames: ReadonlyArray<string>) =>
          Effect.suspend(() => dead ? Effect.fail(new ConnectionClosed({ clean: false })) : Effect.succeed(frames))
        return {
          id: connection.id,
          trustedLocal: connection.trustedLocal,
          read: Effect.flatMap(connection.read, (frames) => {
            const held = gate
            return held === undefined ? handOn(frames) : Effect.andThen(Deferred.await(held), handOn(frames))
          }),
          writeAll: (frames) => Effect.andThen(Effect.sync(() => watch(frames)), connection.writeAll(kept(frames))),
          write: (frames) => {
            watch(frames)
            return connection.write(kept(frames))
          },
          unfinishedWrite: () => connection.unfinishedWrite(),
          readProgress: () => connection.readProgress(),
          readPending: () => connection.readPending(),
          end: connection.end,
          destroy: connection.destroy
        }
      })
  return {
    dial,
    settled: Deferred.await(settled),
    hold: Effect.sync(() => {
      gate = Deferred.makeUnsafe<void>()
    }),
    holdAtSend: Effect.sync(() => {
      holdingAtSend = true
    }),
    cut: Effect.suspend(() => cutLive),
    refuse: Effect.sync(() => {
      refusing = true
    }),
    allow: Effect.sync(() => {
      refusing = false
    }),
    refused: () => refused,
    loseSends: Effect.sync(() => {
      losing = true
    }),
    sendLost: Deferred.await(sendLost)
  }
}

/** The error an ended fiber failed with, if it failed. */
const failureOf = <A, E>(exit: Exit.Exit<A, E> | undefined) =>
  exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

describe("ask-expiry-v1: a settling round trip whose connection drops", () => {
  it.effect("a reply the broker accepted, lost unread with the connection during the settle, answers the ask after the rejoin", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial } })
      const answerer = yield* world.session("answerer")
      assert.include((yield* asker.client.status).features, "ask-expiry-v1")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      // The asker's outbox at the broker backs up: nothing more reaches it for now.
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT - 1_000)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      // The asker's deadline: its settling list goes out; the connection drops before the answer is read.
      yield* TestClock.adjust(1_000)
      yield* cuttable.settled
      yield* cuttable.cut
      assert.isUndefined(asking.pollUnsafe(), "the ask ended when its settling round trip lost its connection")
      // The client reconnects (its first retry after a second) and the broker gives back the unread reply.
      yield* TestClock.adjust("2 seconds")
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag, "Replied")
      assert.include(answer.text, "just in time")
    }))

  it.effect("a question lost unread with its connection and written again after the reconnect keeps the timeout from its first send", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial } })
      const answerer = yield* world.session("answerer")
      // The question never reaches the broker on this connection, which then drops unanswered.
      yield* cuttable.loseSends
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* cuttable.sendLost
      yield* cuttable.cut
      // The client reconnects (its first retry after a second) and writes the question again first thing.
      yield* TestClock.adjust("1 second")
      const question = yield* Queue.take(answerer.inbound)
      assert.strictEqual(question.message.content.text, "well?")
      // The first send's deadline: the broker's notice, or the asker's settle, ends the wait there.
      yield* TestClock.adjust(TIMEOUT - 1_000)
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits past the timeout from its first send")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("a reply to a question whose acknowledgement was lost unread answers the ask after a reconnect past its timeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial } })
      const answerer = yield* world.session("answerer")
      // The broker takes the question; its acknowledgement, and all after it, stay unread on this connection.
      yield* cuttable.holdAtSend
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: 2_000 }))
      yield* Queue.take(answerer.inbound)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      // Past the timeout from the first send, the connection drops with the reply unread.
      yield* TestClock.adjust("2100 millis")
      yield* cuttable.cut
      // The reconnect (its first retry after a second) does not write the question again, its timeout up;
      // the broker gives the reply back behind `registered`, and the asker settles on that connection.
      yield* TestClock.adjust("2 seconds")
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits after the new connection settled")
      assert.isTrue(Exit.isSuccess(exit), `the ask ended without its reply: ${String(failureOf(exit))}`)
      if (Exit.isSuccess(exit)) assert.include(exit.value.text, "just in time")
    }))

  it.effect("with no reply, the wait ends with ReplyTimeout once the new connection is live, not at the rejoin grace", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial } })
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT)
      yield* cuttable.settled
      yield* cuttable.cut
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before a connection came back")
      // The reconnect (its first retry after a second): the notice given back, or the settle's answer, ends it.
      yield* TestClock.adjust("2 seconds")
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits after the new connection settled")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("a broker restarted without the ask (memory mode) ends the wait once the new connection is live", () =>
    Effect.gen(function*() {
      const first = yield* memoryWorld()
      const second = yield* memoryWorld()
      // The asker reaches the first broker until it is cut, then the second: a broker restarted in memory mode.
      let restarted = false
      const cuttable = cuttableDialer(first)
      const dial = (socketPath: string) => restarted ? second.dial : cuttable.dial(socketPath)
      const asker = yield* first.session("asker", { client: { dial } })
      const answerer = yield* first.session("answerer")
      // The answerer is on the new broker too, so no reconnect check ends the wait for its absence.
      yield* second.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT)
      yield* cuttable.settled
      restarted = true
      yield* cuttable.cut
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before a connection came back")
      yield* TestClock.adjust("2 seconds")
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits after the new connection is live")
      // The new broker holds another state (state-epoch-v1): the wait ends on that at adoption, before any settle.
      assert.instanceOf(failureOf(exit), BrokerStateLost)
    }))

  it.effect("a connection that does not come back within the rejoin grace ends the wait then, with ReplyTimeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial } })
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT)
      yield* cuttable.settled
      yield* cuttable.refuse
      yield* cuttable.cut
      // The rejoin grace (10 s) from the drop: the wait holds until then.
      yield* TestClock.adjust(asker.client.rejoinGraceMs - 1)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before the rejoin grace was over")
      yield* TestClock.adjust(1)
      // Its `cancel_ask` waits at most a second for a connection.
      yield* TestClock.adjust("1 second")
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits past the rejoin grace with no connection")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("a reply given back on a connection live after connectTimeoutMs but within the rejoin grace answers the ask", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      // A connect timeout shorter than the rejoin grace: the settle's wait for the next connection is the grace's.
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial, connectTimeoutMs: 1_500 } })
      const answerer = yield* world.session("answerer")
      assert.strictEqual(asker.client.rejoinGraceMs, 10_000)
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT - 1_000)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      yield* TestClock.adjust(1_000)
      yield* cuttable.settled
      yield* cuttable.refuse
      yield* cuttable.cut
      // The first reconnect (a second after the drop) is refused; the next, a back-off later, gets through.
      yield* TestClock.adjust(1_200)
      assert.strictEqual(cuttable.refused(), 1)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before a connection came back")
      yield* cuttable.allow
      yield* TestClock.adjust("4 seconds")
      assert.isTrue((yield* asker.client.status).connected, "the client is connected again, within the grace")
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits after the new connection settled")
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask ended with ${String(failureOf(exit))}, not the reply`)
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag, "Replied")
      assert.include(answer.text, "just in time")
    }))

  it.effect("a client closed while its asker's settle waits for the next connection ends the ask with ReplyTimeout then, not at the reconnect's next attempt", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const cuttable = cuttableDialer(world)
      // The first reconnect attempt comes 4 s after the drop.
      const asker = yield* world.session("asker", { client: { dial: cuttable.dial, reconnectBaseMs: 4_000 } })
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT)
      yield* cuttable.settled
      yield* cuttable.cut
      yield* TestClock.adjust(500)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before the client was closed")
      // disconnect itself joins the reconnect in flight for up to 2 s (C-BRK-30): forked, not waited for.
      yield* Effect.forkChild(asker.client.disconnect)
      yield* TestClock.adjust(0)
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits for a connection after its client was closed")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("a blocking contact_supervisor whose settle loses its connection gets the supervisor's reply given back at the rejoin", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const cuttable = cuttableDialer({ dial: broker.network.dial(broker.address).pipe(Effect.orDie) })
      const supervisor = yield* layeredMember(broker, "5b5b5b5b-0000-4000-8000-000000000001", "planner", {
        ownerToken: "a-long-random-owner-token"
      })
      const launched = yield* settle(
        authorizeChild({ runId: "Run-7", agent: "Worker", index: 0, supervisorTarget: "planner" }, {})
          .pipe(Effect.provideService(IntercomClient, supervisor.client))
      )
      const bridge = readChildBridge(launched.env)
      const child = yield* layeredMember(
        broker,
        "c1c1c1c1-0000-4000-8000-000000000002",
        launched.sessionName,
        { group: "run-7", supervisorGrant: bridge?.grant, dial: cuttable.dial },
        { childBridge: bridge, askTimeoutMs: TIMEOUT }
      )
      yield* settle(child.client.connect)
      assert.include((yield* child.client.status).features, "ask-expiry-v1")
      const tool = child.session.contactSupervisor
      if (tool === undefined) return assert.fail("the child has no contact_supervisor")
      const waiting = yield* step(tool({ reason: "need_decision", message: "Stable or experimental API?" }))
      assert.isTrue(Option.isSome(yield* Queue.poll(supervisor.inbox)))
      yield* cuttable.hold
      yield* TestClock.adjust(TIMEOUT - 1_000)
      const replied = yield* settle(
        supervisor.session.intercom({ action: "reply", to: launched.sessionName, message: "Stable." })
      )
      assert.isFalse(replied.isError)
      yield* TestClock.adjust(1_000)
      yield* cuttable.settled
      yield* cuttable.cut
      assert.isUndefined(waiting.pollUnsafe(), "the contact ended when its settling round trip lost its connection")
      yield* TestClock.adjust("2 seconds")
      const result = yield* Fiber.join(waiting)
      assert.deepStrictEqual([result.text, result.isError], ["Stable.", false])
    }))
  it.effect("a blocking contact_supervisor whose acknowledgement was lost unread gets the reply given back after a reconnect past its timeout", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const cuttable = cuttableDialer({ dial: broker.network.dial(broker.address).pipe(Effect.orDie) })
      const supervisor = yield* layeredMember(broker, "5b5b5b5b-0000-4000-8000-000000000001", "planner", {
        ownerToken: "a-long-random-owner-token"
      })
      const launched = yield* settle(
        authorizeChild({ runId: "Run-7", agent: "Worker", index: 0, supervisorTarget: "planner" }, {})
          .pipe(Effect.provideService(IntercomClient, supervisor.client))
      )
      const bridge = readChildBridge(launched.env)
      const child = yield* layeredMember(
        broker,
        "c1c1c1c1-0000-4000-8000-000000000002",
        launched.sessionName,
        { group: "run-7", supervisorGrant: bridge?.grant, dial: cuttable.dial },
        { childBridge: bridge, askTimeoutMs: 2_000 }
      )
      yield* settle(child.client.connect)
      const tool = child.session.contactSupervisor
      if (tool === undefined) return assert.fail("the child has no contact_supervisor")
      // The broker takes the question; its acknowledgement, and all after it, stay unread on this connection.
      yield* cuttable.holdAtSend
      const waiting = yield* step(tool({ reason: "need_decision", message: "Stable or experimental API?" }))
      assert.isTrue(Option.isSome(yield* Queue.poll(supervisor.inbox)))
      const replied = yield* settle(
        supervisor.session.intercom({ action: "reply", to: launched.sessionName, message: "Stable." })
      )
      assert.isFalse(replied.isError)
      // Past the timeout from the first send, the connection drops with the reply unread; the reconnect
      // does not write the question again, and the reply given back there answers it.
      yield* TestClock.adjust("2100 millis")
      yield* cuttable.cut
      yield* TestClock.adjust("2 seconds")
      const exit = waiting.pollUnsafe()
      assert.isDefined(exit, "the contact still waits after the new connection settled")
      const result = yield* Fiber.join(waiting)
      assert.deepStrictEqual([result.text, result.isError], ["Stable.", false])
    }))
})
