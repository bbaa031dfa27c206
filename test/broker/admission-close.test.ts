/**
 * A connection that closes while it waits for admission (Waiting.ts) is
 * released without registering, on both connection paths — adopted (the
 * Unix-socket listener's, `BrokerService.adopt`) and accepted (a fiber and
 * Scope per connection, `BrokerService.accept`) — each on a real Unix socket.
 *
 * Its held frames are dropped: none of them had been answered, so nothing it
 * was told is lost — a held `send` never got its `delivered`, and a client
 * sends an unacknowledged message again on its next connection. Its wait is
 * withdrawn: the next waiter takes the place. No `session_joined` or
 * `session_left` is written for it, `list` does not show it, and mail queued
 * for its session id stays in the mailbox for that session's next
 * connection (a message is `queued` until a connection of its recipient
 * takes it). What a waiting connection holds is bounded: past `heldLimit`
 * of held text it is not read, so its end is seen only once it is admitted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { Broker, type BrokerService } from "../../src/broker/index.ts"
import { serveUnix } from "../../src/transport/UnixSocket.ts"
import { assertDelivered } from "../support/assertions.ts"
import { list, message, messageFor, register, registerFrame, send, tempDir } from "../support/broker.ts"
import { connect, type WireClient } from "../support/wire.ts"

type Path = "adopted" | "accepted"

/** A broker core with one admission place, listening on a fresh Unix socket through `path`. */
const brokerOn = (connections: Path, heldLimit?: number) =>
  Effect.gen(function*() {
    const socketPath = path.join(yield* tempDir(), "broker.sock")
    const core: BrokerService = yield* Broker.make({
      idleExit: null,
      maxUnregistered: 1,
      registrationTimeout: "10 minutes",
      ...(heldLimit === undefined ? {} : { heldLimit })
    })
    yield* serveUnix<never>(socketPath, connections === "adopted" ? core : core.accept)
    // Before the listener destroys the sockets (finalizers run last first), as runBroker does.
    yield* Effect.addFinalizer(() => core.closeConnections)
    return { core, connect: (label: string) => connect(socketPath, label) }
  })

/** What `client` was told about session `id`'s membership, in order, from its `since`-th frame on. */
const membershipOf = (client: WireClient, id: string, since = 0): ReadonlyArray<string> =>
  client.received().slice(since).flatMap((frame) =>
    (frame.type === "session_joined" && frame.session.id === id) ||
      (frame.type === "presence_update" && frame.session.id === id) ||
      (frame.type === "session_left" && frame.sessionId === id)
      ? [frame.type]
      : []
  )

