/**
 * Writes one connection's outbox to its socket, with no fiber of its own
 * while the socket takes what it is given.
 *
 * `Output` calls `flush` once per batch of routing that queued output here
 * (and the broker's output fiber for output queued outside a batch): the
 * outbox is taken as one write (`OutputWrites.takeForWrite`) and handed to the
 * socket at once. Only while there is something to wait for does the writer
 * run a fiber, until the outbox is empty again:
 *
 * - the socket did not take the whole write (its buffer is full: the
 *   recipient reads slowly) — the fiber waits for the rest, then goes on;
 * - durable mode, the output reveals changes not stored yet (the write gate,
 *   StoreJournal.ts) — the fiber waits for the commit, then writes;
 * - the connection ends (`end`: `drain`, run by the actor's `finish`).
 *
 * Custody of a write cut short: the batch handed to the socket and not
 * finished is `inFlight` until it completes; when writing is abandoned (the
 * actor's `finish`, or the client's own rejoin, `rejoin-v1`), the Router asks
 * the socket how much of it was handed over (`unfinishedWrite`) and gives the
 * rest back (`Router.abandonWrites`). Taking a batch and recording it in flight is one synchronous step, so
 * no interruption can fall between them (seed 716).
 *
 * A synchronous flush is not re-entered: taking the outbox makes room, and a
 * drainer woken by that runs inside the call and flushes again; the nested
 * call leaves its message to the outer loop, which writes it after the batch
 * it took first (`writing`; test/broker/writer-reentry.test.ts).
 */
import { Effect, Fiber } from "effect"
import type { ConnectionClosed } from "../transport/Connection.ts"
import type { WriteBatch } from "./WriteBatch.ts"
import type { Peer } from "./Peer.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"

/** Starts a fiber in the connection's context. */
export type ForkWriter = (effect: Effect.Effect<void>) => Fiber.Fiber<void>

/** What one step of writing ended with. */
const WROTE = 0
const EMPTY = 1
const GATED = 2
const ENDING = 3
type Step = typeof WROTE | typeof EMPTY | typeof GATED | typeof ENDING | Effect.Effect<Step, ConnectionClosed>

/** One connection's writer; see the module header. */
export class PeerWriter {
  private readonly router: Router
  private readonly peer: Peer
  private readonly fork: ForkWriter
  /** A fiber owns the writing (it waits for the socket or the store): `flush` leaves it to it. */
  private busy = false
  /**
   * `flush` is writing synchronously now. Taking the outbox makes room, and a
   * drainer waiting for room there is resumed at once, inside that call
   * (`Deferred.doneUnsafe` runs a woken fiber inline): its offer queues here
   * and calls `flush` again. That nested call must not write — the batch taken
   * first is not handed to the socket yet, and would go after the newer item —
   * so it leaves the item to the outer loop's next step.
   */
  private writing = false
  /** That fiber, to interrupt at close. */
  private fiber: Fiber.Fiber<void> | undefined = undefined
  /** The batch handed to the socket whose write has not completed. */
  inFlight: WriteBatch | undefined = undefined
  /** Writing is over: the connection was ended (END_OF_OUTPUT), or a write failed. */
  private done = false

  /**
   * @param router whose Output and journal this writer uses, and which it tells what was written.
   * @param peer the connection it writes for.
   * @param fork starts a fiber in the connection's context.
   */
  constructor(router: Router, peer: Peer, fork: ForkWriter) {
    this.router = router
    this.peer = peer
    this.fork = fork
  }

  /** Writes what the outbox holds, synchronously while the socket takes it; else a fiber goes on. */
  flush(): void {
    if (this.busy || this.done || this.writing) return
    this.writing = true
    let step: Step
    try {
      do step = this.step()
      while (step === WROTE)
    } finally {
      this.writing = false
    }
    if (step === EMPTY) return
    this.busy = true
    this.fiber = this.fork(this.guarded(this.continueFrom(step)))
  }

