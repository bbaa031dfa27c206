/**
 * A peer's `Left` is acted on only once the messages read before it were
 * handled (`caughtUp`), so it can be acted on after the peer joined again and
 * the agent asked it afresh: that ask stands, since the rejoined peer has the
 * question (C-ASK-9). A peer not back (its `list` entry gone) still ends the wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle } from "./support.ts"

/**
 * A session whose journal saves each message only once `gate` opens (a slow
 * disk), so a `Left` read after a message waits for that save; B is asked after
 * it left and joined again, while the save still waits.
 */
const askedAfterRejoin = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  const client = yield* makeFakeClient(SELF.id)
  client.sessions = [SELF, B, C]
  const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
  const service = {
    ...host.service,
    journal: { checkpoint: () => Deferred.await(gate), undelivered: Effect.succeed([]) }
  }
  const context = yield* Layer.build(
    IntercomSession.layer({}).pipe(
      Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(service)))
    )
  )
  const session = Context.get(context, IntercomSession)
  yield* session.intercom({ action: "status" })
  yield* settle
  yield* client.push(inboundMessage(C, "c-1", "fyi"))
  yield* settle
  yield* client.presence({ _tag: "Left", sessionId: B.id })
  yield* client.presence({ _tag: "Joined", session: B })
  yield* settle
  const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
  yield* settle
  assert.strictEqual(client.sends.length, 1, "the question went to the rejoined B")
  return { asking, client, gate }
})

describe("a Left acted on after the peer joined again (C-ASK-9)", () => {
  it.effect("an ask made to the rejoined peer keeps waiting", () =>
    Effect.gen(function*() {
      const { asking, gate } = yield* askedAfterRejoin
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the ask still waits for B's answer")
      yield* Fiber.interrupt(asking)
    }))

  it.effect("a peer gone again by the list round trip ends the wait", () =>
    Effect.gen(function*() {
      const { asking, client, gate } = yield* askedAfterRejoin
      // B left again; the broker's list no longer names it (its second Left not read yet).
      client.sessions = [SELF, C]
      yield* Deferred.succeed(gate, undefined)
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.include(result.text, "disconnected")
    }))
})
