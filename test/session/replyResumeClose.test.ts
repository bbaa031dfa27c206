/**
 * A reply routed to its waiter resumes the wait synchronously, inside the client's read (or inside the binding's
 * look-back): whatever the wait's caller does next runs there, before `slot.route` returns. Here the caller
 * closes the generation at once. The reply's receipts — and, for one the look-back took from the client's
 * unhandled messages, the client's `handled` (what `confirmWhenHandled` confirms) — are still owed once each: so
 * the read-time route queues them before it resumes the waiter, where the closing generation's finalizer finds
 * them. Queued after the resume, they were queued into a generation already closed and never posted.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Scope } from "effect"
import type { InboundMessage } from "../../src/client/events.ts"
import { makeGeneration, resolveSettings } from "../../src/session/Generation.ts"
import type { HostService } from "../../src/session/Host.ts"
import { runInbound } from "../../src/session/Inbound.ts"
import { makeToolExposure } from "../../src/session/ToolExposure.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle } from "./support.ts"

const QUESTION_ID = "q-1"

const receiptsOf = (client: { readonly receipts: () => ReadonlyArray<{ readonly messageId: string; readonly status: string; readonly detail?: string | undefined }> }, id: string) =>
  client.receipts().filter((receipt) => receipt.messageId === id).map((receipt) =>
    receipt.detail === undefined ? receipt.status : `${receipt.status}: ${receipt.detail}`
  )

/**
 * A generation whose inbound handling runs in a Scope of its own, with a host journal whose checkpoints never end
 * (the message fiber stays at the first message); the messages it said it was done with (`handled`), in order.
 */
const generationInScope = Effect.gen(function*() {
  const client = yield* makeFakeClient(SELF.id)
  client.sessions = [SELF, B, C]
  const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
  const service: HostService = {
    ...host.service,
    journal: { checkpoint: () => Effect.as(Effect.never, true), undelivered: Effect.succeed([]) }
  }
  const handled: Array<string> = []
  const clientService = {
    ...client.service,
    handled: (message: InboundMessage) => Effect.andThen(Effect.sync(() => void handled.push(message.message.id)), client.service.handled(message))
  }
  const generation = yield* makeGeneration({ client: clientService, host: service, settings: resolveSettings({}), afterConnect: Effect.void })
  const scope = yield* Scope.make()
  yield* runInbound(generation, () => "idle", makeToolExposure("always", service)).pipe(Scope.provide(scope))
  const waiter = generation.slot.reserve() ?? assert.fail("the slot is taken")
  /** The wait's caller: once it has its reply, it closes the generation, in the same synchronous step. */
  const closed = yield* Deferred.make<string>()
  const caller = yield* Effect.forkChild(
    Effect.flatMap(Deferred.await(waiter.outcome), (reply) =>
      Effect.andThen(Scope.close(scope, Exit.void), Deferred.succeed(closed, reply.message.id))),
    { startImmediately: true }
  )
  const bind = () => generation.slot.bind(waiter, { questionId: QUESTION_ID, targetId: B.id, targetName: "B" })
  return { client, handled, bind, closed, caller }
})

const answer = inboundMessage(B, "answer", "yes", { replyTo: QUESTION_ID })

describe("a wait whose caller closes the generation as its reply resumes it", () => {
  it.effect("taken as it is read: the reply still gets its receipts, once each, in order", () =>
    Effect.gen(function*() {
      const { bind, caller, client, closed } = yield* generationInScope
      bind()
      yield* client.push(answer)
      assert.strictEqual(yield* Deferred.await(closed), "answer")
      yield* Fiber.join(caller)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
    }))

  it.effect("taken by the binding's look-back: the reply still gets its receipts and leaves the client as handled", () =>
    Effect.gen(function*() {
      const { bind, caller, client, closed, handled } = yield* generationInScope
      // m1 holds the message fiber in its checkpoint; the answer, read before the wait was bound, waits behind it.
      yield* client.push(inboundMessage(C, "m1", "first"))
      yield* settle
      yield* client.push(answer)
      yield* settle
      bind()
      assert.strictEqual(yield* Deferred.await(closed), "answer")
      yield* Fiber.join(caller)
      yield* settle
      assert.deepStrictEqual(receiptsOf(client, "answer"), ["receiver_received", "acknowledged: matched reply waiter"])
      assert.deepStrictEqual(handled, ["answer"], "the answer left the client as handled (m1, interrupted in its checkpoint, did not)")
    }))
})