describe.each<Path>(["adopted", "accepted"])("a connection that closes while it waits for admission (%s)", (connections) => {
  it.live("is dropped unregistered: no join or leave, no list entry, its mail stays queued; the next waiter takes the place", () =>
    Effect.gen(function*() {
      const broker = yield* brokerOn(connections)
      const observer = yield* broker.connect("observer")
      const observerId = (yield* register(observer, { sessionId: "observer" })).sessionId
      // "ghost" is a session the broker remembers, away: mail for it is queued.
      const first = yield* broker.connect("ghost")
      yield* register(first, { sessionId: "ghost" })
      yield* first.destroy
      yield* observer.next("session_left", (frame) => frame.sessionId === "ghost")
      const queued = message("for ghost, while it is away")
      assertDelivered(yield* send(observer, "ghost", queued), "queued")
      observer.drain()
      const since = observer.received().length

      // The one place is held by a connection that does not register; the next two wait.
      const squatter = yield* broker.connect("squatter")
      yield* squatter.roundTrip
      const dying = yield* broker.connect("dying")
      yield* dying.roundTrip // answered while it waits
      const next = yield* broker.connect("next")
      yield* next.roundTrip
      assert.strictEqual((yield* broker.core.stats).waiting, 2)

      // The dying connection registers as ghost and sends, then ends while it waits.
      const unacknowledged = message("held, never acknowledged")
      yield* dying.send(registerFrame({ sessionId: "ghost" }))
      yield* dying.send({ type: "send", to: observerId, message: unacknowledged })
      yield* dying.end
      // Node ends the broker's side in the `end` event that brings the client's end (allowHalfOpen
      // off), the event the connection's `Waiting` hears: once the client is gone, the broker has seen it.
      yield* dying.waitGone()
      const withdrawn = yield* broker.core.stats
      assert.deepStrictEqual([withdrawn.waiting, withdrawn.admissionWaits, withdrawn.waitsWithdrawn], [1, 2, 1])

      // A place frees: it passes to the next waiter, whose register was held.
      yield* next.send(registerFrame({ sessionId: "next" }))
      yield* register(squatter, { sessionId: "squatter" })
      assert.strictEqual((yield* next.next("registered")).sessionId, "next")
      yield* observer.next("session_joined", (frame) => frame.session.id === "next")
      yield* next.roundTrip
      yield* observer.roundTrip

      // Nothing it sent was answered; nothing it sent was handled.
      yield* dying.expectNothing(["registered", "delivered", "delivery_failed", "message", "session_joined"])
      yield* observer.expectNothing("message", (frame) => frame.message.id === unacknowledged.id)
      assert.deepStrictEqual(membershipOf(observer, "ghost", since), [])
      assert.deepStrictEqual((yield* list(observer)).map((session) => session.id).sort(), ["next", "observer", "squatter"])
      assert.strictEqual((yield* broker.core.stats).waiting, 0)

      // ghost's mail is still queued: its next connection gets it, once.
      const back = yield* broker.connect("ghost again")
      yield* register(back, { sessionId: "ghost" })
      yield* messageFor(back, queued.id)
      yield* back.roundTrip
      yield* back.expectNothing("message")
      yield* observer.next("session_joined", (frame) => frame.session.id === "ghost")
      assert.deepStrictEqual(membershipOf(observer, "ghost", since), ["session_joined"])
    }))

  it.live("a connection destroyed while it waits withdraws its wait too", () =>
    Effect.gen(function*() {
      const broker = yield* brokerOn(connections)
      const observer = yield* broker.connect("observer")
      yield* register(observer, { sessionId: "observer" })
      const squatter = yield* broker.connect("squatter")
      yield* squatter.roundTrip
      const dying = yield* broker.connect("dying")
      yield* dying.roundTrip
      yield* dying.send(registerFrame({ sessionId: "ghost" }))
      // A health probe after the register, held behind it: with reading paused at the first held frame,
      // these bytes would sit unread in Node's buffer, and Node would then tell nothing of the close.
      yield* dying.send({ type: "health", requestId: "held" })
      yield* dying.destroy
      // Barrier: its close reached the broker before this connection did, and the broker handles a
      // socket's end in the event that brings it (a tick later), before it accepts a later connection.
      const next = yield* broker.connect("next")
      yield* next.roundTrip
      assert.strictEqual((yield* broker.core.stats).waiting, 1, "only the later connection waits")

      yield* next.send(registerFrame({ sessionId: "next" }))
      yield* register(squatter, { sessionId: "squatter" })
      assert.strictEqual((yield* next.next("registered")).sessionId, "next")
      yield* observer.next("session_joined", (frame) => frame.session.id === "next")
      yield* observer.roundTrip
      assert.deepStrictEqual(membershipOf(observer, "ghost"), [])
      assert.deepStrictEqual((yield* list(observer)).map((session) => session.id).sort(), ["next", "observer", "squatter"])
    }))

  it.live("what it holds is bounded: past heldLimit of held text it is not read, and its end is not seen while it waits", () =>
    Effect.gen(function*() {
      const broker = yield* brokerOn(connections, 4096)
      const squatter = yield* broker.connect("squatter")
      yield* squatter.roundTrip
      const flooding = yield* broker.connect("flooding")
      yield* flooding.roundTrip
      // Its register and 8,000 characters more, held: past the limit, reading stops; then its end.
      yield* flooding.send(registerFrame({ sessionId: "flooding" }))
      yield* flooding.send({ type: "send", to: "nobody", message: message("x".repeat(8000)) })
      yield* flooding.end
      // Barrier as above: a later connection's round trip.
      const next = yield* broker.connect("next")
      yield* next.roundTrip
      assert.strictEqual((yield* broker.core.stats).waiting, 2, "the paused connection still waits")
      assert.strictEqual((yield* broker.core.stats).waitsWithdrawn, 0)
    }))
})
