/**
 * The client's membership view across a reconnect (MembershipView.ts): the
 * broker's feed tells a new connection only of changes after it registered,
 * so what happened while the client was away comes as synthetic events
 * (`resync: true`) once the rejoin grace is over, on `presenceEvents`.
 *
 * In memory under TestClock: alpha's dialer is gated, so alpha stays away
 * exactly as long as the test says; `MembershipView` itself is checked on
 * the orders a live feed and a list in flight can take.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Latch } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { PresenceEvent } from "../../src/client/events.ts"
import { MembershipView } from "../../src/client/MembershipView.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { advance, memoryNetwork, settle } from "../support/memory.ts"
import { settleWithin } from "../support/steps.ts"
import { makeMemoryClient, memoryClientOptions, subscribe } from "./support.ts"

const GRACE_MS = 2_000

/**
 * alpha, dialling through `dial`, reconnecting after 100 ms with the test's
 * rejoin grace and no liveness probe in the test's span: connected, and its
 * presence events subscribed.
 */
const connectAlpha = (world: Effect.Success<ReturnType<typeof memoryNetwork>>, dial: Dialer) =>
  Effect.gen(function*() {
    const alpha = (yield* makeMemoryClient(
      memoryClientOptions({ ...world, dial }, "alpha", "alpha", {
        reconnectBaseMs: 100,
        reconnectMaxMs: 100,
        rejoinGraceMs: GRACE_MS,
        livenessIntervalMs: 600_000
      })
    )).client
    yield* settle(alpha.connect, "alpha's connect")
    const events = yield* subscribe(alpha.presenceEvents, "alpha's presence events")
    return { alpha, events }
  })

const idOf = (event: PresenceEvent) => event._tag === "Left" ? event.sessionId : event.session.id
const summary = (events: ReadonlyArray<PresenceEvent>) =>
  events.map((event) => `${event._tag} ${idOf(event)}${event.resync === true ? " (resync)" : ""}`)

describe("membership after a reconnect", () => {
  it.effect("alpha listed, then knew beta and gamma; while it was away gamma left and delta joined: it hears both, once, after the grace", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      // alpha's dialling is gated: `away` drops it and keeps it away until `back`.
      const { alpha, away, back, events } = yield* gatedAlpha(world)
      // As a watch does when it starts: what is listed is the baseline a join after a reconnect is news against.
      yield* settle(alpha.list, "alpha's list")

      const beta = yield* makeMemoryClient(memoryClientOptions(world, "beta", "beta"))
      const gamma = yield* makeMemoryClient(memoryClientOptions(world, "gamma", "gamma"))
      yield* settle(beta.client.connect, "beta's connect")
      yield* settle(gamma.client.connect, "gamma's connect")
      yield* events.next((event) => event._tag === "Joined" && event.session.id === "gamma")
      assert.deepStrictEqual(summary(events.seen()), ["Joined beta", "Joined gamma"])

      // alpha's connection drops, and it cannot dial again until the gate opens.
      yield* away

      // Meanwhile gamma leaves and delta joins.
      yield* gamma.close
      const delta = yield* makeMemoryClient(memoryClientOptions(world, "delta", "delta"))
      yield* settle(delta.client.connect, "delta's connect")

      yield* back
      assert.deepInclude(yield* alpha.status, { connected: true, connections: 2 })
      // Nothing before the grace is over: a session missing then may be on its way back to a restarted broker.
      assert.deepStrictEqual(summary(events.seen()), ["Joined beta", "Joined gamma"])

      // The grace, then a step for the list's round trip.
      yield* advance(GRACE_MS)
      yield* settle(Effect.void, "a step")
      assert.deepStrictEqual(summary(events.seen()), [
        "Joined beta",
        "Joined gamma",
        "Left gamma (resync)",
        "Joined delta (resync)"
      ])
      // A departure made up so counts as one read: gamma left after any earlier mark.
      assert.isTrue(yield* alpha.isDeparted("gamma"))
    }))
})

