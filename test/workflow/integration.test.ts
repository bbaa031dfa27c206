/**
 * Run notifications end to end, through the broker core on the in-memory
 * network under TestClock: an engine's session sends a run's result and its
 * control notices to the parent session with `sessionNotifyPort`; the parent's
 * host is handed the result as a wake-up; a result for a parent that is not
 * on the bus is retried on the Clock and kept in the undelivered area.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Option, Queue, Scope } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host, headless, type Inbound } from "../../src/session/Host.ts"
import { IntercomSession, type IntercomSessionService, sessionRegistration } from "../../src/session/IntercomSession.ts"
import { UndeliveredMemoryState, UndeliveredStore } from "../../src/store/UndeliveredStore.ts"
import type { RunShape } from "../../src/workflow/NotifyOptions.ts"
import { makeRunNotifications } from "../../src/workflow/RunNotifications.ts"
import { sessionNotifyPort } from "../../src/workflow/sessionPort.ts"
import { advance, closeOnSimulatedTime, type MemoryBroker, withMemoryBroker } from "../support/memory.ts"
import { settle, step } from "../support/steps.ts"

const shape: RunShape = { async: true, direct: true, kind: "parallel", intercomAvailable: true }

const peer = (broker: MemoryBroker, id: string, name: string) =>
  Effect.gen(function*() {
    const inbox = yield* Queue.unbounded<Inbound>()
    const identity = { name, cwd: "/tmp/project", model: "test-model" }
    const client = IntercomClient.layer({
      agentDir: "/mem",
      intercomDir: "/mem/intercom",
      socketPath: broker.address,
      dial: broker.dial,
      sessionId: id,
      registration: sessionRegistration({ sessionId: id, identity, pid: 4242, startedAt: 0 }),
      launch: false
    })
    const host = Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound)))
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
    const context = yield* Layer.buildWithScope(IntercomSession.layer().pipe(Layer.provide(Layer.merge(client, host))), scope)
    const session: IntercomSessionService = Context.get(context, IntercomSession)
    yield* settle(session.status)
    return { session, inbox }
  })

const ENGINE = "eeeeeeee-0000-4000-8000-000000000001"
const PARENT = "pppppppp-0000-4000-8000-000000000002"

describe("run notifications over the broker", () => {
  it.effect("C-WFD-3, C-WKR-10: the parent is handed the result as a wake-up and a needs-attention notice; off sends nothing", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const engine = yield* peer(broker, ENGINE, "engine")
      const parent = yield* peer(broker, PARENT, "planner")
      const notifications = makeRunNotifications({
        run: "run-3",
        option: { enabled: true },
        shape,
        port: sessionNotifyPort(engine.session, "planner")
      })
      const sent = yield* settle(notifications.control({ event: "needs_attention", child: "worker-1", detail: "no activity for 60 s" }))
      assert.strictEqual(sent, "sent")
      const outcome = yield* settle(
        notifications.result({ status: "completed", body: "All tests pass.", foreground: false }).pipe(
          Effect.provide(UndeliveredStore.layerMemory())
        )
      )
      assert.deepStrictEqual(outcome, { _tag: "Sent", delivery: { _tag: "Delivered", confirmed: ["message"], skipped: [] } })
      const handed = yield* Queue.takeAll(parent.inbox)
      assert.deepStrictEqual(handed.map((inbound) => [inbound.intent, inbound.message.content.text]), [
        ["trigger", "Run run-3: worker-1 needs attention (no activity for 60 s)."],
        ["trigger", "Run run-3 completed.\n\nAll tests pass."]
      ])
      const off = makeRunNotifications({ run: "run-4", option: { enabled: false }, shape, port: sessionNotifyPort(engine.session, "planner") })
      yield* settle(off.result({ status: "completed", body: "x", foreground: false }).pipe(Effect.provide(UndeliveredStore.layerMemory())))
      assert.strictEqual(Option.isNone(yield* Queue.poll(parent.inbox)), true)
    }))

  it.effect("C-WFD-12: a result for a parent that is not on the bus is retried on the Clock, then kept in the undelivered area", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const engine = yield* peer(broker, ENGINE, "engine")
      const state = new UndeliveredMemoryState()
      const notifications = makeRunNotifications({
        run: "run-5",
        option: { delivery: "result" },
        shape,
        port: sessionNotifyPort(engine.session, "gone-parent"),
        retry: { maxAttempts: 3 }
      })
      const delivering = yield* step(
        notifications.result({ status: "failed", body: "boom", foreground: false }).pipe(
          Effect.provide(UndeliveredStore.layerMemory(state))
        )
      )
      yield* advance("10 seconds")
      assert.isDefined(delivering.pollUnsafe(), "gave up after its attempts")
      const outcome = yield* Fiber.join(delivering)
      assert.strictEqual(outcome._tag === "Sent" ? outcome.delivery._tag : outcome._tag, "Kept")
      assert.deepStrictEqual(state.entries.map((e) => [e.run, e.target, e.attempts]), [["run-5", "gone-parent", 3]])
      assert.include(state.entries[0]!.reason, "gone-parent")
    }))
})
