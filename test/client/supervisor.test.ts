/**
 * The supervisor channel through `IntercomClient` (`supervisor-v1`): a
 * supervisor authorizes a child, the child registers with the grant and
 * reaches its supervisor across groups, and after a broker restart the
 * supervisor restores its capabilities so the child can register again
 * (C-SUP-7…15, C-BRK-28), as does a restarted supervisor process given the
 * grants its earlier process obtained (`issuedGrants`). In memory under
 * TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, Stream } from "effect"
import { randomUUID } from "node:crypto"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { sessionRegistration } from "../../src/session/IntercomSession.ts"
import { advance, memoryNetwork } from "../support/memory.ts"
import { fakeBroker, fakeClientOptions, makeClient, makeMemoryClient } from "./support.ts"

const message = (text: string) => ({ id: randomUUID(), timestamp: 0, content: { text } })

const OWNER_TOKEN = "a-long-random-secret"

const setup = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const broker = yield* world.startBroker({ idleExit: null })
  const client = (sessionId: string, name: string, options: Partial<IntercomClientOptions>) =>
    makeMemoryClient({
      agentDir: "/mem",
      intercomDir: "/mem/intercom",
      socketPath: world.address,
      sessionId,
      registration: sessionRegistration({ sessionId, identity: { name, cwd: "/w", model: "m" }, pid: 1, startedAt: 0 }),
      launch: false,
      dial: world.dial,
      reconnectBaseMs: 100,
      reconnectMaxMs: 400,
      ...options
    })
  const supervisorProcess = yield* client("sup-1", "planner", { ownerToken: OWNER_TOKEN })
  const supervisor = supervisorProcess.client
  const grant = yield* supervisor.authorizeChild("worker")
  const child = (yield* client("child-1", "worker", { group: "run-7", supervisorGrant: grant })).client
  yield* child.connect
  return { world, broker, supervisor, supervisorProcess, child, client, grant }
})

describe("IntercomClient: the supervisor channel", () => {
  it.effect("a supervisor authorizes a child; the child is bound to it and its supervisorSend arrives marked as supervisor traffic", () =>
    Effect.gen(function*() {
      const { supervisor, child, grant } = yield* setup
      assert.strictEqual(grant.childName, "worker")
      assert.strictEqual(grant.supervisorSessionId, "sup-1")
      assert.strictEqual((yield* child.status).supervisorSessionId, "sup-1")
      const sent = message("need a decision")
      yield* child.supervisorSend({ message: sent })
      const received = yield* Stream.runHead(supervisor.messages)
      const inbound = Option.getOrThrow(received)
      assert.strictEqual(inbound.message.id, sent.id)
      assert.strictEqual(inbound.channel, "supervisor")
      // A plain send does not cross groups.
      const plain = yield* Effect.flip(child.send({ to: "sup-1", message: message("plain") }))
      assert.strictEqual(plain._tag, "CrossGroup")
    }))

  it.effect("authorizeChild without an owner token fails with the broker's reason; supervisorSend without a grant is unauthorized", () =>
    Effect.gen(function*() {
      const { client } = yield* setup
      const plain = (yield* client("plain-1", "plain", {})).client
      const refused = yield* Effect.flip(plain.authorizeChild("worker"))
      assert.strictEqual(refused._tag, "SupervisorAuthorizationFailed")
      assert.include(refused.message, `Supervisor authorization for child "worker" failed: Invalid authorize_supervisor: this session registered without an ownerToken`)
      const unbound = yield* Effect.flip(plain.supervisorSend({ message: message("hi") }))
      assert.strictEqual(unbound._tag, "SupervisorUnauthorized")
    }))

  it.effect("a child whose capability does not check cannot connect: the broker's reason is the error", () =>
    Effect.gen(function*() {
      const { client, grant } = yield* setup
      const impostor = (yield* client("child-2", "someone-else", { supervisorGrant: grant, reconnectBaseMs: 100 })).client
      const error = yield* Effect.flip(impostor.connect)
      assert.strictEqual(error.reason, "Invalid supervisor authorization")
    }))

  it.effect("after a broker restart the supervisor restores its capabilities, and the child registers again and reaches it", () =>
    Effect.gen(function*() {
      const { world, broker, supervisor, child } = yield* setup
      yield* broker.crash
      yield* world.startBroker({ idleExit: null })
      yield* advance(5_000)
      assert.isTrue((yield* supervisor.status).connected)
      assert.isUndefined((yield* supervisor.status).lastError)
      const status = yield* child.status
      assert.isTrue(status.connected, `child not back: ${status.lastError}`)
      assert.strictEqual(status.supervisorSessionId, "sup-1")
      const sent = message("back again")
      yield* child.supervisorSend({ message: sent })
      const inbound = Option.getOrThrow(yield* Stream.runHead(supervisor.messages))
      assert.strictEqual(inbound.message.id, sent.id)
    }))

  it.effect("a restarted supervisor process given the grants its earlier process obtained (issuedGrants) restores them: its child registers again and reaches it", () =>
    Effect.gen(function*() {
      const { client, grant, supervisorProcess } = yield* setup
      // The supervisor's process ends: its session leaves, and the broker forgets its capabilities.
      yield* supervisorProcess.close
      const restarted = (yield* client("sup-1", "planner", { ownerToken: OWNER_TOKEN, issuedGrants: [grant] })).client
      yield* restarted.connect
      assert.isUndefined((yield* restarted.status).lastError)
      // A child process that connects after the restart (a new client of the same child) is accepted.
      const again = (yield* client("child-1", "worker", { group: "run-7", supervisorGrant: grant })).client
      yield* again.connect
      assert.strictEqual((yield* again.status).supervisorSessionId, "sup-1")
      const sent = message("after the supervisor restarted")
      yield* again.supervisorSend({ message: sent })
      const inbound = Option.getOrThrow(yield* Stream.runHead(restarted.messages))
      assert.strictEqual(inbound.message.id, sent.id)
      assert.strictEqual(inbound.channel, "supervisor")
    }))

  it.effect("without issuedGrants, a restarted supervisor process does not know its child's capability: the child is refused", () =>
    Effect.gen(function*() {
      const { client, grant, supervisorProcess } = yield* setup
      yield* supervisorProcess.close
      const restarted = (yield* client("sup-1", "planner", { ownerToken: OWNER_TOKEN })).client
      yield* restarted.connect
      const again = (yield* client("child-1", "worker", { group: "run-7", supervisorGrant: grant })).client
      const refused = yield* Effect.flip(again.connect)
      assert.strictEqual(refused.reason, "Invalid supervisor authorization")
    }))

  it.effect("grants obtained under another owner token are not restored: the broker's refusal is named in lastError", () =>
    Effect.gen(function*() {
      const { client, grant, supervisorProcess } = yield* setup
      yield* supervisorProcess.close
      const other = (yield* client("sup-1", "planner", { ownerToken: "another-secret", issuedGrants: [grant] })).client
      yield* other.connect
      assert.include((yield* other.status).lastError ?? "", "worker")
    }))
})

describe("the supervisor channel against a broker without supervisor-v1", () => {
  it.live("authorizeChild and supervisorSend fail at once, saying why, and write no supervisor frame (a base broker would close the connection)", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, "sup-base-1", {
        ownerToken: OWNER_TOKEN,
        supervisorGrant: { capability: "c".repeat(32), supervisorSessionId: "sup-0" }
      }))
      const authorized = yield* Effect.flip(client.authorizeChild("worker"))
      assert.strictEqual(authorized._tag, "SupervisorAuthorizationFailed")
      assert.include(authorized.message, "does not offer the supervisor channel (supervisor-v1); nothing was sent")
      const sent = yield* Effect.flip(client.supervisorSend({ message: message("blocked") }))
      assert.strictEqual(sent._tag, "SupervisorUnauthorized")
      assert.include(sent.message, "does not offer the supervisor channel (supervisor-v1); nothing was sent")
      const types = fake.frames.map((f) => f.frame["type"])
      assert.notInclude(types, "authorize_supervisor")
      assert.notInclude(types, "supervisor_send")
    }))
})
