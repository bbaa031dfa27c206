/**
 * The supervisor channel (`supervisor-v1`, C-SUP-8…15, C-GRP-12), against the
 * broker core in memory: each step runs until the broker is idle, so
 * "nothing arrived" is final.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import { createHmac } from "node:crypto"
import { CROSSING_TTL_MS } from "../../src/broker/Supervisor.ts"
import { ASK_TIMEOUT_V1, GROUPS_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send, type Session } from "../support/broker.ts"
import { advance, type MemoryNetwork, memoryNetwork, withMemoryBroker } from "../support/memory.ts"
import type { WireClient, WireError } from "../support/wire.ts"

const FEATURES = [GROUPS_V1, SUPERVISOR_V1, ASK_TIMEOUT_V1]
const TOKEN = "owner-token-of-the-supervisor"

/** A supervisor: registered with an owner token (none for `null`), in group `default`. */
const supervisorOf = (world: Pick<MemoryNetwork, "session">, token: string | null = TOKEN, sessionId = "sup-0001") =>
  world.session({
    sessionId,
    name: "supervisor",
    frame: { features: FEATURES, ...(token === null ? {} : { ownerToken: token }) }
  })

/** `authorize_supervisor` and its answer. */
const authorize = (client: WireClient, childName: string, capability?: string) =>
  Effect.gen(function*() {
    const requestId = `auth-${childName}-${capability ?? "new"}`
    yield* client.send({ type: "authorize_supervisor", requestId, childName, ...(capability === undefined ? {} : { capability }) })
    return yield* client.next(
      ["supervisor_authorized", "supervisor_authorization_failed"],
      (frame) => frame.requestId === requestId
    )
  })

/** The capability issued for `childName`, failing the test if none was. */
const capabilityFor = (client: WireClient, childName: string) =>
  Effect.gen(function*() {
    const answer = yield* authorize(client, childName)
    if (answer.type !== "supervisor_authorized") return assert.fail(`no capability: ${answer.reason}`)
    return answer.capability
  })

/** Connects a child in group `run-1` presenting `capability` for `supervisorSessionId`; its first frame. */
const childAttempt = (
  world: Pick<MemoryNetwork, "connect">,
  options: {
    readonly name: string
    readonly capability: string
    readonly supervisorSessionId?: string
    readonly sessionId?: string
    readonly scopeId?: string
  }
): Effect.Effect<{ readonly client: WireClient; readonly first: string; readonly confirmed: string | undefined }, WireError, Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* world.connect(options.name)
    const now = Date.now()
    yield* client.send({
      type: "register",
      sessionId: options.sessionId ?? `child-${options.name}`,
      session: { cwd: "/tmp", model: "m", pid: 1, startedAt: now, lastActivity: now, name: ` ${options.name} ` },
      group: "run-1",
      features: FEATURES,
      capability: options.capability,
      supervisorSessionId: options.supervisorSessionId ?? "sup-0001",
      ...(options.scopeId === undefined ? {} : { scopeId: options.scopeId })
    })
    const first = yield* client.next(["registered", "registration_failed"])
    return {
      client,
      first: first.type === "registration_failed" ? first.reason : first.type,
      confirmed: first.type === "registered" ? first.supervisorSessionId : undefined
    }
  })

/** A child that registered with a fresh capability for `name`. */
const boundChild = (world: Pick<MemoryNetwork, "connect">, supervisor: Session, name: string) =>
  Effect.gen(function*() {
    const capability = yield* capabilityFor(supervisor.client, name)
    const child = yield* childAttempt(world, { name, capability })
    assert.strictEqual(child.first, "registered")
    return child.client
  })

/** `supervisor_send` and its answer. */
const supervisorSend = (client: WireClient, to: string, msg = message("to my supervisor"), extra: Readonly<Record<string, unknown>> = {}) =>
  Effect.andThen(client.send({ type: "supervisor_send", to, message: msg, ...extra }), ackFor(client, msg.id))

