/**
 * Peer health in the session runtime (`health-v1`): what the session
 * publishes (C-HLT-3, C-HLT-8) over a fake client on the TestClock, and the
 * default ask to a busy peer that is sent but not waited for (C-HLT-5,
 * C-HLT-6, C-DLV-2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { EXACT_SEND_V1, HEALTH_V1 } from "../../src/protocol/features.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { ACTIVITY_PUSH_INTERVAL } from "../../src/session/PresencePublisher.ts"
import { B, C, inboundMessage, SELF, settle, withPeers } from "./support.ts"

/** A session whose fake broker granted `health-v1`. */
const healthy = Effect.map(withPeers(), (unit) => {
  unit.client.features = [EXACT_SEND_V1, HEALTH_V1]
  return unit
})

/** The peers `list` answers, B with the given health fields. */
const peersWithB = (health: Partial<SessionInfo>): ReadonlyArray<SessionInfo> => [SELF, { ...B, ...health }, C]

describe("C-HLT-3/8 what a session publishes", () => {
  it.effect("acceptsAsks is true only while idle: a run or a tool makes it false, settling makes it true again", () =>
    Effect.gen(function*() {
      const { client, session } = yield* healthy
      yield* session.connect
      yield* settle
      for (const status of ["thinking", "tool:bash", "thinking", "idle"] as const) {
        yield* session.setStatus(status)
        yield* settle
      }
      assert.deepStrictEqual(
        client.presences().map((p) => [p.status, p.acceptsAsks]),
        [["idle", true], ["thinking", false], ["tool:bash", false], ["thinking", false], ["idle", true]]
      )
      assert.deepStrictEqual(client.presences()[0], {
        name: "self",
        runtimeFallbackAlias: false,
        status: "idle",
        model: "test-model",
        acceptsAsks: true,
        pendingAsks: 0,
        lastIntercomActivity: 0
      })
    }))

  it.effect("a broker without health-v1 gets presence without health fields", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.connect
      yield* session.setStatus("thinking")
      yield* settle
      assert.isAbove(client.presences().length, 0)
      for (const presence of client.presences()) {
        assert.isFalse("acceptsAsks" in presence || "pendingAsks" in presence || "lastIntercomActivity" in presence)
      }
    }))

  it.effect("a send republishes lastIntercomActivity at the clock's time", () =>
    Effect.gen(function*() {
      const { client, session } = yield* healthy
      yield* session.connect
      yield* settle
      yield* TestClock.adjust(5_000)
      yield* session.send({ to: "B", message: "hi" })
      yield* settle
      assert.deepInclude(client.presences().at(-1), { acceptsAsks: true, pendingAsks: 0, lastIntercomActivity: 5_000 })
    }))

  it.effect("an inbound ask raises pendingAsks and stamps the receive; the reply lowers it and stamps again", () =>
    Effect.gen(function*() {
      const { client, session } = yield* healthy
      yield* session.connect
      yield* settle
      yield* TestClock.adjust(1_000)
      yield* client.push(inboundMessage(B, "q1", "which path?", { expectsReply: true }))
      yield* settle
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 1, lastIntercomActivity: 1_000 })
      yield* TestClock.adjust(2_000)
      yield* session.reply({ message: "GET only", replyTo: "q1" })
      yield* settle
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 0, lastIntercomActivity: 3_000 })
    }))
})

describe("C-HLT-3 pendingAsks follows asks retired with no send or receive", () => {
  /** A connected session owing B one ask, published. */
  const owingOne = Effect.gen(function*() {
    const unit = yield* healthy
    yield* unit.session.connect
    yield* settle
    yield* unit.client.push({ ...inboundMessage(B, "q1", "which path?", { expectsReply: true }), askTimeoutMs: 60_000 })
    yield* settle
    assert.deepInclude(unit.client.presences().at(-1), { pendingAsks: 1 })
    return unit
  })

  it.effect("the asker leaving (C-RPL-10)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* owingOne
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 0)
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 0 })
    }))

  it.effect("the asker withdrawing its ask (P73)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* owingOne
      yield* client.control({ _tag: "Control", from: B, control: { messageId: "q1", action: "cancel", timestamp: 0 } })
      yield* settle
      assert.strictEqual(yield* session.pendingCount, 0)
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 0 })
    }))

  it.effect("the ask growing older than its asker waits (C-RPL-6)", () =>
    Effect.gen(function*() {
      const { client } = yield* owingOne
      yield* TestClock.adjust(60_000)
      yield* settle
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 1 }, "still pending at its timeout")
      yield* TestClock.adjust(1)
      yield* settle
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 0 })
    }))
})

