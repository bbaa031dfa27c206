/**
 * A takeover (`takeover-v1`): when another client registers the same session
 * id, the broker tells the old one (`taken_over`), which then does not
 * reconnect — reconnecting would take the id back, and the other client
 * would take it back in turn, for ever. Its operations fail saying so. A
 * drop with no such frame still reconnects. In memory, under TestClock.
 *
 * The taking process's pid decides whether the old client may take the id back: a pid we control —
 * this test process (alive) or a child that has already exited (gone) — never one that is
 * alive or dead by chance.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { spawnSync } from "node:child_process"
import { message } from "../support/broker.ts"
import { advance, advanceTo, memoryNetwork, now, settle } from "../support/memory.ts"
import { RECLAIM_INTERVAL_MS } from "../../src/client/IntercomClient.ts"
import { RECLAIM_RELEASED_V1, RECLAIM_V1, RELEASE_GRACE_MS, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Dialer } from "../../src/client/Dialer.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./support.ts"

const TWIN = "aaaaaaaa-2222-4000-8000-00000000000a"
const timings = { reconnectBaseMs: 500, reconnectMaxMs: 1_000, connectTimeoutMs: 2_000 }
/** A registration naming `pid` as the registering process. */
const registeredAs = (pid: number) => ({ cwd: "/tmp/project", model: "m", pid, startedAt: 0, lastActivity: 0, name: "twin" })
/** The pid of a child process that has exited and been reaped. */
const exitedPid = Effect.sync(() => {
  const child = spawnSync(process.execPath, ["-e", ""])
  assert.strictEqual(child.status, 0, "the short-lived child ran")
  return child.pid
})

/**
 * Once `older.on`, every register through it asks for none of `withheld` (by default both reclaim
 * extensions): the broker then grants takeover-v1 only, as one from before reclaim-v1 does, and ignores
 * `ifFree` and `ifReleased`.
 */
const olderDial = (
  base: Dialer,
  older: { on: boolean },
  withheld: ReadonlyArray<string> = [RECLAIM_V1, RECLAIM_RELEASED_V1]
): Dialer =>
(socketPath) =>
  Effect.map(base(socketPath), (connection): Connection => {
    const strip = (frames: ReadonlyArray<OutFrame>) =>
      !older.on ? frames : frames.map((frame) => {
        const text = frameText(frame)
        if (!text.includes('"type":"register"')) return frame
        const parsed: unknown = JSON.parse(text)
        if (typeof parsed !== "object" || parsed === null) return frame
        const features: ReadonlyArray<unknown> = "features" in parsed && Array.isArray(parsed.features) ? parsed.features : []
        return JSON.stringify({ ...parsed, features: features.filter((f) => typeof f !== "string" || !withheld.includes(f)) })
      })
    return { ...connection, write: (frames) => connection.write(strip(frames)), writeAll: (frames) => connection.writeAll(strip(frames)) }
  })

/**
 * `first` taken over by a live `taker` (this process's pid), then the broker crashes and comes back as an
 * older one: every register from then on asks for none of `withheld`. Returns 1.5 s after the restart.
 */
const takenOverThenRestartedOlder = (withheld: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const older = { on: false }
    const network = { address: world.address, dial: olderDial(world.dial, older, withheld) }
    const broker = yield* world.startBroker({ idleExit: null })
    const { client: first } = yield* makeMemoryClient(memoryClientOptions(network, TWIN, "twin", timings))
    yield* settle(first.connect)
    const taker = yield* makeMemoryClient(memoryClientOptions(network, TWIN, "twin", { ...timings, registration: registeredAs(process.pid) }))
    yield* settle(taker.client.connect)
    yield* advance("100 millis")
    assert.deepInclude(yield* first.status, { connected: false, takenOver: { sessionId: TWIN, pid: process.pid } })
    older.on = true
    yield* broker.crash
    yield* world.startBroker({ idleExit: null })
    yield* advance("1500 millis")
    return { first, taker }
  })

