/**
 * Exact barriers, instead of sleeping "long enough".
 *
 * The broker's Router handles each connection's frames synchronously, in
 * order, and every outbox is FIFO. So once an actor got the answer to a
 * request sent after its action, the broker has handled the action and queued
 * everything it caused; once an observer then got the answer to its own
 * request, everything queued for it before that answer has been read. A
 * negative check (`expectNothing`) made after that is exact.
 *
 * What a connection's *close* causes is not ordered behind any request: wait
 * for a positive sign of it (the observer's `session_left`, `waitClosed`).
 * An actor that unregisters takes its round trip in the same write
 * (`writeThenRoundTrip`).
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { encodeFrames } from "../../src/protocol/index.ts"
import type { WireClient, WireError } from "./wire.ts"

/**
 * Round trips on every actor, then on every observer: afterwards everything
 * the actors' earlier frames caused is in the observers' logs.
 */
export const settled = (
  actors: ReadonlyArray<WireClient>,
  observers: ReadonlyArray<WireClient> = []
): Effect.Effect<void, WireError> =>
  Effect.andThen(
    Effect.forEach(actors, (client) => client.roundTrip, { discard: true }),
    Effect.forEach(observers, (client) => client.roundTrip, { discard: true })
  )

/**
 * Writes `frames` and a `health` in one write, then waits for its answer: the
 * round trip of an actor whose frames unregister it. The broker closes a
 * connection left unregistered for 1 s (P15), so a `health` written after
 * the `unregister` was read races that close on a loaded machine; one read
 * with it is answered first.
 */
export const writeThenRoundTrip = (
  client: WireClient,
  frames: ReadonlyArray<object>
): Effect.Effect<void, WireError> =>
  Effect.suspend(() => {
    const requestId = `round-trip-${randomUUID()}`
    const texts = [...frames, { type: "health", requestId }].map((frame) => JSON.stringify(frame))
    return Effect.andThen(
      client.sendRaw(encodeFrames(texts)),
      client.next("health_ok", (frame) => frame.requestId === requestId)
    )
  })
