/**
 * The user's timeout stays a bound when the session's inbound side stops
 * handling messages (`ask-expiry-v1`). Both ends of an ask's wait — the
 * broker's `ask_expired` and the asker's round trip at its own deadline —
 * wait until the replies read before them were routed
 * (`IntercomClient.caughtUp`), but at most the liveness timeout: here the
 * asker's host journal's `checkpoint` hangs on a message from a third
 * session, and the ask still ends with `ReplyTimeout` soon after its
 * timeout (found by review revag).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Queue } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { headless, Host, type Inbound } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { ReplyTimeout } from "../../src/session/errors.ts"
import { memoryWorld } from "../support/memoryWorld.ts"

const TIMEOUT = 10_000

describe("an ask while the session's inbound handling is stalled", () => {
  it.effect("ends with ReplyTimeout within the liveness timeout after its own timeout, not when the stalled checkpoint returns", () =>
    Effect.gen(function*() {
      const world = yield* memoryWorld()
      const client = yield* world.client("asker", { name: "asker" })
      const inbound = yield* Queue.unbounded<Inbound>()
      let stall = false
      const host = {
        ...headless({ name: "asker", cwd: "/work", model: "test-model" }, (message) =>
          Effect.asVoid(Queue.offer(inbound, message))),
        journal: {
          checkpoint: () => stall ? Effect.never : Effect.void,
          undelivered: Effect.succeed([]),
          handled: Effect.succeed([])
        }
      }
      const asker = yield* IntercomSession.make().pipe(
        Effect.provideService(IntercomClient, client),
        Effect.provideService(Host, host)
      )
      yield* client.connect.pipe(Effect.orDie)
      const answerer = yield* world.session("answerer")
      const chatter = yield* world.session("chatter")
      const asking = yield* Effect.forkChild(asker.ask({ to: "answerer", message: "well?", timeoutMs: TIMEOUT }))
      yield* Queue.take(answerer.inbound)
      stall = true
      // A plain message from a third session: its checkpoint never completes.
      yield* chatter.session.send({ to: "asker", message: "fyi" })
      yield* TestClock.adjust(TIMEOUT + 6_000)
      const exit = asking.pollUnsafe()
      assert.isDefined(exit, "the ask still waits 6 s past its timeout")
      const error = exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.instanceOf(error, ReplyTimeout)
      yield* Fiber.interrupt(asking)
    }))
})
