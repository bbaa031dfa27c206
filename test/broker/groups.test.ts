/**
 * Groups (`groups-v1`, C-GRP-1…7): an authorization boundary inside a scope,
 * enforced by the broker. In memory: each step runs until the broker is idle,
 * so "nothing arrived" is final.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1, GROUPS_V1, LIST_PAGE_V1, RECLAIM_RELEASED_V1, RECLAIM_V1, RELEASE_GRACE_MS, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { list, message, registerFrame, send } from "../support/broker.ts"
import { advance, type MemoryBroker, withMemoryBroker } from "../support/memory.ts"

/** A session that asked for groups, in `group`. */
const grouped = (group: string | undefined) => ({ frame: { features: [GROUPS_V1, LIST_PAGE_V1], ...(group === undefined ? {} : { group }) } })

/** The features of the take-back tests' sessions: groups, takeover and both reclaim extensions. */
const reclaiming = [GROUPS_V1, TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1]

/** A take-back of "twin" into g1 (`ifFree` and `ifReleased`) on a new connection: that connection. */
const takeBack = (broker: MemoryBroker) =>
  Effect.gen(function*() {
    const asking = yield* broker.connect("asking")
    yield* asking.send(registerFrame({ sessionId: "twin", frame: { features: reclaiming, group: "g1", ifFree: true, ifReleased: true } }))
    return asking
  })

