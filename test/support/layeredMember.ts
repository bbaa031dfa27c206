/**
 * A session built the way an application builds one — `IntercomClient.layer`
 * and `IntercomSession.layer` over a headless host — on the in-memory broker
 * of ./memory.ts, in its own Scope closed on simulated time. For tests of
 * what a session's layers do together (the supervisor channel, durable
 * questions); memoryWorld.ts builds sessions with `make` instead.
 */
import { Context, Effect, Layer, Queue, Scope } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { headless, Host, type Inbound } from "../../src/session/Host.ts"
import { IntercomSession, type IntercomSessionOptions, sessionRegistration } from "../../src/session/IntercomSession.ts"
import { closeOnSimulatedTime, type MemoryBroker } from "./memory.ts"

/**
 * The session `id` named `name` on `broker`: its session, its client, and a
 * queue of what its host was handed. `extra` is provided to the session's
 * layer (a `QuestionReviver`, say).
 */
export const layeredMember = (
  broker: MemoryBroker,
  id: string,
  name: string,
  client: Partial<IntercomClientOptions>,
  session: IntercomSessionOptions = {},
  extra: Layer.Layer<never> = Layer.empty
) =>
  Effect.gen(function*() {
    const inbox = yield* Queue.unbounded<Inbound>()
    const identity = { name, cwd: "/tmp/project", model: "test-model" }
    const clientLayer = IntercomClient.layer({
      agentDir: "/mem",
      intercomDir: "/mem/intercom",
      socketPath: broker.address,
      dial: broker.dial,
      sessionId: id,
      registration: sessionRegistration({ sessionId: id, identity, pid: 4242, startedAt: 0 }),
      launch: false,
      ...client
    })
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
    const context = yield* Layer.buildWithScope(
      IntercomSession.layer(session).pipe(
        Layer.provideMerge(Layer.merge(clientLayer, Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound))))),
        Layer.provide(extra)
      ),
      scope
    )
    return { session: Context.get(context, IntercomSession), client: Context.get(context, IntercomClient), inbox }
  })
