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
 */
import { Effect } from "effect"
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