describe("membership after a reconnect whose list fails", () => {
  it.effect("a connection that drops again with the list in flight changes nothing and says nothing; the next reconnect's list tells", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      // alpha's connections; with `stall`, its next connection never passes a `list` frame on.
      let alphaConnection: Connection | undefined
      let stall = false
      const gate = Latch.makeUnsafe(true)
      const dial: Dialer = (address) =>
        gate.await.pipe(
          Effect.andThen(world.dial(address)),
          Effect.map((connection): Connection => {
            if (!stall) return connection
            const writeAll: Connection["writeAll"] = (frames) =>
              connection.writeAll(frames.filter((frame) => !frameText(frame).includes(`"type":"list"`)))
            return { ...connection, writeAll, write: (frames) => writeAll(frames) }
          }),
          Effect.tap((connection) => Effect.sync(() => (alphaConnection = connection)))
        )
      const { alpha, events } = yield* connectAlpha(world, dial)
      const gamma = yield* makeMemoryClient(memoryClientOptions(world, "gamma", "gamma"))
      yield* settle(gamma.client.connect, "gamma's connect")
      yield* events.next((event) => event._tag === "Joined" && event.session.id === "gamma")

      const dropAlpha = Effect.gen(function*() {
        yield* gate.close
        const dropped = alphaConnection
        if (dropped === undefined) return assert.fail("alpha never dialled")
        yield* dropped.destroy
        yield* advance(500)
        assert.isFalse((yield* alpha.status).connected)
      })
      yield* dropAlpha
      yield* gamma.close
      // The next connection takes no list: the reconciliation's list stays in flight until that connection drops.
      stall = true
      yield* gate.open
      yield* settleWithin(10, alpha.connect, "alpha's reconnect")
      yield* advance(GRACE_MS + 1_000)
      yield* dropAlpha
      assert.deepStrictEqual(summary(events.seen()), ["Joined gamma"])
      assert.strictEqual((yield* alpha.status).connections, 2)

      stall = false
      yield* gate.open
      yield* settleWithin(10, alpha.connect, "alpha's second reconnect")
      yield* advance(GRACE_MS)
      yield* settle(Effect.void, "a step")
      assert.deepStrictEqual(summary(events.seen()), ["Joined gamma", "Left gamma (resync)"])
    }))
})

const session = (id: string, startedAt = 1): SessionInfo => ({ id, cwd: "/w", model: "m", pid: 1, startedAt, lastActivity: 1 })