describe("taken over by another client with the same session id", () => {
  it.effect("the old client does not reconnect, says why, and the new one keeps the id", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: first } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", timings))
      yield* settle(first.connect)
      const told = yield* Effect.forkChild(Effect.flip(first.whenTakenOver))
      const { client: second } = yield* makeMemoryClient(
        memoryClientOptions(world, TWIN, "twin", {
          ...timings,
          registration: { cwd: "/tmp/project", model: "m", pid: 777, startedAt: 0, lastActivity: 0, name: "twin" }
        })
      )
      yield* settle(second.connect)
      // Said at once (a session ends its waiting ask with it), with the error operations fail with.
      const error = told.pollUnsafe()
      if (error === undefined || error._tag !== "Success") return assert.fail("whenTakenOver did not fail at the takeover")
      assert.deepStrictEqual(error.value.takenOver, { sessionId: TWIN, pid: 777 })
      // Well past the reconnect delay (and its backoff): the first client stays off.
      yield* advance("10 seconds")
      const status = yield* first.status
      assert.deepInclude(status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: 777 } })
      const holder = yield* second.status
      assert.deepInclude(holder, { connected: true, connections: 1 })
      assert.isUndefined(holder.takenOver)
      // Its operations fail at once, saying what happened and how to take the id back.
      const refused = yield* Effect.flip(settle(first.list))
      if (refused._tag !== "IntercomNotConnected") return assert.fail(`expected IntercomNotConnected, got ${refused._tag}`)
      assert.deepStrictEqual(refused.takenOver, { sessionId: TWIN, pid: 777 })
      assert.match(refused.message, /^Intercom not connected: this session was taken over by another process \(pid 777\)/)
      assert.match(refused.message, /Connect a new client with this session id to take it back\.$/)
      assert.strictEqual(status.lastError, refused.reason)
      // Mail for the id reaches the new holder.
      const sender = yield* world.session({ sessionId: "sender" })
      yield* sender.client.send({ type: "send", to: TWIN, message: message("to the twin") })
      yield* sender.client.next("delivered")
      const sessions = yield* settle(second.list)
      assert.strictEqual(sessions.filter((s) => s.id === TWIN).length, 1)
    }))

  it.effect("a drop with no taken_over frame still reconnects after the reconnect delay", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const broker = yield* world.startBroker({ idleExit: null })
      const { client } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", timings))
      yield* settle(client.connect)
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance("499 millis")
      assert.deepInclude(yield* client.status, { connected: false, connections: 1 })
      yield* advance("1 millis")
      const back = yield* client.status
      assert.deepInclude(back, { connected: true, connections: 2 })
      assert.isUndefined(back.takenOver)
    }))

  it.effect("it takes the id back by itself once the other holder has left, never while it is live", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: first } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", timings))
      yield* settle(first.connect)
      const inbox = yield* subscribe(first.messages, "first's messages")
      // The taker's process has exited (a `pi -c -p` that finished): only the broker's ifFree refusal
      // keeps the first client off while the taker's connection is live.
      const gone = yield* exitedPid
      const second = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", { ...timings, registration: registeredAs(gone) }))
      yield* settle(second.client.connect)
      // Several take-back attempts while the holder is live: each refused, the holder never displaced.
      yield* advance(`${RECLAIM_INTERVAL_MS * 3} millis`)
      assert.deepInclude(yield* first.status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: gone } })
      assert.deepInclude(yield* second.client.status, { connected: true, connections: 1 })
      // The holder leaves (a short-lived `pi -c -p`); mail for the id waits in its mailbox meanwhile.
      yield* second.close
      const sender = yield* world.session({ sessionId: "sender" })
      yield* sender.client.send({ type: "send", to: TWIN, message: message("while nobody held it") })
      yield* sender.client.next("delivered")
      // Within one retry interval the first client is back, no longer taken over, and gets that mail.
      yield* advance(`${RECLAIM_INTERVAL_MS} millis`)
      const back = yield* first.status
      assert.deepInclude(back, { connected: true, connections: 2 })
      assert.isUndefined(back.takenOver)
      assert.isUndefined(back.lastError)
      assert.deepStrictEqual(inbox.seen().map((m) => m.message.content.text), ["while nobody held it"])
      const sessions = yield* settle(first.list)
      assert.strictEqual(sessions.filter((s) => s.id === TWIN).length, 1)
      // Back, it is no longer taken over: a reply wait racing `whenTakenOver` waits again.
      const again = yield* Effect.forkChild(first.whenTakenOver)
      yield* settle(first.list)
      assert.isUndefined(again.pollUnsafe(), "whenTakenOver still failed after the session was taken back")
    }))

  it.effect("shouldReconnect saying no ends the take-back attempts before they dial: the id stays with nobody", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const allowed = yield* Ref.make(true)
      const dials = yield* Ref.make(0)
      const { client: first } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", {
        ...timings,
        dial: (address) => Effect.andThen(Ref.update(dials, (n) => n + 1), world.dial(address)),
        shouldReconnect: Ref.get(allowed)
      }))
      yield* settle(first.connect)
      const second = yield* makeMemoryClient(
        memoryClientOptions(world, TWIN, "twin", { ...timings, registration: registeredAs(yield* exitedPid) })
      )
      yield* settle(second.client.connect)
      // One take-back attempt, allowed and refused (the holder is live): a dial.
      yield* advance(`${RECLAIM_INTERVAL_MS} millis`)
      assert.strictEqual(yield* Ref.get(dials), 2)
      // The owner's session is gone; the holder leaves: the id is free, yet nothing more is dialled.
      yield* Ref.set(allowed, false)
      yield* second.close
      yield* advance(`${RECLAIM_INTERVAL_MS * 3} millis`)
      assert.strictEqual(yield* Ref.get(dials), 2, "a take-back dialled after the owner said no")
      assert.deepInclude(yield* first.status, { connected: false, connections: 1 })
    }))

  it.effect("a broker restart does not hand the id back while the process that took it over is alive; its giving the id up does", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const broker = yield* world.startBroker({ idleExit: null })
      const { client: first } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", timings))
      yield* settle(first.connect)
      const firstInbox = yield* subscribe(first.messages, "first's messages")
      // The holder is this (live) process; its reconnect after a drop waits 12 s, a backoff it may have reached.
      const second = yield* makeMemoryClient(
        memoryClientOptions(world, TWIN, "twin", {
          reconnectBaseMs: 12_000,
          reconnectMaxMs: 12_000,
          connectTimeoutMs: 2_000,
          registration: registeredAs(process.pid)
        })
      )
      yield* settle(second.client.connect)
      const secondInbox = yield* subscribe(second.client.messages, "second's messages")
      yield* advance("100 millis")
      assert.deepInclude(yield* first.status, { connected: false, takenOver: { sessionId: TWIN, pid: process.pid } })
      // The new broker sees the id free until the holder is back; the first client must not take it meanwhile.
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance(`${RECLAIM_INTERVAL_MS * 3} millis`)
      assert.deepInclude(yield* first.status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: process.pid } })
      assert.deepInclude(yield* second.client.status, { connected: true, connections: 2 })
      const sender = yield* world.session({ sessionId: "sender" })
      yield* sender.client.send({ type: "send", to: TWIN, message: message("for the live holder") })
      yield* sender.client.next("delivered")
      // A round trip on the holder's connection, then the observers.
      yield* settle(second.client.list)
      assert.deepStrictEqual(secondInbox.seen().map((m) => m.message.content.text), ["for the live holder"])
      assert.deepStrictEqual(firstInbox.seen(), [])
      // The holder's process lives on after its client gave the id up (`unregister`: it moved on to
      // another session): within one interval the first client is back, and gets the mail meanwhile.
      yield* second.close
      yield* sender.client.send({ type: "send", to: TWIN, message: message("after the holder moved on") })
      yield* sender.client.next("delivered")
      yield* advance(`${RECLAIM_INTERVAL_MS} millis`)
      const back = yield* first.status
      assert.deepInclude(back, { connected: true, connections: 2 })
      assert.isUndefined(back.takenOver)
      yield* settle(first.list)
      assert.deepStrictEqual(firstInbox.seen().map((m) => m.message.content.text), ["after the holder moved on"])
    }))

  it.effect("from a broker without reclaim-v1 it stays off: that broker would ignore ifFree and hand the id over", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({ features: ["exact-send-v1", TAKEOVER_V1], takeOverFirst: 777 })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, TWIN, "twin", timings))
      yield* settle(client.connect)
      yield* advance(`${RECLAIM_INTERVAL_MS * 4} millis`)
      assert.deepInclude(yield* client.status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: 777 } })
      assert.strictEqual(fake.connections(), 1, "no register again, with or without ifFree")
    }))
  // The taker (this process) lives; the broker it was taken over on granted reclaim-released-v1, and the
  // one that answers the take-back (restarted, an older version) does not: it ignored `ifReleased`.
  it.effect("an ifReleased registered by a restarted broker with reclaim-v1 only is dropped at once, and not asked again", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({
        features: ["exact-send-v1", TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1],
        laterFeatures: ["exact-send-v1", TAKEOVER_V1, RECLAIM_V1],
        takeOverFirst: process.pid
      })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, TWIN, "twin", timings))
      yield* settle(client.connect)
      yield* advance(`${RECLAIM_INTERVAL_MS * 4} millis`)
      assert.deepInclude(yield* client.status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: process.pid } })
      const registers = fake.ofType("register").map((seen) => seen.frame)
      assert.strictEqual(registers.length, 2, "one ifReleased take-back, then none to that broker")
      assert.deepInclude(registers[1], { ifFree: true, ifReleased: true })
      // Dropped, not given up: the broker gives back the mail it did not confirm.
      assert.deepStrictEqual(fake.ofType("unregister"), [])
      assert.deepStrictEqual(fake.ended(), [1, 2])
    }))
  // Without reclaim-v1 the broker ignored ifFree too: the register took the id from the live taker (told
  // `taken_over`, it stops). Dropping it too would leave nobody the id: the client keeps it.
  it.effect("an ifReleased registered by a restarted broker with neither extension is kept: the takeover is done", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({
        features: ["exact-send-v1", TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1],
        laterFeatures: ["exact-send-v1", TAKEOVER_V1],
        takeOverFirst: process.pid
      })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, TWIN, "twin", timings))
      yield* settle(client.connect)
      yield* advance(`${RECLAIM_INTERVAL_MS * 4} millis`)
      const status = yield* client.status
      assert.deepInclude(status, { connected: true, connections: 2 })
      assert.isUndefined(status.takenOver)
      const registers = fake.ofType("register").map((seen) => seen.frame)
      assert.strictEqual(registers.length, 2)
      assert.deepInclude(registers[1], { ifFree: true, ifReleased: true })
      assert.deepStrictEqual(fake.ended(), [1])
    }))
  // The same with a real broker: restarted as a takeover-v1-only one, the ifReleased take-back takes the
  // id from the live taker, which is told and stops. Somebody must hold the id afterwards.
  it.effect("restarted as a takeover-v1-only broker, an ifReleased take-back that took the id over keeps it", () =>
    Effect.gen(function*() {
      const { first, taker } = yield* takenOverThenRestartedOlder([RECLAIM_V1, RECLAIM_RELEASED_V1])
      assert.deepInclude(yield* taker.client.status, { connected: true, connections: 2 })
      yield* advance(`${RECLAIM_INTERVAL_MS * 2} millis`)
      const back = yield* first.status
      assert.deepInclude(back, { connected: true, connections: 2 })
      assert.isUndefined(back.takenOver)
      assert.deepInclude(yield* taker.client.status, { connected: false, takenOver: { sessionId: TWIN, pid: process.pid } })
    }))
  // Restarted as a broker without takeover-v1 either: the take-back ended the taker without telling it,
  // so the taker takes the id back at once. Keeping the take-back would make the two take it from each
  // other on every reconnect; dropped, the taker keeps the id and the old client waits.
  it.effect("restarted as a broker without takeover-v1 either, an ifReleased take-back is dropped: no two clients taking the id in turn", () =>
    Effect.gen(function*() {
      const { first, taker } = yield* takenOverThenRestartedOlder([RECLAIM_V1, RECLAIM_RELEASED_V1, TAKEOVER_V1])
      const before = (yield* first.status).connections + (yield* taker.client.status).connections
      yield* advance(`${RECLAIM_INTERVAL_MS * 6} millis`)
      const a = yield* first.status
      const b = yield* taker.client.status
      assert.isAtMost(a.connections + b.connections - before, 2, "at most one take-back and one reconnect of the taker")
      assert.deepInclude(b, { connected: true })
      assert.deepInclude(a, { connected: false, takenOver: { sessionId: TWIN, pid: process.pid } })
    }))
  // The taker (this process) replaces its client (pi's /reload): the old one unregisters, the new one
  // registers the id some hundreds of ms later. A take-back landing in between must not win.
  it.effect("a take-back in the gap of the taker's reload is refused; one a grace after a release succeeds", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: first } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", timings))
      yield* settle(first.connect)
      const taker = () => makeMemoryClient(memoryClientOptions(world, TWIN, "twin", { ...timings, registration: registeredAs(process.pid) }))
      const gen1 = yield* taker()
      yield* settle(gen1.client.connect)
      const takenAt = yield* now
      // The first take-back comes RECLAIM_INTERVAL_MS after the takeover: 300 ms after the reload's unregister.
      yield* advance(`${RECLAIM_INTERVAL_MS - 300} millis`)
      yield* gen1.close
      yield* advance("400 millis")
      const gen2 = yield* taker()
      yield* settle(gen2.client.connect)
      yield* advance("100 millis")
      assert.deepInclude(yield* first.status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: process.pid } })
      assert.deepInclude(yield* gen2.client.status, { connected: true, connections: 1 })
      // Given up for good this time (the taker moved on), 300 ms before a take-back (refused: held at
      // takenAt + interval + grace, asked again an interval later): that one is refused for the release's
      // youth, and asked again a grace later, not an interval (a broker alone would exit idle meanwhile).
      const probe = takenAt + 2 * RECLAIM_INTERVAL_MS + RELEASE_GRACE_MS
      yield* advanceTo(probe - 300)
      yield* gen2.close
      yield* advanceTo(probe + 100)
      assert.deepInclude(yield* first.status, { connected: false, connections: 1 })
      yield* advanceTo(probe + RELEASE_GRACE_MS + 100)
      assert.deepInclude(yield* first.status, { connected: true, connections: 2 })
      assert.isUndefined((yield* first.status).takenOver)
    }))
  // One id is one live session per scope, whatever the group: a takeover across groups is told too.
  it.effect("the same id opened in two groups of one scope: the second takes it, the first is told and stays off", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", { ...timings, group: "g1" }))
      yield* settle(a.connect)
      const { client: b } = yield* makeMemoryClient(
        memoryClientOptions(world, TWIN, "twin", { ...timings, group: "g2", registration: registeredAs(process.pid) })
      )
      yield* settle(b.connect)
      yield* advance(`${RECLAIM_INTERVAL_MS * 3} millis`)
      assert.deepInclude(yield* a.status, { connected: false, connections: 1, takenOver: { sessionId: TWIN, pid: process.pid } })
      assert.deepInclude(yield* b.status, { connected: true, connections: 1 })
    }))
  // The taker's giving the id up is recorded in its group; the take-back asks in the client's own.
  it.effect("taken over from another group, it takes the id back once the taker gives it up, its process alive", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const { client: a } = yield* makeMemoryClient(memoryClientOptions(world, TWIN, "twin", { ...timings, group: "g1" }))
      yield* settle(a.connect)
      const b = yield* makeMemoryClient(
        memoryClientOptions(world, TWIN, "twin", { ...timings, group: "g2", registration: registeredAs(process.pid) })
      )
      yield* settle(b.client.connect)
      yield* advance("100 millis")
      assert.deepInclude(yield* a.status, { connected: false, takenOver: { sessionId: TWIN, pid: process.pid } })
      yield* b.close
      yield* advance(`${RECLAIM_INTERVAL_MS * 2 + RELEASE_GRACE_MS} millis`)
      const back = yield* a.status
      assert.deepInclude(back, { connected: true, connections: 2 })
      assert.isUndefined(back.takenOver)
    }))
})
