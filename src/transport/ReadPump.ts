/**
 * A pulled connection given the push entry a Unix socket has
 * (`Connection.receive`, `pauseReading`, `resumeReading`), so that a broker
 * can adopt it exactly as it adopts a socket (`BrokerService.adopt`). The
 * in-memory network's listener wraps what it hands to an `Adopter` in it,
 * which is how the simulation drives the broker's fiberless connection path.
 *
 * It owns the connection's read side once `receive` was called: one pump
 * fiber, run by the listener (`fork`), plays the kernel and the event loop —
 * it takes each batch the transport has (`read`) and hands it to the
 * receiver as a socket's `data` event would. The semantics are the
 * socket's (SocketConnection.ts), kept on purpose so the broker cannot tell
 * them apart:
 * - nothing is read before `receive` (a listener's socket starts paused);
 * - `pauseReading` stops the pump taking batches; one it had already taken
 *   is held, in order, with any others, and handed over inside
 *   `resumeReading`, before reading goes on (the receiver may pause again
 *   while it handles one of them);
 * - the end of reading (the peer's close, or frames that are not frames) is
 *   an event after the last batch, at most once; a paused receiver hears of
 *   it after the batches still held, when it resumes;
 * - `destroy` stops the pump (interrupted wherever it waits, as a destroyed
 *   socket's events stop) and then tells a receiver that is not paused that
 *   reading ended, as a socket's `close` event does.
 *
 * The receiver is called from the pump's fiber (or from `resumeReading`'s
 * caller), in plain synchronous code.
 */
import { Effect, Fiber, Latch } from "effect"
import type { OutFrame } from "../protocol/framing.ts"
import {
  type Connection,
  ConnectionClosed,
  type ConnectionError,
  type FrameReceiver,
  type ReadProgress
} from "./Connection.ts"

/** Runs the pump fiber; the owner interrupts it when it stops serving (a listener's Scope closes). */
export type ForkPump = (effect: Effect.Effect<void>) => Fiber.Fiber<void>

/** A pulled `Connection` that also pushes; see the module header. */
class ReadPump implements Connection {
  readonly id: number
  readonly trustedLocal: boolean
  private readonly inner: Connection
  private readonly fork: ForkPump
  private readonly destroyed: () => void
  private readonly onHeld: (() => void) | undefined
  /** Open while the pump may take the next batch (the socket is flowing). */
  private readonly flowing = Latch.makeUnsafe(true)
  private pump: Fiber.Fiber<void> | undefined = undefined
  private receiver: FrameReceiver | undefined = undefined
  /** The receiver asked to stop reading (`pauseReading`). */
  private receivePaused = false
  /** Batches taken while the receiver was paused (or behind such ones), oldest first. */
  private held: Array<ReadonlyArray<string>> | undefined = undefined
  /** Why reading ended, once it did. */
  private failure: ConnectionError | undefined = undefined
  /** The receiver was told reading ended. */
  private receiverEnded = false

  constructor(inner: Connection, fork: ForkPump, destroyed: () => void, onHeld: (() => void) | undefined) {
    this.inner = inner
    this.id = inner.id
    this.trustedLocal = inner.trustedLocal
    this.fork = fork
    this.destroyed = destroyed
    this.onHeld = onHeld
  }

  get read(): Connection["read"] {
    return this.inner.read
  }

  receive(receiver: FrameReceiver): void {
    if (this.receiver !== undefined) return
    this.receiver = receiver
    this.pump = this.fork(this.run())
  }

  pauseReading(): void {
    if (this.receiver === undefined) return
    this.receivePaused = true
    this.flowing.closeUnsafe()
  }

  resumeReading(): void {
    const receiver = this.receiver
    if (receiver === undefined) return
    this.receivePaused = false
    const held = this.held
    if (held !== undefined) {
      // The receiver may pause again while it handles one of them.
      while (!this.receivePaused) {
        const batch = held.shift()
        if (batch === undefined) break
        receiver.frames(batch)
      }
      if (held.length > 0) return
      this.held = undefined
    }
    if (this.receivePaused) return
    if (this.failure !== undefined) return this.endReceiver(receiver)
    this.flowing.openUnsafe()
  }

  /** The pump: each batch the transport has, as a `data` event; then the end, as one. */
  private run(): Effect.Effect<void> {
    const read = this.inner.read
    const flowing = this.flowing
    const pump = this
    return Effect.gen(function*() {
      while (true) {
        // Paused again meanwhile: wait again.
        while (!flowing.isOpen()) {
          yield* flowing.await
          // `openUnsafe` resumes the pump inside `resumeReading`: read on from a stack of its own,
          // as a socket's reading goes on in a later event, never inside its receiver's call.
          yield* Effect.yieldNow
        }
        pump.received(yield* read)
      }
    }).pipe(Effect.catch((error) => Effect.sync(() => pump.ended(error))))
  }

  /** A batch the pump took: handed over at once, or held behind a pause or held batches. */
  private received(frames: ReadonlyArray<string>): void {
    const receiver = this.receiver
    if (receiver === undefined) return
    if (this.receivePaused || this.held !== undefined) {
      ;(this.held ??= []).push(frames)
      this.flowing.closeUnsafe()
      this.onHeld?.()
      return
    }
    receiver.frames(frames)
  }

  /** Reading ended: the receiver hears of it now, or after what it still holds (when it resumes). */
  private ended(error: ConnectionError): void {
    this.failure ??= error
    const receiver = this.receiver
    if (receiver !== undefined && !this.receivePaused && this.held === undefined) this.endReceiver(receiver)
  }

  private endReceiver(receiver: FrameReceiver): void {
    const failure = this.failure
    if (failure === undefined || this.receiverEnded) return
    this.receiverEnded = true
    receiver.ended(failure)
  }

  write(frames: ReadonlyArray<OutFrame>): Effect.Effect<void, ConnectionClosed> | undefined {
    return this.inner.write(frames)
  }

  writeAll(frames: ReadonlyArray<OutFrame>): Effect.Effect<void, ConnectionClosed> {
    return this.inner.writeAll(frames)
  }

  unfinishedWrite(): number | undefined {
    return this.inner.unfinishedWrite()
  }

  readProgress(): ReadProgress {
    const progress = this.inner.readProgress()
    if (this.receiver === undefined) return progress
    return { frames: progress.frames, pending: progress.pending, reading: !this.receivePaused }
  }

  readPending(): number {
    return this.inner.readPending()
  }

  get end(): Effect.Effect<void> {
    return this.inner.end
  }

  get destroy(): Effect.Effect<void> {
    return Effect.andThen(
      this.inner.destroy,
      Effect.suspend(() => {
        this.destroyed()
        const pump = this.pump
        return pump === undefined ? Effect.void : Fiber.interrupt(pump)
      })
    ).pipe(Effect.andThen(Effect.sync(() => this.ended(new ConnectionClosed({ clean: false, cause: "connection destroyed" })))))
  }
}

/**
 * `connection`, which can only be pulled, with a push entry as a Unix
 * socket's (see the module header): its reads, once `receive` was called,
 * are done by a pump fiber that `fork` runs. `destroyed` is called when its
 * owner destroys it (a listener forgets it then); `held`, if given, each
 * time the pump holds a batch it took because the receiver is paused.
 */
export const withReadPump = (
  connection: Connection,
  fork: ForkPump,
  destroyed: () => void = () => {},
  held?: () => void
): Connection => new ReadPump(connection, fork, destroyed, held)
