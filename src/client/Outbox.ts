/**
 * One client connection's write side: every frame the client writes goes
 * through it (sends, requests, receipts, presence, `received`
 * confirmations), in the order it was queued.
 *
 * It owns the frames not yet written, the one transport write that may be
 * waiting for room, and the fiber that finishes such a write (`run`). A
 * `Connection` takes one write at a time (a socket keeps one waiter for a
 * write the kernel did not take whole; docs/testing.md, known issue 16), so
 * a write starts only when none waits, and never from two places at once.
 *
 * - `write` (a caller that waits for its frames to be handed over: sends,
 *   requests) writes at once, together with every frame queued before it,
 *   when no write waits; otherwise its frames wait behind that write.
 * - `post` (frames nothing waits on: receipts) only queues: the fiber writes
 *   what is queued once the fibers the scheduler runs before it had their
 *   turn, so a receive burst's receipts go out in one transport write (one
 *   syscall), not one each; an earlier `write` takes them along.
 * - While a write waits for room, everything queued meanwhile goes out as
 *   one write after it.
 * - While the connection dispatches a received batch (`holdWhile`), a
 *   `write` only queues: the callers the batch's answers resume write their
 *   next frames from inside that dispatch, and they go out as one write when
 *   it ends, not one each (docs/performance.md, "The client's send path,
 *   twelfth stop").
 * - When the connection closes (`drop`, from the connection's `failPending`,
 *   before it fails what waits for an answer; or as a transport write fails,
 *   which says so first), the frames still queued are never written: each
 *   `write` among them is told so (`takenBack`), just as one its caller gave
 *   up on, so what the close fails knows they reached no peer (helper
 *   cancelc).
 */
import { Deferred, Effect, Exit, Latch } from "effect"
import type { Connection } from "../transport/Connection.ts"
import { ConnectionLost } from "./errors.ts"

/** Why a batch was not handed over: the connection closed, or the writer stopped. */
const lost: Exit.Exit<void, "lost"> = Exit.fail("lost")

/**
 * The fiber's yield before it writes posted frames: behind every task of the
 * default priority (0) the scheduler runs in the same batch, so the fibers
 * woken with it (the hand-off that acknowledges what the inbound fiber
 * admitted) post first.
 */
const AFTER_OTHERS = Effect.yieldNowWith(1)

/** A transport write that did not complete at once, and who waits for its frames. */
interface Waiting {
  readonly rest: Effect.Effect<void, unknown>
  readonly done: Deferred.Deferred<void, "lost"> | undefined
  /** The `takenBack`s of the writes in it, told if the transport refused it whole; undefined: none. */
  readonly takenBack: ReadonlySet<() => void> | undefined
}

/**
 * The write side of one connection (see the module header). Owned by one
 * `ClientConnection`, whose Scope runs `run`; its state is touched only by
 * synchronous code.
 */
export class Outbox {
  private readonly connection: Connection
  /** Frames queued and not yet written, oldest first. */
  private queued: Array<string> = []
  /** Told, when the frames now queued are dropped unwritten, by each `write` among them that asked (`takenBack`). */
  private queuedTakenBack = new Set<() => void>()
  /** Completes when the frames now queued are handed over; made when a `write` first waits on them. */
  private queuedDone: Deferred.Deferred<void, "lost"> | undefined = undefined
  /** The write the transport did not take whole, until it completes: no other starts meanwhile. */
  private waiting: Waiting | undefined = undefined
  /** Opens when the fiber has work: a waiting write, or posted frames. */
  private readonly wake = Latch.makeUnsafe(false)
  /** The fiber stopped: nothing queued from now on is written. */
  private stopped = false
  /** A transport write is being made (`writeQueued` is on the stack): a caller it resumes only queues. */
  private writing = false
  /** A received batch is being dispatched (`holdWhile`): writes queue until it ends. */
  private holding = false

  constructor(connection: Connection) {
    this.connection = connection
  }

  /**
   * Writes `texts` behind every frame queued before them and completes once
   * they are handed over (for a socket: taken by the kernel). Fails with
   * `ConnectionLost` (naming `operation`) when the connection closed first.
   * Interrupted while its frames still wait behind a write, it takes them
   * back: they are never written, and `takenBack` is called. Interrupted
   * once they are in a write the transport did not take whole, they go out
   * as that write ends: nothing is called. Still queued when the connection
   * closes (`drop`, or the fiber's end), they are never written: `takenBack`
   * is called then, and the write fails. The same when the transport refuses
   * their write whole (not one frame of it reached the socket), and at once
   * for a write made after the outbox stopped.
   */
  write(texts: ReadonlyArray<string>, operation: string, takenBack?: () => void): Effect.Effect<void, ConnectionLost> {
    return Effect.suspend(() => {
      if (this.stopped) {
        takenBack?.()
        return Effect.fail(new ConnectionLost({ operation }))
      }
      const done = this.queuedDone ??= Deferred.makeUnsafe<void, "lost">()
      for (const text of texts) this.queued.push(text)
      // A fresh closure per write: the set tells each apart, and its own withdrawal takes out only its own.
      const told = takenBack === undefined ? undefined : () => takenBack()
      if (told !== undefined) this.queuedTakenBack.add(told)
      this.writeQueued()
      return Deferred.await(done).pipe(
        Effect.mapError(() => new ConnectionLost({ operation })),
        Effect.onInterrupt(() =>
          Effect.sync(() => {
            if (!this.withdraw(texts, done)) return
            if (told !== undefined) this.queuedTakenBack.delete(told)
            takenBack?.()
          })
        )
      )
    })
  }