  /**
   * Writes until the outbox is empty or the connection ended, waiting for the
   * socket and the store as needed, after the fiber writing now if there is
   * one (the actor's `finish`, for an `end`).
   */
  drain(): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.done) return Effect.void
      // Run inline inside a synchronous flush (a woken fiber): after it, which then owns the outbox.
      if (this.writing) return Effect.andThen(Effect.yieldNow, this.drain())
      if (this.busy) {
        const fiber = this.fiber
        return fiber === undefined ? Effect.void : Effect.andThen(Fiber.await(fiber), this.drain())
      }
      this.busy = true
      return this.guarded(Effect.suspend(() => this.continueFrom(this.step())))
    })
  }

  /** A write that failed ends writing: the connection is destroyed (its actor gives back what is left). */
  private guarded(effect: Effect.Effect<void, ConnectionClosed>): Effect.Effect<void> {
    return Effect.catch(effect, () =>
      Effect.sync(() => {
        this.done = true
        this.busy = false
        this.fiber = undefined
        closePeer(this.peer, "destroy")
      }))
  }

  /**
   * Writing is over for good (the connection closes, or its client left it: `rejoin-v1`): nothing more
   * is taken from the outbox, and the batch whose write had not completed is returned — once; the
   * caller asks the socket how much of it was handed over (`Router.abandonWrites`). A write that
   * completes after this records nothing: its batch was already settled.
   */
  abandon(): WriteBatch | undefined {
    const batch = this.inFlight
    this.inFlight = undefined
    this.done = true
    return batch
  }

  /** The fiber writing now, if any (the actor interrupts it at close). */
  get running(): Fiber.Fiber<void> | undefined {
    return this.busy ? this.fiber : undefined
  }

  /**
   * One batch: takes the outbox and hands it to the socket, unless there is
   * nothing to write or the store must catch up first. A write the socket did
   * not take at once is returned as the Effect that finishes it.
   */
  private step(): Step {
    const peer = this.peer
    const writes = this.router.output.writes
    if (this.done || peer.state === "closed" || !writes.hasOutput(peer)) return EMPTY
    const journal = this.router.journal
    // Durable: nothing leaves before the changes that preceded it are stored (StoreJournal.ts).
    if (journal !== undefined && !journal.mayWrite(peer)) return GATED
    const batch = writes.takeForWrite(peer)
    if (batch.frames.length > 0) {
      const rest = peer.connection.write(batch.frames)
      if (rest !== undefined) {
        this.inFlight = batch
        return batch.ending ? Effect.andThen(rest, this.completed(batch, ENDING)) : Effect.andThen(rest, this.completed(batch, WROTE))
      }
      this.router.written(peer, batch, batch.frames.length)
    }
    const ending = batch.ending
    // Written at once and recorded: nothing holds the batch now, the next write reuses it.
    writes.recycle(batch)
    return ending ? ENDING : WROTE
  }

  /** The rest of a write completed: record it, then go on as `then`. */
  private completed(batch: WriteBatch, then: typeof WROTE | typeof ENDING): Effect.Effect<Step> {
    return Effect.sync((): Step => {
      // Abandoned meanwhile: its batch was settled then (what the socket had taken, and the rest given back).
      if (this.inFlight !== batch) return EMPTY
      this.inFlight = undefined
      this.router.written(this.peer, batch, batch.frames.length)
      return then
    })
  }

  /** Goes on from `step` until the outbox is empty (then `flush` may write again) or the connection ended. */
  private continueFrom(step: Step): Effect.Effect<void, ConnectionClosed> {
    if (step === WROTE) return Effect.suspend(() => this.continueFrom(this.step()))
    if (step === EMPTY) {
      return Effect.sync(() => {
        this.busy = false
        this.fiber = undefined
      })
    }
    if (step === GATED) {
      const journal = this.router.journal
      if (journal === undefined) return Effect.suspend(() => this.continueFrom(this.step()))
      return Effect.andThen(journal.awaitStored(this.peer), Effect.suspend(() => this.continueFrom(this.step())))
    }
    if (step === ENDING) {
      return Effect.andThen(
        Effect.sync(() => {
          this.done = true
          this.busy = false
          this.fiber = undefined
        }),
        this.peer.connection.end
      )
    }
    return Effect.flatMap(step, (next) => this.continueFrom(next))
  }
}
