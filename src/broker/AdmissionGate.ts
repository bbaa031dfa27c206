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
 */
import { Effect, type Scope } from "effect"

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

  private readonly take: Effect.Effect<Permit> = Effect.callback<Permit>((resume) => {
    if (this.free > 0 && this.head === undefined) {
      this.free--
      return resume(Effect.succeed(this.permit()))
    }
    const waiter: Waiter = { admit: () => resume(Effect.succeed(this.permit())), prev: this.tail, next: undefined }
    if (this.tail === undefined) this.head = waiter
    else this.tail.next = waiter
    this.tail = waiter
    this.queued++
    return Effect.sync(() => this.remove(waiter))
  })

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
