/**
 * One connection's `received-v1` confirmations, written apart from its reader.
 * The reader only says how many frames it has read (`owe`); a fiber of the
 * connection (`run`) writes the newest count when it can. Reading must never
 * wait for that write: a broker that stops reading this connection (its held
 * limit) may be waiting for this client to read what it wrote, and a reader
 * that waited to write first would never read again (docs/testing.md, known
 * issue 11). The count is cumulative, so one write of the newest stands for
 * every confirmation owed before it, and the broker ignores a count that is
 * not higher. It also turns the client's bound (ConfirmationPolicy.ts) into
 * that count, from the frame each message came in (`note`, `confirmable`).
 * Owned by one `ClientConnection`; its state is touched only synchronously.
 */
import { Effect, Latch } from "effect"
import type { ConfirmBound } from "./ConfirmationPolicy.ts"
import type { ConnectionLost } from "./errors.ts"
import type { InboundMessage } from "./events.ts"

/** The `received` confirmations of one connection; see the module header. */
export class Confirmations {
  private readonly write: (frames: number) => Effect.Effect<void, ConnectionLost>
  /** Opens when a count is owed that the fiber has not started to write. */
  private readonly owedSignal = Latch.makeUnsafe(false)
  /** The count owed: frames read when the confirmation was asked for, not since. */
  private owed = 0
  /** The highest count whose write completed. */
  private confirmed = 0
  /**
   * The frame each message this connection read came in (`note`), for a
   * bound at an unhandled message. A message another connection read is not
   * here, and bounds this one at nothing.
   */
  private readonly frameOf = new WeakMap<InboundMessage, number>()

  /** @param write writes `{"type":"received","frames":N}` on the connection. */
  constructor(write: (frames: number) => Effect.Effect<void, ConnectionLost>) {
    this.write = write
  }

  /**
   * `message` came in frame `frame` (1-based, `registered` first). A WeakMap
   * entry per message costs 1–2 µs with its collection (docs/performance.md),
   * so the reader notes it only while a bound can fall on a message.
   */
  note(message: InboundMessage, frame: number): void {
    this.frameOf.set(message, frame)
  }

  /** How many of the `read` frames `bound` lets go: all, none, or those before its message's frame (none if another connection read it). */
  confirmable(bound: ConfirmBound, read: number): number {
    return bound === "all" ? read : bound === "none" ? 0 : (this.frameOf.get(bound) ?? 1) - 1
  }

  /** The first `frames` frames read may be confirmed: returns at once. A count not above one owed already changes nothing. */
  owe(frames: number): void {
    if (frames <= this.owed) return
    this.owed = frames
    this.owedSignal.openUnsafe()
  }

  /** Writes each newest count as it is owed, for ever: fork it in the connection's Scope. */
  get run(): Effect.Effect<never> {
    return Effect.forever(Effect.andThen(this.owedSignal.await, this.writeOwed), { disableYield: true })
  }

  /**
   * Writes the count owed if no write of it completed (the fiber was stopped
   * before or in the middle of it): a closing connection calls it after
   * interrupting `run`, ahead of `unregister`.
   */
  get flush(): Effect.Effect<void> {
    return Effect.suspend(() => this.owed > this.confirmed ? this.writeOwed : Effect.void)
  }

  private get writeOwed(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.owedSignal.closeUnsafe()
      const frames = this.owed
      return this.write(frames).pipe(
        Effect.andThen(Effect.sync(() => {
          if (frames > this.confirmed) this.confirmed = frames
        })),
        Effect.ignore
      )
    })
  }
}
