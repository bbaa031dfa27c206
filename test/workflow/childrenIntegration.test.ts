/**
 * `Children.layerWithClient` through the broker core (in memory, TestClock):
 * a supervisor's client authorizes a child launched in a generated group,
 * and a client started from the child's environment registers with that
 * grant, in that group (C-SUP-7, C-SUP-9, C-GRP-9, C-GRP-10).
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Scope } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { sessionRegistration } from "../../src/session/IntercomSession.ts"
import { readChildBridge } from "../../src/session/supervisorBridge.ts"
import { Children } from "../../src/workflow/Children.ts"
import { Runs } from "../../src/workflow/Runs.ts"
import { closeOnSimulatedTime, type MemoryBroker, settle, withMemoryBroker } from "../support/memory.ts"

const SUP_ID = "5b5b5b5b-0000-4000-8000-000000000001"
const CHILD_ID = "c1c1c1c1-0000-4000-8000-000000000002"

const clientOptions = (broker: MemoryBroker, id: string, name: string, extra: Partial<IntercomClientOptions>) => ({
  agentDir: "/mem",
  intercomDir: "/mem/intercom",
  socketPath: broker.address,
  dial: broker.dial,
  sessionId: id,
  registration: sessionRegistration({ sessionId: id, identity: { name, cwd: "/tmp/project", model: "test-model" }, pid: 4242, startedAt: 0 }),
  launch: false as const,
  ...extra
})

describe("Children over the broker core", () => {
  it.effect("a child launched with group auto is authorized by the supervisor's client and registers with its grant in the generated group", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const scope = yield* Scope.make()
      yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
      const supervisorLayer = IntercomClient.layer(
        clientOptions(broker, SUP_ID, "planner", { ownerToken: "a-long-random-owner-token" })
      )
      const context = yield* Layer.buildWithScope(
        Children.layerWithClient({ env: { HOME: "/home/me" } }).pipe(
          Layer.provideMerge(Layer.merge(Runs.layer({ newGroupId: Effect.succeed("wf-group-1") }), supervisorLayer))
        ),
        scope
      )
      const runs = Context.get(context, Runs)
      const children = Context.get(context, Children)
      yield* runs.start({ runId: "Run-7" })
      const launched = yield* settle(
        children.launch({ runId: "Run-7", agent: "Worker", index: 0, group: "auto", parallelSetId: "p1" })
      )
      assert.strictEqual(launched.sessionName, "subagent-worker-run-7-1")
      assert.strictEqual(launched.group, "wf-group-1")
      const bridge = readChildBridge(launched.env)
      assert.isDefined(bridge?.grant)
      assert.strictEqual(bridge?.grant?.supervisorSessionId, SUP_ID)

      const child = yield* IntercomClient.make(
        clientOptions(broker, CHILD_ID, launched.sessionName, {
          group: launched.env["ATOMIC_INTERCOM_GROUP"],
          supervisorGrant: bridge?.grant
        })
      ).pipe(Scope.provide(scope))
      yield* settle(child.connect)
      assert.strictEqual(child.group, "wf-group-1")
      const peers = yield* settle(Context.get(context, IntercomClient).peek("wf-group-1"))
      assert.deepStrictEqual(peers.map((peer) => peer.name), ["subagent-worker-run-7-1"])
    }))
})