  /**
   * Queues `texts` without waiting for them to be written: false when the
   * fiber has stopped (the connection is closing or closed), and nothing
   * was queued. A frame queued here that the connection's close cuts off is
   * lost without a word: for frames that nothing waits on (receipts).
   */
  post(texts: ReadonlyArray<string>): boolean {
    if (this.stopped) return false
    for (const text of texts) this.queued.push(text)
    this.wake.openUnsafe()
    return true
  }

  /**
   * Runs `dispatch` (the synchronous dispatch of one received batch) with
   * writes held, then writes what it queued as one transport write.
   */
  holdWhile(dispatch: () => void): void {
    if (this.holding) return dispatch()
    this.holding = true
    try {
      dispatch()
    } finally {
      this.holding = false
      this.writeQueued()
    }
  }

  /**
   * Finishes writes the transport did not take whole, and writes posted
   * frames, for ever: fork it in the connection's Scope. Woken for posted
   * frames (at once, from the posting caller's stack), it yields first, behind
   * every other task of the scheduler's batch, so that they can add to it.
   */
  get run(): Effect.Effect<never> {
    return Effect.forever(Effect.andThen(this.wake.await, this.turn), { disableYield: true }).pipe(
      Effect.ensuring(Effect.sync(() => this.drop()))
    )
  }

  /**
   * The connection closed: nothing queued from now on, or queued now, is written. Each `write` whose frames
   * were still queued is told (`takenBack`) before its waiter fails — synchronously, so a caller of `drop`
   * that then fails what waits for an answer finds every frame that never left already marked. A write the
   * transport did not take whole is not among them: it may have reached the peer. Idempotent; the fiber's
   * end does it too.
   */
  drop(): void {
    this.stopped = true
    const done = this.queuedDone
    const takenBack = this.queuedTakenBack
    this.queued = []
    this.queuedDone = undefined
    this.queuedTakenBack = new Set()
    for (const told of takenBack) told()
    if (done !== undefined) Deferred.doneUnsafe(done, lost)
  }

  /** Takes `texts` back out of the queue if they were not written yet: false when they were (or are being). */
  private withdraw(texts: ReadonlyArray<string>, done: Deferred.Deferred<void, "lost">): boolean {
    if (this.queuedDone !== done) return false
    const queued = this.queued
    for (const text of texts) {
      const at = queued.lastIndexOf(text)
      if (at >= 0) queued.splice(at, 1)
    }
    return true
  }

  /**
   * Writes everything queued as one transport write, unless a write is waiting or being made, or writes are held.
   * Waiters are resumed only once the state is settled: a resumed caller may write again at once
   * (re-entrantly), and must find the waiting write, or queue behind the one being made.
   */
  private writeQueued(): void {
    if (this.waiting !== undefined || this.writing || this.holding) return
    this.writing = true
    const completed: Array<Deferred.Deferred<void, "lost">> = []
    while (this.queued.length > 0 && this.waiting === undefined) {
      const frames = this.queued
      const done = this.queuedDone
      this.queued = []
      this.queuedDone = undefined
      // Handed to the transport: theirs to take back only if the transport refuses the whole write (`turn`). An
      // empty set stays the queue's and is not the batch's.
      const takenBack = this.queuedTakenBack.size > 0 ? this.queuedTakenBack : undefined
      if (takenBack !== undefined) this.queuedTakenBack = new Set()
      const rest = this.connection.write(frames)
      // The connection is full (or refused the write): the fiber finishes it; later frames queue behind it.
      if (rest !== undefined) this.waiting = { rest, done, takenBack }
      else if (done !== undefined) completed.push(done)
    }
    this.writing = false
    if (this.waiting !== undefined) this.wake.openUnsafe()
    for (const done of completed) Deferred.doneUnsafe(done, Exit.void)
  }

  /** One turn of the fiber: the waiting write to its end, then what was posted. */
  private get turn(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.wake.closeUnsafe()
      const waiting = this.waiting
      if (waiting === undefined) return Effect.andThen(AFTER_OTHERS, this.writePosted)
      return waiting.rest.pipe(
        Effect.onExit((exit) =>
          Effect.sync(() => {
            this.waiting = undefined
            // What queued behind it goes next, as one write (not from a fiber being stopped). A write that failed
            // says the connection is closed: nothing queued behind it can leave, and its writers are told so now,
            // before the reader sees the close — handed to the refused transport, they would count as maybe
            // written (helper cancelc). When not one whole frame of the failed write reached the socket (the
            // transport refused it, or the link died first), its own writers were not written either (review
            // revar AR2); a partial frame is dropped by the broker's decoder.
            if (Exit.isFailure(exit) && !Exit.hasInterrupts(exit)) {
              if (waiting.takenBack !== undefined && this.connection.unfinishedWrite() === 0) {
                for (const told of waiting.takenBack) told()
              }
              this.drop()
            }
            else if (!Exit.hasInterrupts(exit)) this.writeQueued()
            if (waiting.done !== undefined) Deferred.doneUnsafe(waiting.done, Exit.isSuccess(exit) ? Exit.void : lost)
          })
        ),
        Effect.ignore
      )
    })
  }

  private get writePosted(): Effect.Effect<void> {
    return Effect.sync(() => this.writeQueued())
  }
}
