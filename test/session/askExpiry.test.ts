/**
 * The ask's wait on the broker's clock (`ask-expiry-v1`): full sessions on the
 * in-memory broker under TestClock, with the asker's inbound frames held back
 * at will (a gate on its connection's reads: an outbox backed up at the
 * broker, as the asker sees it).
 *
 * - A reply the broker accepted before the ask's deadline, read by the asker
 *   after its own timer would have run out, still answers the ask (I1): the
 *   asker waits for the broker's notice, and an answered ask gets none.
 * - An asker whose acknowledgement came late ends its wait at the broker's
 *   deadline, on the notice — not later, on a timer of its own started at
 *   the acknowledgement, while the broker already refuses replies (I2).
 * - An asker not connected at its own deadline, its reconnect failing, ends
 *   once the client's rejoin grace is over (I3): the user's timeout plus
 *   that grace stays a bound when the asker cannot hear the broker (a
 *   connection back within it settles there: askSettleReconnect.test.ts).
 * - A blocking `contact_supervisor` waits the same way (supervisorContact.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import { IntercomNotConnected } from "../../src/client/errors.ts"
import { ReplyTimeout } from "../../src/session/errors.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { memoryWorld, type MemoryWorld } from "../support/memoryWorld.ts"

const TIMEOUT = 10_000

/**
 * A dialer whose connection hands on what it reads only while its gate is
 * open: `hold` closes the gate (frames read from then on wait), `holdAt`
 * closes it at the first batch holding a frame whose text includes `text`
 * (that batch waits too), `release` opens it (they are handed on, in order).
 */
const gatedDialer = (world: MemoryWorld) => {
  let gate: Deferred.Deferred<void> | undefined
  let armed: string | undefined
  const dial = (_socketPath: string) =>
    Effect.map(world.dial, (connection): Connection => ({
      id: connection.id,
      trustedLocal: connection.trustedLocal,
      read: Effect.flatMap(connection.read, (frames) => {
        const text = armed
        if (gate === undefined && text !== undefined && frames.some((frame) => frame.includes(text))) {
          armed = undefined
          gate = Deferred.makeUnsafe<void>()
        }
        const held = gate
        return held === undefined ? Effect.succeed(frames) : Effect.as(Deferred.await(held), frames)
      }),
      writeAll: (frames) => connection.writeAll(frames),
      write: (frames) => connection.write(frames),
      unfinishedWrite: () => connection.unfinishedWrite(),
      readProgress: () => connection.readProgress(),
      readPending: () => connection.readPending(),
      end: connection.end,
      destroy: connection.destroy
    }))
  return {
    dial,
    hold: Effect.sync(() => {
      gate = Deferred.makeUnsafe<void>()
    }),
    holdAt: (text: string) =>
      Effect.sync(() => {
        armed = text
      }),
    release: Effect.suspend(() => {
      const held = gate
      gate = undefined
      return held === undefined ? Effect.void : Deferred.succeed(held, undefined)
    })
  }
}

describe("ask-expiry-v1: the ask waits on the broker's clock", () => {
  it.effect("a reply the broker accepted before the deadline answers the ask, though the asker reads it after its own timeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const gated = gatedDialer(world)
      const asker = yield* world.session("asker", { client: { dial: gated.dial } })
      const answerer = yield* world.session("answerer")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      // The asker's outbox at the broker backs up: nothing more reaches it for now.
      yield* gated.hold
      yield* TestClock.adjust(TIMEOUT - 1_000)
      // Accepted: the broker says delivered to the answerer, one second before the deadline.
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      // Past the ask's timeout as the asker counts it (from the acknowledgement, read at once).
      yield* TestClock.adjust(3_000)
      yield* gated.release
      const answer = yield* Fiber.join(asking)
      assert.strictEqual(answer._tag, "Replied")
      assert.include(answer.text, "just in time")
    }))

  it.effect("an asker whose acknowledgement came late ends its wait at the broker's deadline, on the notice", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const gated = gatedDialer(world)
      const asker = yield* world.session("asker", { client: { dial: gated.dial } })
      const answerer = yield* world.session("answerer")
      assert.include((yield* asker.client.status).features, "ask-expiry-v1")
      // The acknowledgement waits three seconds to be read (an outbox backed up at the broker).
      yield* gated.holdAt(`"type":"delivered"`)
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      const question = yield* Queue.take(answerer.inbound)
      yield* TestClock.adjust(3_000)
      yield* gated.release
      // The broker's deadline, ten seconds after it received the ask: the wait ends now, not three seconds on.
      yield* TestClock.adjust(TIMEOUT - 3_000)
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits at the broker's deadline")
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, ReplyTimeout)
      // C-ASK-5: the text a timeout always had.
      assert.strictEqual(error instanceof ReplyTimeout ? error.message : "", `No reply from "answerer" within 10 seconds`)
      // And the broker refuses a reply now: the three agree. The answerer's session no longer offers the ask
      // (its wait counts from the broker's receipt too: askReadLate.test.ts), and a reply to it says it expired …
      assert.deepStrictEqual((yield* answerer.session.pending).asks, [])
      const unoffered = yield* Effect.flip(answerer.session.reply({ message: "too late", replyTo: question.message.id }))
      assert.strictEqual(unoffered._tag, "AskNoLongerOpen")
      // … and a reply written anyway is refused.
      const late = yield* Effect.flip(answerer.client.send({
        to: "asker",
        message: { id: "late-1", timestamp: 0, content: { text: "too late" }, replyTo: question.message.id }
      }))
      assert.include(late.message, "does not match a pending ask")
    }))

  it.effect("an asker not connected at its own deadline, its reconnect failing, ends once the rejoin grace is over (its cancel_ask bounded by a second), with ReplyTimeout", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      // A dialer that reaches the broker until `cut`: then the live connection drops and no dial succeeds.
      let cut = false
      let live: Connection | undefined
      const dial = (_socketPath: string) =>
        cut
          ? Effect.fail(new IntercomNotConnected({ reason: "the test cut the asker off" }))
          : Effect.map(world.dial, (connection) => (live = connection))
      const asker = yield* world.session("asker", { client: { dial } })
      const answerer = yield* world.session("answerer")
      assert.include((yield* asker.client.status).features, "ask-expiry-v1")
      const asking = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      cut = true
      if (live !== undefined) yield* live.destroy
      yield* TestClock.adjust(TIMEOUT)
      assert.isFalse((yield* asker.client.status).connected)
      // Its deadline: the client is reconnecting, and a connection back within the rejoin grace would settle there.
      yield* TestClock.adjust(asker.client.rejoinGraceMs - 1)
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before the rejoin grace was over")
      // The grace is over: the wait ends, and its `cancel_ask` waits at most CANCEL_ASK_BOUND (1 s) for a connection.
      yield* TestClock.adjust(1)
      yield* TestClock.adjust("1 second")
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits past the rejoin grace, with no connection to hear the broker on")
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, ReplyTimeout)
    }))
})