describe("supervisor channel: capabilities", () => {
  it.effect("a capability is <nonce>.<HMAC-SHA256(ownerToken, nonce \\0 childName)>, issued only to a session with an owner token", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const capability = yield* capabilityFor(supervisor.client, " worker ")
      const [nonce, mac] = capability.split(".")
      assert.isString(nonce)
      assert.strictEqual(mac, createHmac("sha256", TOKEN).update(`${nonce}\u0000worker`).digest("base64url"))

      const tokenless = yield* supervisorOf(broker, null, "plain-0001")
      const refused = yield* authorize(tokenless.client, "worker")
      assert.strictEqual(refused.type, "supervisor_authorization_failed")
      assert.include(refused.type === "supervisor_authorization_failed" ? refused.reason : "", "without an ownerToken")
      const blank = yield* authorize(supervisor.client, "   ")
      assert.deepStrictEqual(blank.type === "supervisor_authorization_failed" ? blank.reason : blank, "Invalid authorize_supervisor: childName is empty")
    }))

  it.effect("a child registers with its capability and gets the confirmed supervisor id; a wrong name, a guessed or foreign capability, a wrong supervisor id or another scope is refused and closed", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const capability = yield* capabilityFor(supervisor.client, "worker")

      const wrongName = yield* childAttempt(broker, { name: "impostor", capability })
      assert.strictEqual(wrongName.first, "Invalid supervisor authorization")
      yield* wrongName.client.waitClosed()
      const [nonce] = capability.split(".")
      const guessed = yield* childAttempt(broker, { name: "worker", capability: `${nonce}.${"A".repeat(43)}` })
      assert.strictEqual(guessed.first, "Invalid supervisor authorization")
      const forged = createHmac("sha256", "another-token").update(`${nonce}\u0000worker`).digest("base64url")
      assert.strictEqual((yield* childAttempt(broker, { name: "worker", capability: `${nonce}.${forged}` })).first, "Invalid supervisor authorization")
      const wrongSupervisor = yield* childAttempt(broker, { name: "worker", capability, supervisorSessionId: "someone-else" })
      assert.strictEqual(wrongSupervisor.first, "Invalid supervisor authorization")
      // P17: the channel crosses groups, never scopes.
      const otherScope = yield* childAttempt(broker, { name: "worker", capability, scopeId: "project-b" })
      assert.strictEqual(otherScope.first, "Invalid supervisor authorization")
      yield* otherScope.client.waitClosed()

      const child = yield* childAttempt(broker, { name: "worker", capability })
      assert.strictEqual(child.first, "registered")
      assert.strictEqual(child.confirmed, "sup-0001")
    }))

  it.effect("a `*` capability binds to the first name that claims it; another name is refused after that", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const capability = yield* capabilityFor(supervisor.client, "*")
      assert.strictEqual((yield* childAttempt(broker, { name: "first", capability })).first, "registered")
      assert.strictEqual((yield* childAttempt(broker, { name: "second", capability })).first, "Invalid supervisor authorization")
      // The bound name may register again (a reconnect).
      assert.strictEqual((yield* childAttempt(broker, { name: "first", capability })).first, "registered")
    }))

  it.effect("a `*` capability restored after its supervisor reconnected keeps the name it was bound to (C-SUP-10)", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const capability = yield* capabilityFor(supervisor.client, "*")
      assert.strictEqual((yield* childAttempt(broker, { name: "first", capability })).first, "registered")
      // The supervisor's connection drops: its capabilities go with it; its client restores them on the next.
      yield* supervisor.client.destroy
      const back = yield* supervisorOf(broker)
      const restored = yield* authorize(back.client, "*", capability)
      assert.strictEqual(restored.type, "supervisor_authorized")
      assert.strictEqual((yield* childAttempt(broker, { name: "other", capability })).first, "Invalid supervisor authorization")
      assert.strictEqual((yield* childAttempt(broker, { name: "first", capability })).first, "registered")
    }))

  it.effect("a child is refused while its supervisor is not registered, and when a session took the supervisor's id without its token", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const capability = yield* capabilityFor(supervisor.client, "worker")
      yield* supervisor.client.destroy
      assert.strictEqual((yield* childAttempt(broker, { name: "worker", capability })).first, "Invalid supervisor authorization")

      const again = yield* supervisorOf(broker)
      const fresh = yield* capabilityFor(again.client, "worker")
      // A takeover of the supervisor's id with another token: the capability no longer holds.
      yield* supervisorOf(broker, "a-thief-token")
      assert.strictEqual((yield* childAttempt(broker, { name: "worker", capability: fresh })).first, "Invalid supervisor authorization")
    }))

  it.effect("after a broker restart the supervisor restores its capabilities; the HMAC must still check, and a held capability is not another supervisor's to restore", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker()
      const supervisor = yield* supervisorOf(world)
      const capability = yield* capabilityFor(supervisor.client, "worker")
      yield* first.crash
      yield* world.startBroker()

      const back = yield* supervisorOf(world)
      assert.strictEqual((yield* childAttempt(world, { name: "worker", capability })).first, "Invalid supervisor authorization")
      const restored = yield* authorize(back.client, "worker", capability)
      assert.deepStrictEqual(restored.type === "supervisor_authorized" ? restored.capability : restored, capability)
      assert.strictEqual((yield* childAttempt(world, { name: "worker", capability })).first, "registered")

      const forName = yield* authorize(back.client, "other-name", capability)
      assert.strictEqual(forName.type, "supervisor_authorization_failed")
      const otherToken = yield* supervisorOf(world, "other-token", "sup-0002")
      const stolen = yield* authorize(otherToken.client, "worker", capability)
      assert.deepStrictEqual(
        stolen.type === "supervisor_authorization_failed" ? stolen.reason : stolen,
        "Invalid authorize_supervisor: the capability is bound to another supervisor relationship"
      )
    }))
})