describe("C-HLT-8 activity alone is pushed at most once per ACTIVITY_PUSH_INTERVAL", () => {
  /** A connected session with health-v1, 5 s after its connect push, and the presences pushed so far. */
  const connectedAt5s = Effect.gen(function*() {
    const unit = yield* healthy
    yield* unit.session.connect
    yield* settle
    yield* TestClock.adjust(5_000)
    return { ...unit, before: unit.client.presences().length }
  })

  /** Ten plain messages from B, 50 ms apart, starting now. */
  const flood = (client: { readonly push: (message: ReturnType<typeof inboundMessage>) => Effect.Effect<void> }) =>
    Effect.gen(function*() {
      for (let i = 0; i < 10; i++) {
        yield* client.push(inboundMessage(B, `m${i}`, `note ${i}`))
        yield* settle
        yield* TestClock.adjust(50)
      }
    })

  it.effect("a flood of receives pushes the first stamp at once and the latest one when the interval ends", () =>
    Effect.gen(function*() {
      const { before, client } = yield* connectedAt5s
      yield* flood(client)
      // 5,000 + 10 × 50: the first stamp went at once, the nine after it wait.
      assert.deepStrictEqual(client.presences().slice(before).map((p) => p.lastIntercomActivity), [5_000])
      yield* TestClock.adjust(Duration.toMillis(ACTIVITY_PUSH_INTERVAL) - 500)
      yield* settle
      assert.deepStrictEqual(client.presences().slice(before).map((p) => p.lastIntercomActivity), [5_000, 5_450])
      yield* TestClock.adjust(10_000)
      yield* settle
      assert.strictEqual(client.presences().length, before + 2)
    }))

  it.effect("a rename while activity is held back is pushed at once, with the latest activity", () =>
    Effect.gen(function*() {
      const { before, client, session } = yield* connectedAt5s
      yield* flood(client)
      yield* session.setIdentity({ name: "renamed" })
      yield* settle
      assert.deepInclude(client.presences().at(-1), { name: "renamed", lastIntercomActivity: 5_450 })
      assert.strictEqual(client.presences().length, before + 2)
    }))

  it.effect("an ask that comes while activity is held back pushes its pendingAsks at once", () =>
    Effect.gen(function*() {
      const { before, client } = yield* connectedAt5s
      yield* flood(client)
      yield* client.push(inboundMessage(B, "q1", "which path?", { expectsReply: true }))
      yield* settle
      assert.deepInclude(client.presences().at(-1), { pendingAsks: 1, lastIntercomActivity: 5_500 })
      assert.strictEqual(client.presences().length, before + 2)
    }))
})

describe("C-HLT-5/6 an ask to a busy peer", () => {
  it.effect("a default ask to a peer publishing acceptsAsks:false is sent with expectsReply and returns at once: peer_busy", () =>
    Effect.gen(function*() {
      const { client, session } = yield* healthy
      client.sessions = peersWithB({ acceptsAsks: false })
      const result = yield* session.intercom({ action: "ask", to: "B", message: "which path?" })
      assert.isFalse(result.isError)
      assert.deepInclude(result.details, { reason: "peer_busy", reasonCode: "recipient_not_accepting_asks", replied: false })
      assert.include(result.text, "Delivery does not mean the question was consumed")
      assert.strictEqual(client.sends.length, 1)
      assert.strictEqual(client.sends[0]?.message.expectsReply, true)
      assert.isFalse(yield* session.waiting, "the reply-waiter slot is free again")
      // Nothing was cancelled: the broker keeps the ask edge, so a later answer is still a reply.
      assert.deepStrictEqual(client.cancelAsks(), [])
    }))

  it.effect("with an explicit delivery the same ask waits for the reply", () =>
    Effect.gen(function*() {
      const { client, session } = yield* healthy
      client.sessions = peersWithB({ acceptsAsks: false })
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?", delivery: "steer" }))
      yield* settle
      assert.isTrue(yield* session.waiting)
      const question = client.sends[0]?.message
      if (question === undefined) return assert.fail("the question was not sent")
      yield* client.push(inboundMessage(B, "r1", "GET only", { replyTo: question.id }))
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result._tag, "Replied")
    }))

  it.effect("through the tool: delivery steer waits; a passive ask is refused (C-ASK-10) and nothing is sent", () =>
    Effect.gen(function*() {
      const { client, session } = yield* healthy
      client.sessions = peersWithB({ acceptsAsks: false })
      const refused = yield* session.intercom({ action: "ask", to: "B", message: "q", delivery: "passive" })
      assert.deepStrictEqual([refused.isError, refused.details["error"]], [true, "InvalidInput"])
      assert.include(refused.text, "An ask is never passive")
      assert.strictEqual(client.sends.length, 0)
      const fiber = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "q", delivery: "steer" }))
      yield* settle
      assert.isTrue(yield* session.waiting)
      yield* Fiber.interrupt(fiber)
    }))

  for (const [label, health] of [["unknown health", {}], ["a peer accepting asks", { acceptsAsks: true }]] as const) {
    it.effect(`a default ask to ${label} waits normally`, () =>
      Effect.gen(function*() {
        const { client, session } = yield* healthy
        client.sessions = peersWithB(health)
        const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "which path?" }))
        yield* settle
        assert.isTrue(yield* session.waiting)
        assert.isUndefined(fiber.pollUnsafe())
        yield* Fiber.interrupt(fiber)
      }))
  }
})
