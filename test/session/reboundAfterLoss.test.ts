/**
 * A rebound read after the question was lost with its connection is not
 * "never delivered" (review revas AS2): the client marks such a refusal
 * `TargetRebound.afterLoss` (Resending.ts), and Sending.deliver ends a
 * re-list that then times out `DeliveryUnknown`, not
 * `NotDelivered(E_TARGET_REBOUND)` — the refusal answered the client's
 * re-send, and the first write, which the old broker delivered, is what the
 * asker cannot know about.
 *
 * In memory under TestClock: broker A delivers the question to the
 * answerer; the asker never reads A's acknowledgement (its first
 * connection discards what it reads once the question is written); A
 * crashes; broker B starts on the same address; the answerer is back first
 * (a new endpoint epoch), then the asker, whose re-send (old epoch) B
 * refuses with `E_TARGET_REBOUND`; the asker's second connection swallows
 * the re-list, which times out.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { DeliveryUnknown, NotDelivered } from "../../src/session/errors.ts"
import { headless, Host, type Inbound } from "../../src/session/Host.ts"
import { IntercomSession, sessionRegistration } from "../../src/session/IntercomSession.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { closeOnSimulatedTime, memoryNetwork } from "../support/memory.ts"

const ASK_TIMEOUT = 120_000

const startsWith = (frames: ReadonlyArray<OutFrame>, head: string) => frames.some((frame) => frameText(frame).startsWith(head))

const stepUntil = (done: () => boolean, limitMs: number) =>
  Effect.gen(function*() {
    for (let waited = 0; waited < limitMs && !done(); waited += 50) yield* TestClock.adjust(50)
    return done()
  })

describe("a rebound read after the question was lost on the way", () => {
  it.effect("a question the old broker delivered ends DeliveryUnknown, not NotDelivered(E_TARGET_REBOUND), when the re-list times out", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const brokerA = yield* world.startBroker({ idleExit: null })
      let dials = 0
      let sent = false
      // Connection 1: once the question is written, what it reads is discarded (A's acknowledgement never read),
      // its close still seen. Connection 2: once the re-send is written, its `list` frames are swallowed.
      const dial = (_socketPath: string) =>
        Effect.map(world.network.dial(world.address).pipe(Effect.orDie), (connection): Connection => {
          dials += 1
          const index = dials
          let afterSend = false
          const read: Connection["read"] = Effect.flatMap(
            Effect.suspend(() => connection.read),
            (frames) => index === 1 && afterSend ? read : Effect.succeed(frames)
          )
          const filter = (frames: ReadonlyArray<OutFrame>): ReadonlyArray<OutFrame> | undefined => {
            if (startsWith(frames, `{"type":"send"`)) {
              afterSend = true
              if (index === 1) sent = true
              return frames
            }
            if (index === 2 && afterSend && startsWith(frames, `{"type":"list"`)) return undefined
            return frames
          }
          return {
            ...connection,
            read,
            writeAll: (frames) => {
              const kept = filter(frames)
              return kept === undefined ? Effect.void : connection.writeAll(kept)
            },
            write: (frames) => {
              const kept = filter(frames)
              return kept === undefined ? undefined : connection.write(kept)
            },
            unfinishedWrite: () => connection.unfinishedWrite(),
            readProgress: () => connection.readProgress(),
            readPending: () => connection.readPending()
          }
        })
      const session = (sessionId: string, clientOptions: Partial<IntercomClientOptions>) =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          yield* Effect.addFinalizer(() => closeOnSimulatedTime(scope))
          const client = yield* IntercomClient.make({
            agentDir: "/mem",
            intercomDir: "/mem/intercom",
            socketPath: world.address,
            sessionId,
            registration: sessionRegistration({
              sessionId,
              identity: { name: sessionId, cwd: "/work", model: "test-model" },
              pid: 1,
              startedAt: 0
            }),
            launch: false,
            dial: world.dial,
            ...clientOptions
          }).pipe(Effect.orDie, Scope.provide(scope))
          const inbound = yield* Queue.unbounded<Inbound>()
          const host = headless({ name: sessionId, cwd: "/work", model: "test-model" }, (message) =>
            Effect.asVoid(Queue.offer(inbound, message)))
          const runtime = yield* IntercomSession.make().pipe(
            Effect.provideService(IntercomClient, client),
            Effect.provideService(Host, host)
          )
          yield* client.connect.pipe(Effect.orDie)
          return { client, session: runtime, inbound }
        })
      const answerer = yield* session("answerer", { reconnectBaseMs: 500, reconnectMaxMs: 500 })
      const asker = yield* session("asker", { dial, reconnectBaseMs: 3_000, reconnectMaxMs: 3_000 })
      assert.include((yield* asker.client.status).features, "exact-send-v1")
      const ask = yield* Effect.forkChild(Effect.exit(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: ASK_TIMEOUT })))
      assert.isTrue(yield* stepUntil(() => sent && Queue.sizeUnsafe(answerer.inbound) > 0, 2_000), "A never delivered the question")
      // A crashes with the asker's acknowledgement unread; B (no state) takes the address.
      yield* brokerA.crash
      yield* world.startBroker({ idleExit: null })
      assert.isTrue(yield* stepUntil(() => dials >= 2, 10_000), "the asker never reconnected")
      const ended = yield* stepUntil(() => ask.pollUnsafe() !== undefined, 30_000)
      assert.isTrue(ended, "the ask did not end")
      const exit = ask.pollUnsafe()
      const result = exit !== undefined && Exit.isSuccess(exit) ? exit.value : undefined
      const failure = result !== undefined && Exit.isFailure(result) ? Cause.squash(result.cause) : undefined
      assert.isAbove(Queue.sizeUnsafe(answerer.inbound), 0, "the answerer holds the question")
      assert.isFalse(
        failure instanceof NotDelivered,
        `the ask ended ${String(failure ?? JSON.stringify(result))}: "not delivered" for a question its answerer holds`
      )
      assert.instanceOf(failure, DeliveryUnknown, `the ask ended ${String(failure ?? JSON.stringify(result))}`)
    }))
})
