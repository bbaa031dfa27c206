/**
 * The outbox budgets: how much output the outboxes may hold before senders
 * are slowed — frames per outbox, characters of frame text per outbox, and
 * characters in all outboxes together (an empty outbox always takes one
 * frame) — so sessions that never read cannot make the broker hold
 * gigabytes. It answers the per-frame tests (`full`, `overOwn`,
 * `overTotal`), counts what is queued (`charge`), and keeps the drainers
 * waiting because all outboxes together were full (`waitForTotal`), woken
 * when a writer makes room (`roomMade`).
 *
 * Ownership: the total character count and the total waiters are this
 * module's; it is also the only writer of a `Peer`'s `outboxChars`, through
 * `charge`, which Output, its writer side (OutputWrites.ts), its forced
 * output (ForcedOutput.ts) and its close side (OutputEnd.ts) call in the
 * same synchronous step as they push to or take from an outbox. The limits
 * are copied flat onto the instance, so a test on the per-frame path
 * (`Output.enqueue`, `ParkedDrain.place`) loads as many fields as when they were
 * Output's own (`this.budget.frames` then, `budgets.frames` now): no
 * allocation, no scan. Split from Output.ts (2026-12-06).
 */
import { Deferred, Exit } from "effect"
import { charsOf } from "./OutboundItems.ts"
import type { OutboundItem, Peer } from "./Peer.ts"

/** How many frames and characters of frame text outboxes hold before senders are slowed. */
export interface OutboxBudget {
  /** Frames one outbox holds (`outboxCapacity`; forced output may go past it). */
  readonly frames: number
  /** One outbox (a frame always fits an empty one). */
  readonly perOutbox: number
  /** All outboxes together. */
  readonly total: number
}

/** Whether `peer`'s outbox takes no more output: it was drained at close, or the peer is gone. */
export const isShut = (peer: Peer): boolean => peer.outboxShut || peer.state === "closed"

/** The outboxes' budgets and what is charged against them (see the module header). */
export class OutboxBudgets {
  /** Frames one outbox holds (`OutboxBudget.frames`). */
  private readonly frames: number
  /** Characters one outbox holds (`OutboxBudget.perOutbox`). */
  private readonly perOutbox: number
  /** Characters all outboxes hold together (`OutboxBudget.total`). */
  private readonly total: number
  /** Characters of frame text in every outbox together. */
  private totalChars = 0
  /** Drainers waiting for room because all outboxes together were full. */
  private totalWaiters: Array<Deferred.Deferred<void>> = []

  /** @param budget frames and characters of frame text outboxes hold before senders are slowed. */
  constructor(budget: OutboxBudget) {
    this.frames = budget.frames
    this.perOutbox = budget.perOutbox
    this.total = budget.total
  }

  /** Characters of frame text queued in every outbox together (stats). */
  get queuedChars(): number {
    return this.totalChars
  }

  /** Whether `peer`'s outbox holds as many frames as it may (one frame always fits an empty one). */
  full(peer: Peer): boolean {
    return peer.outbox.length >= this.frames
  }

  /** Whether `chars` more would take `peer`'s outbox past its own budget (one frame always fits). */
  overOwn(peer: Peer, chars: number): boolean {
    return peer.outboxChars > 0 && peer.outboxChars + chars > this.perOutbox
  }

  /** Whether `chars` more in `peer`'s outbox would take all outboxes together past their budget (an empty outbox takes one frame). */
  overTotal(peer: Peer, chars: number): boolean {
    return peer.outboxChars > 0 && this.totalChars + chars > this.total
  }

  /** Adds `chars` (negative: takes them off) to `peer`'s and every outbox's character count. */
  charge(peer: Peer, chars: number): void {
    peer.outboxChars += chars
    this.totalChars += chars
  }

  /**
   * Whether `item` fits `peer`'s outbox now, within its frames, its
   * characters and all outboxes' characters together (an empty outbox takes
   * one frame); false once the outbox is shut.
   */
  hasRoom(peer: Peer, item: OutboundItem): boolean {
    if (isShut(peer) || this.full(peer)) return false
    const chars = charsOf(item)
    return !this.overOwn(peer, chars) && !this.overTotal(peer, chars)
  }

  /** A wait for room in all outboxes together (`overTotal` said no), done at a `roomMade` that makes some. */
  waitForTotal(): Deferred.Deferred<void> {
    const room = Deferred.makeUnsafe<void>()
    this.totalWaiters.push(room)
    return room
  }

  /**
   * `peer`'s writer took its outbox: below the total, or with that outbox
   * empty (it takes one frame whatever the total), every drainer waiting on
   * the total tries again.
   */
  roomMade(peer: Peer): void {
    if (this.totalWaiters.length > 0 && (this.totalChars < this.total || peer.outboxChars === 0)) {
      const all = this.totalWaiters
      this.totalWaiters = []
      for (const waiter of all) Deferred.doneUnsafe(waiter, Exit.void)
    }
  }
}
