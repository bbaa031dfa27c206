/**
 * Reading a connection into a `FrameReceiver`, whatever the transport. A
 * connection that can push (`Connection.receive`, the Unix socket) is read
 * from its own events, with no fiber; one that can only be pulled (an
 * in-memory connection run through `BrokerService.accept`) gets one fiber,
 * in the current Scope, that reads and hands each batch to the same
 * receiver. (The in-memory listener gives what it hands to an adopter a
 * push entry instead: ReadPump.ts.) The
 * receiver sees the same calls either way, so the broker's per-connection
 * code does not know which transport it runs on.
 */
import { Effect, Latch, type Scope } from "effect"
import type { Connection, FrameReceiver } from "./Connection.ts"

/** Stops and restarts reading of a connection handed to `receiveFrames`. */
export interface ReadControl {
  /** Stops reading until `resume` (a batch already taken may still come). */
  readonly pause: () => void
  /** Reading goes on. */
  readonly resume: () => void
}

/**
 * Pauses and resumes a connection that pushes (`Connection.receive`), through
 * its own methods, called on the connection (they may be methods, not
 * closures).
 */
export class PushControl implements ReadControl {
  private readonly connection: Connection
  /** @param connection a connection with `receive`, `pauseReading` and `resumeReading`. */
  constructor(connection: Connection) {
    this.connection = connection
  }
  pause(): void {
    this.connection.pauseReading?.()
  }
  resume(): void {
    this.connection.resumeReading?.()
  }
}

/**
 * Starts handing `connection`'s inbound batches to `receiver`, and returns
 * how to pause and resume it. Without `Connection.receive`, a fiber in the
 * current Scope reads for the receiver (interrupted when the Scope closes).
 */
export const receiveFrames = (
  connection: Connection,
  receiver: FrameReceiver
): Effect.Effect<ReadControl, never, Scope.Scope> => {
  if (connection.receive !== undefined) {
    return Effect.sync(() => {
      connection.receive?.(receiver)
      return new PushControl(connection)
    })
  }
  const open = Latch.makeUnsafe(true)
  const pump = Effect.gen(function*() {
    while (true) {
      yield* open.await
      receiver.frames(yield* connection.read)
    }
  }).pipe(Effect.catch((error) => Effect.sync(() => receiver.ended(error))))
  return Effect.as(Effect.forkScoped(pump), {
    pause: () => {
      open.closeUnsafe()
    },
    resume: () => {
      open.openUnsafe()
    }
  })
}
