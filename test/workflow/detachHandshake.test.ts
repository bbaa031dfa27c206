/** The foreground detach handshake, both sides (C-ORD-10…20). */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import {
  type DetachChannel,
  type DetachHandshakeSettings,
  defaultDetachHandshakeSettings,
  type ForegroundOwner,
  makeDetachHandshake
} from "../../src/workflow/DetachHandshake.ts"
import { makeDetachResponder } from "../../src/workflow/DetachResponder.ts"
import type { DetachAck, DetachRequest } from "../../src/workflow/DetachRoute.ts"
import { entry, settle } from "./orderingSupport.ts"

const fromChild = (id: string, options: Parameters<typeof entry>[2] = {}) =>
  entry(id, "child-id", { senderName: "child", expectsReply: true, ...options })

/**
 * A parent handshake wired in-process to a child responder. `tamper`
 * rewrites (or drops, with undefined) each acknowledgement on its way back.
 */
const world = (options: {
  readonly settings?: DetachHandshakeSettings
  readonly tamper?: (ack: DetachAck) => DetachAck | undefined
  readonly childAnswers?: boolean
} = {}) =>
  Effect.gen(function*() {
    const requests: Array<DetachRequest> = []
    const released = yield* Ref.make(0)
    const foreground = yield* Ref.make<ForegroundOwner | undefined>({ targets: ["child", "child-id"] })
    const answers = yield* Ref.make(options.childAnswers ?? true)
    const forward: { onRequest: (request: DetachRequest) => Effect.Effect<void> } = { onRequest: () => Effect.void }
    const channel: DetachChannel = {
      foreground: Ref.get(foreground),
      send: (request) =>
        Effect.andThen(
          Effect.sync(() => void requests.push(request)),
          Effect.flatMap(Ref.get(answers), (on) => on ? forward.onRequest(request) : Effect.void)
        )
    }
    const handshake = yield* makeDetachHandshake(channel, options.settings ?? defaultDetachHandshakeSettings)
    const child = yield* makeDetachResponder({
      targets: ["child", "child-id"],
      release: Ref.update(released, (n) => n + 1),
      reply: (ack) => {
        const sent = options.tamper === undefined ? ack : options.tamper(ack)
        return sent === undefined ? Effect.void : handshake.acknowledge(sent)
      }
    })
    forward.onRequest = child.onRequest
    yield* handshake.renew("g1")
    return { answers, child, foreground, handshake, released, requests }
  })

