/**
 * `Connection.receive` for a transport whose reading is an Effect (the
 * in-memory transport, the simulation's links): one fiber reads batch after
 * batch and hands each to the receiver, waiting on a latch while paused. The
 * Unix socket needs none of this: its receiver is called from the socket's
 * own events (UnixSocket.ts).
 */
import { Effect, Latch, type Scope } from "effect"
import type { ConnectionError, FrameReceiver, Receiving } from "./Connection.ts"

/**
 * Reads with `read` in a fiber of the current Scope and hands every batch to
 * `receiver`, never while paused (a batch read just before a pause waits for
 * the resume); the first failure goes to `receiver.end` and ends it.
 */
export const receiveByReading = (
  read: Effect.Effect<ReadonlyArray<string>, ConnectionError>,
  receiver: FrameReceiver
): Effect.Effect<Receiving, never, Scope.Scope> =>
  Effect.gen(function*() {
    const open = yield* Latch.make(true)
    const handOver = (frames: ReadonlyArray<string>) => Effect.andThen(open.await, Effect.sync(() => receiver.frames(frames)))
    yield* Effect.forkScoped(
      // No yield between batches, as a reader fiber's loop: the next read follows the hand-over.
      Effect.forever(Effect.andThen(open.await, Effect.flatMap(read, handOver)), { disableYield: true }).pipe(
        Effect.catch((error) => Effect.sync(() => receiver.end(error)))
      )
    )
    return {
      pause: () => {
        open.closeUnsafe()
      },
      resume: () => {
        open.openUnsafe()
      }
    } satisfies Receiving
  })
