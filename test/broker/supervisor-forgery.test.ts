/**
 * Forged supervisor traffic never crosses a group (C-SUP-9…15, C-GRP-3,
 * C-GRP-12). Random sequences of an attacker's attempts — a forged `channel`,
 * sends into other groups by id, name and prefix, guessed and replayed
 * capabilities, restoring someone else's capability, `replyTo` naming the
 * child's crossings, `supervisor_send` without a binding, taking over the
 * supervisor's id without its token — interleaved with a real supervisor and
 * its child talking and the supervisor coming and going. Afterwards every
 * message any connection received is checked: across groups, only the child's
 * `supervisor_send` to the token-holding supervisor, and the supervisor's
 * replies along the child's crossings.
 *
 * In memory: each step runs until the broker is idle, so every frame caused
 * has arrived when the sequence ends. Sequences come from fast-check with
 * fixed seeds (reproducible; a failure names its seed and sequence).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { createHmac } from "node:crypto"
import { ASK_TIMEOUT_V1, GROUPS_V1, LIST_PAGE_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { type MemoryBroker, withMemoryBroker } from "../support/memory.ts"
import type { FrameOf, WireClient } from "../support/wire.ts"

const FEATURES = [GROUPS_V1, SUPERVISOR_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1]
const SUP = "sup-0001"
const CHILD = "child-0001"
const VICTIM = "victim-0001"
const ATTACKER = "attacker-0001"
const GROUP_OF: Readonly<Record<string, string>> = { [SUP]: "default", [CHILD]: "run-1", [VICTIM]: "run-1", [ATTACKER]: "evil" }

type Action =
  | { readonly kind: "send"; readonly to: number; readonly channel: boolean; readonly replyTo: number | undefined }
  | { readonly kind: "supervisor_send"; readonly to: number; readonly channel: boolean }
  | { readonly kind: "register"; readonly name: number; readonly capability: number; readonly supervisor: number }
  | { readonly kind: "steal"; readonly childName: number }
  | { readonly kind: "impersonate" }
  | { readonly kind: "child"; readonly ask: boolean }
  | { readonly kind: "reply"; readonly pick: number; readonly by: number }
  | { readonly kind: "supervisor_returns" }

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({ kind: fc.constant("send" as const), to: fc.nat(7), channel: fc.boolean(), replyTo: fc.option(fc.nat(9), { nil: undefined }) }),
  fc.record({ kind: fc.constant("supervisor_send" as const), to: fc.nat(7), channel: fc.boolean() }),
  fc.record({ kind: fc.constant("register" as const), name: fc.nat(3), capability: fc.nat(3), supervisor: fc.nat(2) }),
  fc.record({ kind: fc.constant("steal" as const), childName: fc.nat(2) }),
  fc.record({ kind: fc.constant("impersonate" as const) }),
  fc.record({ kind: fc.constant("child" as const), ask: fc.boolean() }),
  fc.record({ kind: fc.constant("reply" as const), pick: fc.nat(9), by: fc.nat(3) }),
  fc.record({ kind: fc.constant("supervisor_returns" as const) })
)

const pick = <A>(values: ReadonlyArray<A>, index: number): A => values[index % values.length]!

/** One sequence against a fresh broker; returns every message each connection received, with who it is. */
const run = (broker: MemoryBroker, actions: ReadonlyArray<Action>) =>
  Effect.gen(function*() {
    const connections: Array<{ readonly who: string; readonly client: WireClient }> = []
    const open = (who: string, frame: Record<string, unknown>) =>
      Effect.gen(function*() {
        const client = yield* broker.connect(who)
        connections.push({ who, client })
        const now = Date.now()
        yield* client.send({
          type: "register",
          session: { cwd: "/tmp", model: "m", pid: 1, startedAt: now, lastActivity: now, name: frame["name"] },
          features: FEATURES,
          ...frame
        })
        const first = yield* client.next(["registered", "registration_failed", "error"])
        return { client, registered: first.type === "registered" }
      })
    const authorize = (client: WireClient, childName: string, capability?: string) =>
      Effect.gen(function*() {
        const requestId = `r-${Math.random()}`
        yield* client.send({ type: "authorize_supervisor", requestId, childName, ...(capability === undefined ? {} : { capability }) })
        return yield* client.next(["supervisor_authorized", "supervisor_authorization_failed"], (f) => f.requestId === requestId)
      })

    let supervisor = (yield* open("supervisor", { sessionId: SUP, name: "supervisor", ownerToken: "the-real-token" })).client
    const granted = yield* authorize(supervisor, "worker")
    if (granted.type !== "supervisor_authorized") return assert.fail("no capability for the child")
    const capability = granted.capability
    const child = yield* open("child", { sessionId: CHILD, name: "worker", group: "run-1", capability, supervisorSessionId: SUP })
    assert.isTrue(child.registered)
    yield* open("victim", { sessionId: VICTIM, name: "victim", group: "run-1" })
    const attacker = (yield* open("attacker", { sessionId: ATTACKER, name: "mallory", group: "evil", ownerToken: "mallory-token" })).client

    const [nonce] = capability.split(".")
    const capabilities = [
      capability, // replayed, for another name
      `${nonce}.${createHmac("sha256", "mallory-token").update(`${nonce}\u0000mallory`).digest("base64url")}`, // signed with the wrong token
      `${nonce}.${"A".repeat(43)}`, // guessed
      "not-a-capability"
    ]
    const targets = [VICTIM, "victim", "vict", SUP, "supervisor", CHILD, "worker", "child"]
    const childMessages: Array<string> = []
    let supervisorHere = true

    for (const step of actions) {
      switch (step.kind) {
        case "send": {
          const replyTo = step.replyTo === undefined ? undefined : pick([...childMessages, "made-up"], step.replyTo)
          const msg = message("forged", replyTo === undefined ? {} : { replyTo })
          yield* attacker.send({ type: "send", to: pick(targets, step.to), message: msg, ...(step.channel ? { channel: "supervisor" } : {}) })
          break
        }
        case "supervisor_send":
          yield* attacker.send({ type: "supervisor_send", to: pick(targets, step.to), message: message("forged"), ...(step.channel ? { channel: "supervisor" } : {}) })
          break
        case "register": {
          // Never the child's own name with its own capability: that is the child (a capability is a bearer grant).
          const name = pick(["mallory", "*", "worker ", "victim"], step.name)
          const chosen = pick(capabilities, step.capability)
          const attempt = yield* open("attacker-child", {
            sessionId: `${ATTACKER}-${connections.length}`,
            name: chosen === capability && name.trim() === "worker" ? "mallory" : name,
            group: "evil",
            capability: chosen,
            supervisorSessionId: pick([SUP, ATTACKER, VICTIM], step.supervisor)
          })
          assert.isFalse(attempt.registered, `a forged registration was accepted: ${name} with ${chosen}`)
          break
        }
        case "steal": {
          const answer = yield* authorize(attacker, pick(["worker", "*", "mallory"], step.childName), capability)
          assert.strictEqual(answer.type, "supervisor_authorization_failed")
          break
        }
        case "impersonate":
          // Takes over the supervisor's id, without its token (a base client).
          yield* open("impersonator", { sessionId: SUP, name: "supervisor", features: [] })
          supervisorHere = false
          break
        case "child": {
          const msg = message("to my supervisor", step.ask ? { expectsReply: true } : {})
          childMessages.push(msg.id)
          yield* child.client.send({ type: "supervisor_send", to: SUP, message: msg })
          break
        }
        case "reply": {
          if (!supervisorHere || childMessages.length === 0) break
          const replyTo = pick(childMessages, step.pick)
          yield* supervisor.send({ type: "send", to: pick([CHILD, "worker", VICTIM, "child"], step.by), message: message("answer", { replyTo }) })
          break
        }
        case "supervisor_returns": {
          supervisor = (yield* open("supervisor", { sessionId: SUP, name: "supervisor", ownerToken: "the-real-token" })).client
          const restored = yield* authorize(supervisor, "worker", capability)
          assert.strictEqual(restored.type, "supervisor_authorized")
          supervisorHere = true
          break
        }
      }
    }
    yield* Effect.forEach(connections, ({ client }) => client.isClosed() ? Effect.void : client.roundTrip, { discard: true })
    return connections
  })

