/**
 * Admission of new connections: at most `capacity` connections may be
 * accepted and not yet registered at once (P15's bound). A connection past the
 * bound is not dropped: it waits, in arrival order, until one of those
 * registers or closes — backpressure instead of loss, so a workflow engine
 * launching many agents together gets every one of them registered.
 *
 * The gate is a FIFO counter owned by the broker, with no fiber: a place now
 * (`tryEnter`), or a wait in its queue (`wait`), withdrawn in O(1). A permit
 * is released synchronously and at most once (`release` is idempotent),
 * early when its connection registers, or when the connection ends first (its
 * Scope's finalizer, or `AdoptedConnections.readerStopped` in Adopted.ts).
 *
 * While a connection waits, a `Waiting` (Waiting.ts) is its receiver, on
 * both connection paths: it answers `health` (P20) at once — a health probe
 * must never wait behind a storm of connections, or a client would think no
 * broker runs — holds the first other frame and all after it, up to the held
 * limit, and sees the connection's end: a connection that closes while it
 * waits withdraws its wait and never registers. At most MAX_WAITING
 * connections wait; past that a new one is refused with an `error` frame.
 *
 * An admitted connection goes on on a stack of its own (`admit` in
 * Waiting.ts, and Adopted.ts, yield first): a permit is released inside the
 * batch that registered its connection, and resumes the next waiter right
 * there; without the yield that waiter's held `register` would run its batch
 * inside the first one, release the next permit, and so on — hundreds of
 * batches nested on one stack in a registration storm.
 */

/** Connections that may wait for admission at once; more are refused. */
export const MAX_WAITING = 4096

/** The text of the `error` frame a connection past MAX_WAITING gets. */
export const TOO_MANY_WAITING = "Too many connections are waiting to register with the intercom broker; try again shortly"

/**
 * One admitted connection's place; give it back with `release`. A method that
 * needs its permit: the `this: Permit` makes tsc refuse a detached call
 * (`const r = permit.release; r()`), which method syntax alone would let by.
 */
export interface Permit {
  release(this: Permit): void
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
  private withdrawals = 0

  constructor(capacity: number) {
    this.free = capacity
  }

  /** Connections waiting for a place. */
  get waiting(): number {
    return this.queued
  }

  /** Connections that have had to wait for a place since the gate was made. */
  get waited(): number {
    return this.waits
  }

  /** Waits stopped before a place passed to them (the connection ended meanwhile) since the gate was made. */
  get withdrawn(): number {
    return this.withdrawals
  }

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
    return () => {
      if (this.remove(waiter)) this.withdrawals++
    }
  }

  private permit(): Permit {
    return new GatePermit(this)
  }

  /** A permit was released: its place passes straight to the first waiter, else is free again. */
  passOn(): void {
    const next = this.head
    if (next === undefined) {
      this.free++
      return
    }
    this.remove(next)
    next.admit()
  }

  /** Unlinks a waiter (admitted, or its wait withdrawn); false, doing nothing, for one already gone. */
  private remove(waiter: Waiter): boolean {
    if (waiter.prev === undefined && this.head !== waiter) return false
    if (waiter.prev !== undefined) waiter.prev.next = waiter.next
    else this.head = waiter.next
    if (waiter.next !== undefined) waiter.next.prev = waiter.prev
    else this.tail = waiter.prev
    waiter.prev = waiter.next = undefined
    this.queued--
    return true
  }
}

/**
 * A place held at `gate`. A class, not a closure: every admitted connection
 * keeps its permit until it closes, and a closure with its context costs
 * more than this object per idle connection (docs/performance.md, "Idle
 * sessions, sixty-ninth stop").
 */
class GatePermit implements Permit {
  private gate: AdmissionGate | undefined
  constructor(gate: AdmissionGate) {
    this.gate = gate
  }
  /** Gives the place back, once: a second call does nothing. */
  release(this: GatePermit): void {
    const gate = this.gate
    if (gate === undefined) return
    this.gate = undefined
    gate.passOn()
  }
}