describe("groups", () => {
  it.effect("a send into another group is refused even by exact id; names and prefixes do not resolve across", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "alpha-0001", name: "alice", ...grouped("run-1") })
      const b = yield* broker.session({ sessionId: "bravo-0001", name: "bob", ...grouped("run-2") })
      yield* broker.session({ sessionId: "charlie-01", name: "carol", ...grouped("run-1") })
      const crossed = yield* send(a.client, "bravo-0001", message("by id"))
      assertFailed(crossed, "E_CROSS_GROUP", "Target session is in a different intercom group")
      assertFailed(yield* send(a.client, "bob", message("by name")), "E_TARGET_NOT_FOUND")
      assertFailed(yield* send(a.client, "bravo", message("by prefix")), "E_TARGET_NOT_FOUND")
      assertDelivered(yield* send(a.client, "carol", message("same group")))
      yield* settled([a.client], [b.client])
      yield* b.client.expectNothing("message")
    }))

  it.effect("list shows the own group; a peek with `group` lists another, read-only; membership stays in the group", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const a = yield* broker.session({ sessionId: "a", ...grouped("run-1") })
      const base = yield* broker.session({ sessionId: "base" })
      const b = yield* broker.session({ sessionId: "b", ...grouped("run-2") })
      const c = yield* broker.session({ sessionId: "c", ...grouped("run-1") })
      assert.deepStrictEqual((yield* list(a.client)).map((s) => s.id), ["a", "c"])
      assert.deepStrictEqual((yield* list(base.client)).map((s) => s.id), ["base"])
      yield* a.client.send({ type: "list", requestId: "peek", group: " run-2 " })
      const peek = yield* a.client.next("sessions", (frame) => frame.requestId === "peek")
      assert.deepStrictEqual(peek.sessions.map((s) => s.id), ["b"])
      yield* a.client.send({ type: "list", requestId: "nobody", group: "no-such-group" })
      assert.deepStrictEqual((yield* a.client.next("sessions", (frame) => frame.requestId === "nobody")).sessions, [])
      // Joins were announced only inside the group.
      yield* settled([c.client], [a.client, b.client, base.client])
      assert.deepStrictEqual(
        a.client.received().flatMap((f) => f.type === "session_joined" ? [f.session.id] : []),
        ["c"]
      )
      yield* b.client.expectNothing("session_joined")
      yield* base.client.expectNothing("session_joined", (f) => f.session.id !== "base")
    }))

  it.effect("a blank group is the default group, trimmed names are one group, and a client that did not ask for groups is in the default group", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const base = yield* broker.session({ sessionId: "base", name: "base" })
      const blank = yield* broker.session({ sessionId: "blank", ...grouped("   ") })
      const padded = yield* broker.session({ sessionId: "padded", ...grouped(" team ") })
      const team = yield* broker.session({ sessionId: "team", ...grouped("team") })
      // Asked for no groups: its `group` is ignored.
      const ignorant = yield* broker.session({ sessionId: "ignorant", frame: { group: "team" } })
      assert.deepStrictEqual((yield* list(blank.client)).map((s) => s.id), ["base", "blank", "ignorant"])
      assert.deepStrictEqual((yield* list(team.client)).map((s) => s.id), ["padded", "team"])
      assertDelivered(yield* send(base.client, "blank", message("default to default")))
      assertDelivered(yield* send(padded.client, "team", message("team to team")))
      yield* settled([ignorant.client], [ignorant.client])
    }))

  it.effect("a base client sending to the exact id of a session in another group is told only that it is not found", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const base = yield* broker.session({ sessionId: "base-0001", name: "base" })
      const hidden = yield* broker.session({ sessionId: "hidden-001", name: "hidden", ...grouped("run-7") })
      // As for an id nobody holds: no extension code, and nothing that says the session exists.
      assertFailed(yield* send(base.client, "hidden-001", message("by id")), "E_TARGET_NOT_FOUND", "Session not found")
      assertFailed(yield* send(base.client, "nobody-001", message("by id")), "E_TARGET_NOT_FOUND", "Session not found")
      yield* settled([base.client], [hidden.client])
      yield* hidden.client.expectNothing("message")
    }))

  it.effect("registering an id that is live in another group takes it over there: it leaves that group", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const watcher = yield* broker.session({ sessionId: "watcher", ...grouped("old") })
      const first = yield* broker.session({ sessionId: "mover", ...grouped("old") })
      yield* watcher.client.next("session_joined", (f) => f.session.id === "mover")
      yield* broker.session({ sessionId: "mover", ...grouped("new") })
      yield* first.client.waitClosed()
      yield* watcher.client.next("session_left", (f) => f.sessionId === "mover")
      assert.deepStrictEqual((yield* list(watcher.client)).map((s) => s.id), ["watcher"])
    }))
  // One id is one live session per scope: a takeover from another group is one as any other. A holder
  // not told would reconnect and take the id back, and the two would take it from each other for ever.
  it.effect("taken over from another group, a takeover-v1 holder is told taken_over (the new pid); a base one is ended quietly", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const told = yield* broker.session({ sessionId: "mover", frame: { features: [GROUPS_V1, TAKEOVER_V1], group: "old" } })
      yield* broker.session({ sessionId: "mover", session: { pid: 4242 }, ...grouped("new") })
      yield* told.client.waitClosed()
      assert.deepStrictEqual(told.client.received().at(-1), { type: "taken_over", sessionId: "mover", pid: 4242 })
      const quiet = yield* broker.session({ sessionId: "base", ...grouped("old") })
      yield* broker.session({ sessionId: "base", ...grouped("new") })
      yield* quiet.client.waitClosed()
      assert.notInclude(quiet.client.received().map((f) => f.type), "taken_over")
    }))

  it.effect("a register with ifFree or ifReleased finds the id held while it is live in another group of the scope", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      // The id was given up in g1 (a record that would let ifReleased take it), and is live in g2.
      const mover = yield* broker.session({ sessionId: "twin", frame: { features: [GROUPS_V1, TAKEOVER_V1], group: "g1" } })
      yield* mover.client.send({ type: "unregister" })
      yield* advance(`${RELEASE_GRACE_MS} millis`)
      const holder = yield* broker.session({ sessionId: "twin", frame: { features: [GROUPS_V1, TAKEOVER_V1], group: "g2" } })
      for (const only of [{ ifFree: true }, { ifFree: true, ifReleased: true }]) {
        const asking = yield* broker.connect("asking")
        yield* asking.send(registerFrame({
          sessionId: "twin",
          frame: { features: [GROUPS_V1, TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1], group: "g1", ...only }
        }))
        const refused = yield* asking.next("registration_failed")
        assert.strictEqual(refused.code, "E_SESSION_HELD", JSON.stringify(only))
        yield* asking.waitClosed()
      }
      // The holder was not displaced: mail for the id still reaches it, and it was told nothing.
      const sender = yield* broker.session({ sessionId: "sender", ...grouped("g2") })
      assertDelivered(yield* send(sender.client, "twin", message("still the holder")))
      yield* holder.client.next("message")
      assert.notInclude(holder.client.received().map((f) => f.type), "taken_over")
    }))
  // ifReleased asks whether the id's last holder gave it up: that holder may be in another group of the
  // scope (a takeover reaches across groups), so its last departure anywhere in the scope is what counts.
  it.effect("ifReleased is judged on the id's last departure in the scope, whatever its group", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const features = reclaiming
      const watchers = { g1: yield* broker.session({ sessionId: "w1", ...grouped("g1") }), g2: yield* broker.session({ sessionId: "w2", ...grouped("g2") }) }
      const left = (group: "g1" | "g2") => watchers[group].client.next("session_left", (f) => f.sessionId === "twin")
      // Taken over from g1 by g2 (g1's record: not given up); the taker gives it up in g2: taken back.
      const first = yield* broker.session({ sessionId: "twin", frame: { features, group: "g1" } })
      const taker = yield* broker.session({ sessionId: "twin", session: { pid: 4242 }, frame: { features, group: "g2" } })
      yield* first.client.waitClosed()
      yield* taker.client.send({ type: "unregister" })
      yield* left("g2")
      yield* advance(`${RELEASE_GRACE_MS} millis`)
      const back = yield* takeBack(broker)
      yield* back.next("registered")
      // Given up in g1 now; then taken in g2, whose holder's connection closes without unregister
      // (it may be reconnecting): g1's older release does not let ifReleased take it.
      yield* back.send({ type: "unregister" })
      yield* left("g1")
      const again = yield* broker.session({ sessionId: "twin", frame: { features, group: "g2" } })
      yield* again.client.destroy
      yield* left("g2")
      yield* advance(`${RELEASE_GRACE_MS} millis`)
      const refused = yield* Effect.flatMap(takeBack(broker), (asking) => asking.next("registration_failed"))
      assert.strictEqual(refused.code, "E_SESSION_NOT_RELEASED")
    }))

  // The holder taken over from another group leaves when its connection closes, which may be seen after
  // the taker gave the id up: its departure is not the id's last, and the take-back is not refused for it.
  it.effect("a taker in another group that gives the id up before the old holder's close is seen lets ifReleased take it back", () =>
    Effect.gen(function*() {
      // A link of 4 frames: the old holder, not reading, holds its connection's close back (the `end`
      // flush) until it reads again.
      const broker = yield* withMemoryBroker({ linkCapacity: 4 })
      const features = reclaiming
      const watcher = yield* broker.session({ sessionId: "w1", ...grouped("g1") })
      const first = yield* broker.session({ sessionId: "twin", frame: { features, group: "g1" } })
      yield* first.client.pause
      for (let i = 0; i < 8; i++) assertDelivered(yield* send(watcher.client, "twin", message(`unread ${i}`)))
      const taker = yield* broker.session({ sessionId: "twin", session: { pid: 4242 }, frame: { features, group: "g2" } })
      yield* taker.client.send({ type: "unregister" })
      yield* taker.client.roundTrip
      yield* first.client.resume
      yield* first.client.waitClosed()
      yield* watcher.client.next("session_left", (f) => f.sessionId === "twin")
      yield* advance(`${RELEASE_GRACE_MS} millis`)
      const reply = yield* Effect.flatMap(takeBack(broker), (asking) => asking.next(["registered", "registration_failed"]))
      assert.strictEqual(reply.type, "registered", JSON.stringify(reply))
    }))

  // A takeover from another group is that session, as one in its own group is: short-lived only if the
  // holder was, so an ephemeral taker that gives the id up leaves a record that ifReleased takes it on.
  it.effect("an ephemeral taker from another group is the holder it took over: its release lets ifReleased take the id back", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const features = reclaiming
      const watcher = yield* broker.session({ sessionId: "w2", ...grouped("g2") })
      const first = yield* broker.session({ sessionId: "twin", frame: { features, group: "g1" } })
      const taker = yield* broker.session({
        sessionId: "twin",
        session: { pid: 4242 },
        frame: { features: [...features, EPHEMERAL_V1], group: "g2", ephemeral: true }
      })
      yield* first.client.waitClosed()
      yield* taker.client.send({ type: "unregister" })
      yield* watcher.client.next("session_left", (f) => f.sessionId === "twin")
      yield* advance(`${RELEASE_GRACE_MS} millis`)
      const reply = yield* Effect.flatMap(takeBack(broker), (asking) => asking.next(["registered", "registration_failed"]))
      assert.strictEqual(reply.type, "registered", JSON.stringify(reply))
    }))
})