/** Why a received message broke isolation, or undefined when it is allowed. */
const violation = (who: string, frame: FrameOf<"message">): string | undefined => {
  const from = frame.from.id
  const fromGroup = GROUP_OF[from] ?? "evil" // the attacker's extra connections are in `evil`
  const recipient = { supervisor: SUP, impersonator: SUP, child: CHILD, victim: VICTIM }[who]
  const toGroup = recipient === undefined ? "evil" : GROUP_OF[recipient]!
  if (frame.channel !== undefined && !(who === "supervisor" && from === CHILD)) {
    return `${who} got channel ${frame.channel} from ${from}`
  }
  if (fromGroup === toGroup) return undefined
  if (who === "supervisor" && from === CHILD && frame.channel === "supervisor") return undefined
  if (who === "child" && from === SUP && frame.message.replyTo !== undefined) return undefined
  return `${who} (${toGroup}) got a message from ${from} (${fromGroup}): ${JSON.stringify(frame.message.content)}`
}

describe("supervisor channel under forgery", () => {
  it.effect("over 40 random sequences, only broker-validated supervisor traffic and its replies cross a group", () =>
    Effect.gen(function*() {
      const sequences = fc.sample(fc.array(action, { minLength: 5, maxLength: 30 }), { seed: 20261201, numRuns: 40 })
      let crossings = 0
      for (const [index, actions] of sequences.entries()) {
        const connections = yield* Effect.scoped(Effect.gen(function*() {
          const broker = yield* withMemoryBroker()
          return yield* run(broker, actions)
        }))
        for (const { who, client } of connections) {
          for (const frame of client.received()) {
            if (frame.type !== "message") continue
            const problem = violation(who, frame)
            assert.isUndefined(problem, `sequence ${index} (seed 20261201): ${problem}\n${JSON.stringify(actions)}`)
            if (frame.from.id === CHILD && who === "supervisor") crossings++
          }
        }
      }
      // The sequences did exercise the channel: real crossings happened.
      assert.isAbove(crossings, 10)
    }), 120_000)
})
