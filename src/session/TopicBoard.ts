/**
 * The receiver side of topics (C-TOP-6…12, 14): what one session knows of the
 * topics it subscribes to, and when a record may interrupt it.
 *
 * - One current record per (sender, topic). A lower revision than the kept
 *   one is ignored quietly (C-TOP-6); a record of a topic not subscribed is
 *   dropped quietly (C-TOP-7).
 * - `update` only replaces the quiet record (C-TOP-8). `blocker` and
 *   `decision` interrupt; `release` interrupts only an `awaitRelease`
 *   subscription (C-TOP-9). A publisher that left (`available: false`) never
 *   interrupts and is never a release (C-TOP-12).
 * - Each (sender, topic, revision) interrupts at most once: the kept
 *   `notifiedRevision` (C-TOP-10). Records a subscription starts with are
 *   current state, read without replaying their interruptions (C-TOP-11).
 *
 * Plain synchronous state, owned by one session generation's topic runtime
 * (`Topics.ts`); direct messages never pass through here (C-TOP-14).
 */
import type { TopicEntry, TopicSubscription } from "../protocol/topics.ts"

/** A kept record and the highest revision of it that interrupted this session. */
export interface HeldRecord {
  readonly entry: TopicEntry
  /** The highest revision of this (sender, topic) that interrupted, or was current when subscribing. */
  readonly notifiedRevision: number
}

/** What the board decided about a received record. */
export type Received =
  /** Not subscribed, or older than the kept revision: dropped quietly. */
  | { readonly _tag: "Ignored" }
  /** Kept as the quiet, inspectable record; nobody is woken. */
  | { readonly _tag: "Quiet" }
  /** Kept, and the session should be interrupted (steered) with it. */
  | { readonly _tag: "Interrupt" }

const keyOf = (senderId: string, topic: string) => `${senderId}\u0000${topic}`

/** The topics one session subscribes to and the records it holds; see the module header. */
export class TopicBoard {
  private readonly subscriptions = new Map<string, boolean>()
  private readonly records = new Map<string, HeldRecord>()

  /** This session's subscriptions, in the order they were made. */
  get subscribed(): ReadonlyArray<TopicSubscription> {
    return [...this.subscriptions].map(([topic, awaitRelease]) => ({ topic, awaitRelease }))
  }

  /** Held records (of `topic`, when given), oldest kept first. */
  held(topic?: string): ReadonlyArray<HeldRecord> {
    const all = [...this.records.values()]
    return topic === undefined ? all : all.filter((held) => held.entry.record.topic === topic)
  }

  /**
   * A subscription starts (or changes its `awaitRelease`) with the topic's
   * current records: kept as read, never interrupting (C-TOP-11).
   */
  subscribe(topic: string, awaitRelease: boolean, current: ReadonlyArray<TopicEntry>): void {
    this.subscriptions.set(topic, awaitRelease)
    for (const entry of current) {
      if (entry.record.topic !== topic) continue
      const key = keyOf(entry.from.id, topic)
      const held = this.records.get(key)
      if (held !== undefined && entry.record.revision < held.entry.record.revision) continue
      this.records.set(key, {
        entry,
        notifiedRevision: Math.max(held?.notifiedRevision ?? 0, entry.record.revision)
      })
    }
  }

  /** The subscription ends; its records are no longer kept. */
  unsubscribe(topic: string): void {
    this.subscriptions.delete(topic)
    for (const [key, held] of this.records) if (held.entry.record.topic === topic) this.records.delete(key)
  }

  /** A record arrived from the broker: keep it or not, and whether it interrupts (see the module header). */
  receive(entry: TopicEntry): Received {
    const { record } = entry
    const awaitRelease = this.subscriptions.get(record.topic)
    if (awaitRelease === undefined) return { _tag: "Ignored" }
    const key = keyOf(entry.from.id, record.topic)
    const held = this.records.get(key)
    if (held !== undefined && record.revision < held.entry.record.revision) return { _tag: "Ignored" }
    const notified = held?.notifiedRevision ?? 0
    const interrupts = entry.available && record.revision > notified &&
      (record.event === "blocker" || record.event === "decision" || (record.event === "release" && awaitRelease))
    this.records.set(key, { entry, notifiedRevision: interrupts ? record.revision : notified })
    return interrupts ? { _tag: "Interrupt" } : { _tag: "Quiet" }
  }

  /** Restores saved state (a reload): subscriptions and held records with their `notifiedRevision`. */
  restore(subscriptions: ReadonlyArray<TopicSubscription>, records: ReadonlyArray<HeldRecord>): void {
    for (const subscription of subscriptions) this.subscriptions.set(subscription.topic, subscription.awaitRelease)
    for (const held of records) {
      const key = keyOf(held.entry.from.id, held.entry.record.topic)
      const kept = this.records.get(key)
      if (kept === undefined || kept.entry.record.revision <= held.entry.record.revision) this.records.set(key, held)
    }
  }
}
