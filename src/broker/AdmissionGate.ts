/**
 * Admission of new connections: at most `capacity` connections may be
 * accepted and not yet registered at once (P15's bound). A connection past the
 * bound is not dropped: it waits, unread, in arrival order, until one of those
 * registers or closes — backpressure instead of loss, so a workflow engine
 * launching many agents together gets every one of them registered.
 *
 * The gate is a FIFO counter owned by the broker. A permit is released
 * synchronously and at most once (`release` is idempotent), early when its
 * connection registers, or by its Scope's finalizer when the connection ends
 * first.
 *
 * While a connection waits it is read only for `health` (P20), which is
 * answered at once — a health probe must never wait behind a storm of
 * connections, or a client would think no broker runs. The first other frame
 * is held, and reading stops until admission. At most MAX_WAITING
 * connections wait; past that a new one is refused with an `error` frame.
 *
 * An admitted connection goes on on a stack of its own (`admit` yields
 * first): a permit is released inside the batch that registered its
 * connection, and resumes the next waiter right there; without the yield
 * that waiter's held `register` would run its batch inside the first one,
 * release the next permit, and so on — hundreds of batches nested on one
 * stack in a registration storm.
 */
import { Effect, type Scope } from "effect"
import { decodeClientFrame, isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import type { Connection, ConnectionError } from "../transport/Connection.ts"
import * as Encode from "./encode.ts"

/** Connections that may wait for admission at once; more are refused. */
export const MAX_WAITING = 4096

/** The text of the `error` frame a connection past MAX_WAITING gets. */
export const TOO_MANY_WAITING = "Too many connections are waiting to register with the intercom broker; try again shortly"

/** One admitted connection's place; give it back with `release`. */
export interface Permit {
  readonly release: () => void
}

interface Waiter {
  readonly admit: () => void
  prev: Waiter | undefined
  next: Waiter | undefined
}

/** A FIFO bound on connections waiting to register; see the module header. */
export class AdmissionGate {
  private free: number
  /** Waiting connections, oldest first (a doubly linked list: an interrupted waiter leaves in O(1)). */
  private head: Waiter | undefined
  private tail: Waiter | undefined
  private queued = 0
  private waits = 0

  constructor(capacity: number) {
    this.free = capacity
  }

  /**
   * Waits (interruptibly, in arrival order) for a place, and returns its
   * permit; the current Scope's closing releases it if nothing did before.
   */
  readonly enter: Effect.Effect<Permit, never, Scope.Scope> = Effect.uninterruptibleMask((restore) =>
    restore(this.take).pipe(
      Effect.tap((permit) => Effect.addFinalizer(() => Effect.sync(permit.release)))
    )
  )

  /** Connections waiting for a place. */
  get waiting(): number {
    return this.queued
  }

  /** Connections that have had to wait for a place since the gate was made. */
  get waited(): number {
    return this.waits
  }

  private readonly take: Effect.Effect<Permit> = Effect.callback<Permit>((resume) => {
    const permit = this.tryEnter()
    if (permit !== undefined) return resume(Effect.succeed(permit))
    const cancel = this.wait((permit) => resume(Effect.succeed(permit)))
    return Effect.sync(cancel)
  })

  /** A place now, if one is free and nobody waits for it; its holder releases it. */
  tryEnter(): Permit | undefined {
    if (this.free === 0 || this.head !== undefined) return undefined
    this.free--
    return this.permit()
  }

  /**
   * Waits, in arrival order, for a place, with no fiber: `admitted` gets the
   * permit when one passes to this waiter — synchronously, inside whatever
   * released it (the registering connection's batch): it must go on on a
   * stack of its own. Returns the way to stop waiting (a no-op once admitted).
   */
  wait(admitted: (permit: Permit) => void): () => void {
    const waiter: Waiter = { admit: () => admitted(this.permit()), prev: this.tail, next: undefined }
    if (this.tail === undefined) this.head = waiter
    else this.tail.next = waiter
    this.tail = waiter
    this.queued++
    this.waits++
    return () => this.remove(waiter)
  }

  private permit(): Permit {
    let held = true
    return {
      release: () => {
        if (!held) return
        held = false
        const next = this.head
        if (next === undefined) {
          this.free++
          return
        }
        // The place passes straight to the first waiter.
        this.remove(next)
        next.admit()
      }
    }
  }

  /** Unlinks a waiter (admitted, or interrupted while waiting); a no-op for one already gone. */
  private remove(waiter: Waiter): void {
    if (waiter.prev === undefined && this.head !== waiter) return
    if (waiter.prev !== undefined) waiter.prev.next = waiter.next
    else this.head = waiter.next
    if (waiter.next !== undefined) waiter.next.prev = waiter.prev
    else this.tail = waiter.prev
    waiter.prev = waiter.next = undefined
    this.queued--
  }
}

/** An admitted connection: its permit, and the frames it sent while waiting (to handle first). */
export interface Admission {
  readonly permit: Permit
  readonly held: ReadonlyArray<string>
}

/**
 * What a waiting connection's frame `text` gets: the `health_ok` text for a
 * health probe, `null` for a malformed one (the connection is dropped), or
 * `undefined` for any other frame (it is held until admission).
 */
export const answerWhileWaiting = (text: string): string | null | undefined => {
  const parsed = parseFrameText(text)
  if (isFrameDecodeError(parsed) || parsed.type !== "health") return undefined
  const frame = decodeClientFrame.health(parsed)
  return isFrameDecodeError(frame) ? null : Encode.healthOkFrame(frame.requestId)
}

/** The connection ended, or sent something that is not a frame, while it waited. */
const READ_FAILED: unique symbol = Symbol("read failed")

/**
 * Waits for `connection`'s admission, answering its `health` frames meanwhile
 * (see the module header). `undefined` when it is refused or ends first; the
 * caller then just lets it close.
 */
export const admit = (gate: AdmissionGate, connection: Connection): Effect.Effect<Admission | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (gate.waiting >= MAX_WAITING) {
      yield* connection.writeAll([Encode.errorFrame(TOO_MANY_WAITING)]).pipe(Effect.ignore)
      yield* connection.end
      return undefined
    }
    const held: Array<string> = []
    const answerHealthWhileWaiting: Effect.Effect<never, ConnectionError | typeof READ_FAILED> = Effect.gen(function*() {
      while (held.length === 0) {
        for (const text of yield* connection.read) {
          if (held.length === 0) {
            const answer = answerWhileWaiting(text)
            if (answer === null) return yield* Effect.fail(READ_FAILED)
            if (answer !== undefined) {
              yield* connection.writeAll([answer])
              continue
            }
          }
          held.push(text)
        }
      }
      return yield* Effect.never
    })
    const permit = yield* Effect.raceFirst(gate.enter, answerHealthWhileWaiting).pipe(
      Effect.catch(() => Effect.succeed(undefined))
    )
    if (permit === undefined) return undefined
    // A stack of its own (see the module header); the permit is already the Scope's to release.
    yield* Effect.yieldNow
    return { permit, held }
  })