describe("MembershipView", () => {
  it("a departure read while the list was in flight is not announced again, nor is a join", () => {
    const view = new MembershipView()
    view.read({ _tag: "Joined", session: session("x") })
    const touched = view.track()
    // The feed says x left, then y joined, before the (older) answer that still names x and lacks y.
    assert.isDefined(view.read({ _tag: "Left", sessionId: "x" }))
    assert.isDefined(view.read({ _tag: "Joined", session: session("y") }))
    const events = view.resync([session("x"), session("self")], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), [])
  })

  it("a real departure that comes after its synthetic twin is not news; a real join after a synthetic one is (a takeover or a return, P16), and so are later changes", () => {
    const view = new MembershipView()
    const first = view.track()
    view.seed([], first, "self")
    view.untrack(first)
    view.read({ _tag: "Joined", session: session("x") })
    view.read({ _tag: "Joined", session: session("z") })
    const touched = view.track()
    const events = view.resync([session("y"), session("z")], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), ["Left x (resync)", "Joined y (resync)"])
    // A broker that wrote x's departure after the list answer: the same change.
    assert.isUndefined(view.read({ _tag: "Left", sessionId: "x" }))
    // Another process takes y over: the broker sends only a session_joined, which must be heard.
    assert.deepStrictEqual(view.read({ _tag: "Joined", session: session("y", 2) }), { _tag: "Joined", session: session("y", 2) })
    // Then real news about them.
    assert.isDefined(view.read({ _tag: "Left", sessionId: "y" }))
    assert.isDefined(view.read({ _tag: "Joined", session: session("x") }))
  })

  it("a session registered again by another process (a new startedAt) left and joined; a renamed one is updated", () => {
    const view = new MembershipView()
    view.read({ _tag: "Joined", session: session("x", 1) })
    view.read({ _tag: "Joined", session: { ...session("w", 1), name: "old" } })
    const touched = view.track()
    const events = view.resync([session("x", 2), { ...session("w", 1), name: "new" }], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), ["Left x (resync)", "Joined x (resync)", "Updated w (resync)"])
  })

  it("a list the owner asked for seeds the view without announcing, and not with a session the feed spoke of since", () => {
    const view = new MembershipView()
    const asked = view.track()
    view.read({ _tag: "Left", sessionId: "gone" })
    view.seed([session("here"), session("gone"), session("self")], asked, "self")
    view.untrack(asked)
    const touched = view.track()
    const events = view.resync([], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), ["Left here (resync)"])
  })

  it("after the first list, a list made during the grace (a send's target lookup) adds nothing: the reconciliation announces the join it names", () => {
    const view = new MembershipView()
    const first = view.track()
    view.seed([session("x"), session("self")], first, "self")
    view.untrack(first)
    view.read({ _tag: "Left", sessionId: "x" })
    // Away meanwhile: x joined again, and the new connection's feed cannot say so. A lookup lists it.
    const lookup = view.track()
    view.seed([session("x"), session("self")], lookup, "self")
    view.untrack(lookup)
    const touched = view.track()
    const events = view.resync([session("x"), session("self")], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), ["Joined x (resync)"])
  })

  it("a view that never listed adds the listed sessions it lacks unannounced, and still announces a known one gone; its next reconciliation announces joins", () => {
    const view = new MembershipView()
    view.read({ _tag: "Joined", session: session("x") })
    const first = view.track()
    // "old" may have been there before this client registered: no list told it so, and no join.
    const events = view.resync([session("old"), session("self")], first, "self")
    view.untrack(first)
    assert.deepStrictEqual(summary(events), ["Left x (resync)"])
    const second = view.track()
    const later = view.resync([session("old"), session("new")], second, "self")
    view.untrack(second)
    assert.deepStrictEqual(summary(later), ["Joined new (resync)"])
  })

  it("a view that never listed announces the return of a session it saw leave", () => {
    const view = new MembershipView()
    view.read({ _tag: "Joined", session: session("beta") })
    view.read({ _tag: "Left", sessionId: "beta" })
    const touched = view.track()
    const events = view.resync([session("beta", 2), session("never-heard-of")], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), ["Joined beta (resync)"])
  })

  it("with a baseline, a presence update of a session the view lacks is a join it missed; without one it is an update", () => {
    const listedView = new MembershipView()
    const touched = listedView.track()
    listedView.seed([], touched, "self")
    listedView.untrack(touched)
    assert.deepStrictEqual(listedView.read({ _tag: "Updated", session: session("y") }), {
      _tag: "Joined",
      session: session("y"),
      resync: true
    })
    assert.deepStrictEqual(listedView.read({ _tag: "Updated", session: session("y") }), { _tag: "Updated", session: session("y") })
    const unlistedView = new MembershipView()
    assert.deepStrictEqual(unlistedView.read({ _tag: "Updated", session: session("y") }), { _tag: "Updated", session: session("y") })
  })

  it("a list between a reconnect and its reconciliation does not hide a join from it", () => {
    const view = new MembershipView()
    const first = view.track()
    view.seed([session("x")], first, "self")
    view.untrack(first)
    const owners = view.track()
    view.seed([session("x"), session("y")], owners, "self")
    view.untrack(owners)
    const touched = view.track()
    const events = view.resync([session("x"), session("y")], touched, "self")
    view.untrack(touched)
    assert.deepStrictEqual(summary(events), ["Joined y (resync)"])
  })
})