describe("DetachHandshake", () => {
  it.effect("probe then commit on the exact route; delivered only after the commit is acknowledged (C-ORD-10, C-ORD-12, C-ORD-13)", () =>
    Effect.gen(function*() {
      const { child, handshake, released, requests } = yield* world()
      const disposition = yield* handshake.handoff(fromChild("m1"))
      assert.strictEqual(disposition, "delivered")
      const route = { requestId: "m1", messageId: "m1", childIntercomTarget: "child", senderId: "child-id", runtimeGeneration: "g1" }
      assert.deepStrictEqual(requests, [{ ...route, phase: "probe" }, { ...route, phase: "commit" }])
      assert.strictEqual(yield* Ref.get(released), 1)
      assert.isTrue(yield* child.detached)
    }))

  it.effect("a silent child gives unclaimed after 50 ms per phase (C-ORD-14)", () =>
    Effect.gen(function*() {
      const { handshake, released } = yield* world({ childAnswers: false })
      const fiber = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
      yield* settle
      yield* TestClock.adjust("49 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* settle
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Fiber.join(fiber), "unclaimed")
      assert.strictEqual(yield* Ref.get(released), 0)
    }))

  it.effect("a commit that is never acknowledged gives unclaimed after the second 50 ms phase (C-ORD-14)", () =>
    Effect.gen(function*() {
      const { handshake } = yield* world({ tamper: (ack) => ack.phase === "commit" ? undefined : ack })
      const fiber = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
      yield* settle
      yield* TestClock.adjust("49 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* settle
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Fiber.join(fiber), "unclaimed")
    }))

  it.effect("the per-phase timeout is a setting (C-ORD-14, open question 24)", () =>
    Effect.gen(function*() {
      const { handshake } = yield* world({ childAnswers: false, settings: { ackTimeout: "500 millis" } })
      const fiber = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
      yield* settle
      yield* TestClock.adjust("499 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* settle
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Fiber.join(fiber), "unclaimed")
    }))

  const tampers: ReadonlyArray<readonly [string, (ack: DetachAck) => DetachAck]> = [
    ["accepted false", (ack) => ({ ...ack, accepted: false })],
    ["requestId", (ack) => ({ ...ack, requestId: "other" })],
    ["messageId", (ack) => ({ ...ack, messageId: "other" })],
    ["childIntercomTarget", (ack) => ({ ...ack, childIntercomTarget: "other" })],
    ["senderId", (ack) => ({ ...ack, senderId: "other" })],
    ["runtimeGeneration", (ack) => ({ ...ack, runtimeGeneration: "g0" })],
    ["phase", (ack) => ({ ...ack, phase: ack.phase === "probe" ? "commit" : "probe" })]
  ]
  for (const [field, tamper] of tampers) {
    it.effect(`an acknowledgement with a different ${field} is ignored (C-ORD-15)`, () =>
      Effect.gen(function*() {
        const { handshake } = yield* world({ tamper: (ack) => ack.phase === "probe" ? tamper(ack) : ack })
        const fiber = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
        yield* settle
        yield* TestClock.adjust("50 millis")
        assert.strictEqual(yield* Fiber.join(fiber), "unclaimed")
      }))
  }

  it.effect("a new generation abandons every handshake in flight (C-ORD-16)", () =>
    Effect.gen(function*() {
      const { handshake } = yield* world({ childAnswers: false })
      const a = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
      const b = yield* Effect.forkChild(handshake.handoff(fromChild("m2")))
      yield* settle
      yield* handshake.renew("g2")
      assert.deepStrictEqual([yield* Fiber.join(a), yield* Fiber.join(b)], ["abandoned", "abandoned"])
      yield* handshake.cancel
      assert.strictEqual(yield* handshake.handoff(fromChild("m3")), "abandoned")
    }))

  it.effect("a stale acknowledgement after a new generation neither surfaces the message nor detaches the child (C-ORD-16)", () =>
    Effect.gen(function*() {
      const held: Array<DetachAck> = []
      const { child, handshake, released, requests } = yield* world({
        tamper: (ack) => {
          held.push(ack) // the probe's acknowledgement is late
          return undefined
        }
      })
      const fiber = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
      yield* settle
      yield* handshake.renew("g2")
      assert.strictEqual(yield* Fiber.join(fiber), "abandoned")
      for (const ack of held) yield* handshake.acknowledge(ack)
      yield* settle
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(requests.map((r) => r.phase), ["probe"]) // no commit was ever sent
      assert.strictEqual(yield* Ref.get(released), 0)
      assert.isFalse(yield* child.detached)
    }))

  it.effect("a new generation clears the delivered keys: the same message gets a fresh handshake (C-ORD-16)", () =>
    Effect.gen(function*() {
      const { handshake, requests } = yield* world()
      assert.strictEqual(yield* handshake.handoff(fromChild("m1")), "delivered")
      yield* handshake.renew("g2")
      // The child detached in g1 and answers nothing now: the fresh handshake is unclaimed.
      const fiber = yield* Effect.forkChild(handshake.handoff(fromChild("m1")))
      yield* settle
      yield* TestClock.adjust("50 millis")
      assert.strictEqual(yield* Fiber.join(fiber), "unclaimed")
      assert.strictEqual(requests.length, 3)
      assert.strictEqual(requests[2]?.runtimeGeneration, "g2")
    }))

  it.effect("concurrent deliveries of one message share a handshake; a delivered one needs none (C-ORD-17)", () =>
    Effect.gen(function*() {
      const { handshake, released, requests } = yield* world()
      const both = yield* Effect.all([handshake.handoff(fromChild("m1")), handshake.handoff(fromChild("m1"))], {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(both, ["delivered", "delivered"])
      assert.strictEqual(requests.length, 2) // one probe, one commit
      assert.strictEqual(yield* handshake.handoff(fromChild("m1")), "delivered")
      assert.strictEqual(requests.length, 2)
      assert.strictEqual(yield* Ref.get(released), 1)
    }))

  it.effect("with no live foreground child, or a message from someone else, nothing is asked: unclaimed (C-ORD-19)", () =>
    Effect.gen(function*() {
      const { foreground, handshake, released, requests } = yield* world()
      assert.strictEqual(yield* handshake.handoff(entry("m1", "peer-id", { senderName: "peer" })), "unclaimed")
      yield* Ref.set(foreground, undefined)
      assert.strictEqual(yield* handshake.handoff(fromChild("m2")), "unclaimed")
      assert.deepStrictEqual(requests, [])
      assert.strictEqual(yield* Ref.get(released), 0)
    }))

  it.effect("a plain send or a progress update from the foreground child releases it too, without being an ask (C-ORD-20)", () =>
    Effect.gen(function*() {
      const { handshake, released } = yield* world()
      const progress = fromChild("p1", { expectsReply: false, progress: true, threadId: "run-1" })
      assert.strictEqual(yield* handshake.handoff(progress), "delivered")
      assert.strictEqual(yield* Ref.get(released), 1)
    }))
})

describe("DetachResponder", () => {
  const route = { requestId: "m1", messageId: "m1", childIntercomTarget: "child", senderId: "s", runtimeGeneration: "g1" }
  const responder = Effect.gen(function*() {
    const acks: Array<DetachAck> = []
    const released = yield* Ref.make(0)
    const child = yield* makeDetachResponder({
      targets: ["child"],
      release: Ref.update(released, (n) => n + 1),
      reply: (ack) => Effect.sync(() => void acks.push(ack))
    })
    return { acks, child, released }
  })

  it.effect("answers only its own target, and nothing once unavailable (C-ORD-11, C-ORD-19)", () =>
    Effect.gen(function*() {
      const { acks, child } = yield* responder
      yield* child.onRequest({ ...route, childIntercomTarget: "sibling", phase: "probe" })
      yield* child.setUnavailable(true)
      yield* child.onRequest({ ...route, phase: "probe" })
      assert.deepStrictEqual(acks, [])
      yield* child.setUnavailable(false)
      yield* child.onRequest({ ...route, phase: "probe" })
      assert.deepStrictEqual(acks, [{ ...route, phase: "probe", accepted: true }])
    }))

  it.effect("a probe whose identity is already reserved is not answered again (C-ORD-11)", () =>
    Effect.gen(function*() {
      const { acks, child } = yield* responder
      yield* child.onRequest({ ...route, phase: "probe" })
      yield* child.onRequest({ ...route, childIntercomTarget: "child", phase: "probe" })
      assert.strictEqual(acks.length, 1)
    }))

  it.effect("a reservation lapses after 1 s: a later commit is refused and the child stays attached (C-ORD-11, C-ORD-12)", () =>
    Effect.gen(function*() {
      const { acks, child, released } = yield* responder
      yield* child.onRequest({ ...route, phase: "probe" })
      yield* settle
      yield* TestClock.adjust("1 second")
      yield* child.onRequest({ ...route, phase: "commit" })
      assert.deepStrictEqual(acks.map((a) => a.phase), ["probe"])
      assert.strictEqual(yield* Ref.get(released), 0)
      assert.isFalse(yield* child.detached)
    }))

  it.effect("a commit within 1 s detaches, releases once, acknowledges, and the child answers nothing after (C-ORD-12)", () =>
    Effect.gen(function*() {
      const { acks, child, released } = yield* responder
      yield* child.onRequest({ ...route, phase: "probe" })
      yield* settle
      yield* TestClock.adjust("999 millis")
      yield* child.onRequest({ ...route, phase: "commit" })
      yield* child.onRequest({ ...route, requestId: "m2", messageId: "m2", phase: "probe" })
      assert.deepStrictEqual(acks.map((a) => a.phase), ["probe", "commit"])
      assert.strictEqual(yield* Ref.get(released), 1)
    }))
})