describe("supervisor channel: traffic", () => {
  it.effect("supervisor_send crosses to the bound supervisor marked channel: supervisor; an unbound sender or another target is refused", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const child = yield* boundChild(broker, supervisor, "worker")
      const msg = message("need a decision")
      assertDelivered(yield* supervisorSend(child, " sup-0001 ", msg))
      const received = yield* messageFor(supervisor.client, msg.id)
      assert.strictEqual(received.channel, "supervisor")
      assert.strictEqual(received.from.id, "child-worker")

      assertFailed(yield* supervisorSend(child, "someone-else"), "E_SUPERVISOR_TARGET", "Supervisor target does not match the authorized relationship")
      const stranger = yield* broker.session({ sessionId: "stranger", frame: { features: FEATURES, group: "run-1" } })
      assertFailed(yield* supervisorSend(stranger.client, "sup-0001"), "E_SUPERVISOR_UNAUTHORIZED", "Supervisor channel is not authorized")
      // A plain send from the child does not cross.
      assertFailed(yield* send(child, "sup-0001", message("plain")), "E_CROSS_GROUP")
    }))

  it.effect("a client frame that carries `channel` is refused (send and supervisor_send), and nothing is delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const child = yield* boundChild(broker, supervisor, "worker")
      const peer = yield* broker.session({ sessionId: "peer", frame: { features: FEATURES } })
      assertFailed(yield* send(peer.client, "sup-0001", message("forged"), { channel: "supervisor" }), "E_INVALID_MESSAGE", "Invalid channel")
      assertFailed(yield* supervisorSend(child, "sup-0001", message("forged"), { channel: "supervisor" }), "E_INVALID_MESSAGE", "Invalid channel")
      yield* settled([peer.client, child], [supervisor.client])
      yield* supervisor.client.expectNothing("message")
    }))

  it.effect("a supervisor frame from a client not granted supervisor-v1 is a protocol error, as any frame a base client cannot know", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      yield* supervisorOf(broker)
      const authorizing = yield* broker.session({ sessionId: "base-auth", name: "base" })
      yield* authorizing.client.send({ type: "authorize_supervisor", requestId: "r1", childName: "worker" })
      yield* authorizing.client.waitClosed()
      const sending = yield* broker.session({ sessionId: "base-send", name: "base2" })
      yield* sending.client.send({ type: "supervisor_send", to: "sup-0001", message: message("hi") })
      yield* sending.client.waitClosed()
      yield* sending.client.expectNothing("delivery_failed")
    }))

  it.effect("a base client never sees the channel field; a takeover of the supervisor's id without its token gets no supervisor traffic", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const child = yield* boundChild(broker, supervisor, "worker")
      // The thief registers the supervisor's id as a base client (no token, no extension).
      const thief = yield* broker.session({ sessionId: "sup-0001", name: "supervisor" })
      yield* supervisor.client.waitClosed()
      assertFailed(
        yield* supervisorSend(child, "sup-0001"),
        "E_TARGET_DISCONNECTED",
        "Supervisor session is not currently connected; try again when it is back"
      )
      yield* settled([child], [thief.client])
      yield* thief.client.expectNothing("message")
    }))

  it.effect("the supervisor's reply crosses back only along a recorded crossing, to the child that sent it", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const child = yield* boundChild(broker, supervisor, "worker")
      const other = yield* boundChild(broker, supervisor, "other")
      const ask = message("which API?", { expectsReply: true })
      assertDelivered(yield* supervisorSend(child, "sup-0001", ask))
      // Someone else's crossing, a made-up one, or none does not cross.
      assertFailed(yield* send(supervisor.client, "child-other", message("x", { replyTo: ask.id })), "E_CROSS_GROUP")
      assertFailed(yield* send(supervisor.client, "child-worker", message("x", { replyTo: "made-up" })), "E_CROSS_GROUP")
      assertFailed(yield* send(supervisor.client, "child-worker", message("no replyTo")), "E_CROSS_GROUP")
      // A session in the supervisor's group cannot use the supervisor's crossing.
      const bystander = yield* broker.session({ sessionId: "bystander", frame: { features: FEATURES } })
      assertFailed(yield* send(bystander.client, "child-worker", message("x", { replyTo: ask.id })), "E_CROSS_GROUP")

      const reply = message("the new one", { replyTo: ask.id })
      assertDelivered(yield* send(supervisor.client, "child-worker", reply))
      assert.strictEqual((yield* messageFor(child, reply.id)).from.id, "sup-0001")
      yield* settled([supervisor.client, bystander.client], [other])
      yield* other.expectNothing("message")
    }))

  it.effect("a crossing is kept 10 minutes: a reply to a progress update goes back within them (refused as no ask), and not after", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const child = yield* boundChild(broker, supervisor, "worker")
      const update = message("progress: 50%")
      assertDelivered(yield* supervisorSend(child, "sup-0001", update))
      // It crosses (P62 then refuses a reply to a message that asked nothing) …
      assertFailed(yield* send(supervisor.client, "child-worker", message("ok", { replyTo: update.id })), "E_REPLY_TARGET")
      yield* advance(CROSSING_TTL_MS)
      // … and after 10 minutes it no longer crosses.
      assertFailed(yield* send(supervisor.client, "child-worker", message("late", { replyTo: update.id })), "E_CROSS_GROUP")
    }))

  it.effect("the reply to a child's ask crosses back while the ask is open, even after the crossing's 10 minutes", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const supervisor = yield* supervisorOf(broker)
      const child = yield* boundChild(broker, supervisor, "worker")
      const ask = message("which API?", { expectsReply: true })
      assertDelivered(yield* supervisorSend(child, "sup-0001", ask, { askTimeoutMs: 3_600_000 }))
      yield* advance(CROSSING_TTL_MS + 60_000)
      const answer = message("the new one", { replyTo: ask.id })
      assertDelivered(yield* send(supervisor.client, "child-worker", answer))
      yield* messageFor(child, answer.id)
      // Answered: the edge is closed, and the crossing is long gone.
      assertFailed(yield* send(supervisor.client, "child-worker", message("again", { replyTo: ask.id })), "E_CROSS_GROUP")
    }))
})