/** alpha on a broker of `world`, whose dialling a gate holds: `away` drops it and keeps it away until `back`. */
const gatedAlpha = (world: Effect.Success<ReturnType<typeof memoryNetwork>>) =>
  Effect.gen(function*() {
    let alphaConnection: Connection | undefined
    const gate = Latch.makeUnsafe(true)
    const dial: Dialer = (address) =>
      gate.await.pipe(
        Effect.andThen(world.dial(address)),
        Effect.tap((connection) => Effect.sync(() => (alphaConnection = connection)))
      )
    const { alpha, events } = yield* connectAlpha(world, dial)
    const away = Effect.gen(function*() {
      yield* gate.close
      const dropped = alphaConnection
      if (dropped === undefined) return assert.fail("alpha never dialled")
      yield* dropped.destroy
      yield* advance(500)
      assert.isFalse((yield* alpha.status).connected)
    })
    const back = gate.open.pipe(Effect.andThen(settleWithin(10, alpha.connect, "alpha's reconnect")))
    return { alpha, events, away, back }
  })

describe("membership after a reconnect: what the live feed says meanwhile", () => {
  it.effect("a client that never listed saw beta leave; beta came back while it was away: it hears beta joined (resync)", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { away, back, events } = yield* gatedAlpha(world)
      const beta = yield* makeMemoryClient(memoryClientOptions(world, "beta", "beta"))
      yield* settle(beta.client.connect, "beta's connect")
      yield* beta.close
      yield* events.next((event) => event._tag === "Left" && event.sessionId === "beta")
      yield* away
      const again = yield* makeMemoryClient(memoryClientOptions(world, "beta", "beta"))
      yield* settle(again.client.connect, "beta's second connect")
      yield* back
      yield* advance(GRACE_MS)
      yield* settle(Effect.void, "a step")
      assert.deepStrictEqual(summary(events.seen()), ["Joined beta", "Left beta", "Joined beta (resync)"])
    }))

  it.effect("y joined while alpha was away and is taken over after the reconciliation announced it: alpha hears that join too", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { alpha, away, back, events } = yield* gatedAlpha(world)
      yield* settle(alpha.list, "alpha's list")
      yield* away
      const y = yield* makeMemoryClient(memoryClientOptions(world, "y", "y"))
      yield* settle(y.client.connect, "y's connect")
      yield* back
      yield* advance(GRACE_MS)
      yield* settle(Effect.void, "a step")
      assert.deepStrictEqual(summary(events.seen()), ["Joined y (resync)"])
      yield* advance(1_000)
      const other = yield* makeMemoryClient(memoryClientOptions(world, "y", "y-two"))
      yield* settle(other.client.connect, "y's takeover")
      yield* settle(alpha.list, "a round trip on alpha's connection")
      assert.deepStrictEqual(summary(events.seen()), ["Joined y (resync)", "Joined y"])
    }))

  it.effect("y joined while alpha was away and changed its status within the grace: alpha hears y joined, once", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { alpha, away, back, events } = yield* gatedAlpha(world)
      yield* settle(alpha.list, "alpha's list")
      yield* away
      const y = yield* makeMemoryClient(memoryClientOptions(world, "y", "y"))
      yield* settle(y.client.connect, "y's connect")
      yield* back
      // The feed sends alpha a presence_update for y, never a session_joined.
      yield* settle(y.client.presence({ status: "busy" }), "y's presence")
      yield* settle(alpha.list, "a round trip on alpha's connection")
      yield* advance(GRACE_MS)
      yield* settle(Effect.void, "a step")
      assert.deepStrictEqual(summary(events.seen()), ["Joined y (resync)"])
    }))

  it.effect("y joined while alpha was away; alpha lists within the grace (as a send by name does): alpha still hears y joined", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { alpha, away, back, events } = yield* gatedAlpha(world)
      yield* settle(alpha.list, "alpha's list")
      yield* away
      const y = yield* makeMemoryClient(memoryClientOptions(world, "y", "y"))
      yield* settle(y.client.connect, "y's connect")
      yield* back
      yield* settle(alpha.list, "alpha's owner's list")
      assert.deepStrictEqual(summary(events.seen()), [])
      yield* advance(GRACE_MS)
      yield* settle(Effect.void, "a step")
      assert.deepStrictEqual(summary(events.seen()), ["Joined y (resync)"])
    }))
})
