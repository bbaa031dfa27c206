/**
 * Open asks (P61–P64) as data: message key → who asked whom, until when. A
 * reply is accepted only along an open edge, and a mutual ask is refused
 * while the reverse edge is open (counted per pair). Each edge has its own
 * deadline — the broker's ask timeout, or the one its asker announced
 * (`ask-timeout-v1`) — and expires exactly then on the broker's clock (its
 * `dueAt`: the deadline itself is a stamp, records.ts), in that order,
 * through a min-heap (`nextDeadline` tells the broker's expiry fiber when to
 * prune); edges outlive disconnects (P61).
 */
import type { AskEdge, Mail } from "../store/records.ts"
import type { BrokerStamps } from "./BrokerStamps.ts"

/** An open ask: its type lives with the other stored records (src/store/records.ts). */
export type { AskEdge } from "../store/records.ts"

/**
 * When `edge` fires on the broker's clock (ms): its `dueAt`, which every edge the broker opens or restores has;
 * its `deadline` only for an edge built without one (a test's).
 */
export const dueOf = (edge: AskEdge): number => edge.dueAt ?? edge.deadline

/**
 * When the ask `mail` (one with `askTimeoutMs`) is due on the broker's clock (ms): its `askDueAt` (stored with it),
 * or, for a row of this stop's earlier builds without one, its receipt plus its timeout less how far the last run's
 * stamps led this clock (BrokerStamps.restoredLead).
 */
export const askDueOf = (mail: Mail, stamps: BrokerStamps): number =>
  mail.askDueAt ?? mail.brokerReceivedAt + (mail.askTimeoutMs ?? 0) - stamps.restoredLead

/**
 * A restored ask `mail` whose stored due time (`askDueAt`, on the last run's clock) lies beyond its own timeout from
 * `now`, with its due time brought down to that; any other mail as it is. A clock set back across a restart must not
 * keep an ask open by the step (review revbz bz1, as Router.restore bounds the edges): a staged ask's edge opens at
 * it (Asks.openStaged), and a copy of an ask is judged stale by it (StaleAsks.pastDeadline). A reply's `answers`
 * edge likewise, by its ask's timeout (`deadline - openedAt`): its ask is known answered until it (Asks.restoreAnswered)
 * and opens again at it when the reply is lost (Asks.answerLost; review revch CH1, CH4).
 */
export const boundedAsk = (mail: Mail, now: number): Mail => {
  const asked = mail.askDueAt !== undefined && mail.askTimeoutMs !== undefined && mail.askDueAt > now + mail.askTimeoutMs
    ? { ...mail, askDueAt: now + mail.askTimeoutMs }
    : mail
  const edge = asked.answers
  if (edge === undefined || edge.openedAt === undefined) return asked
  const latest = now + (edge.deadline - edge.openedAt)
  return dueOf(edge) > latest ? { ...asked, answers: { ...edge, dueAt: latest } } : asked
}

/**
 * When `edge`'s ask was received on the broker's clock (ms): its due time less its timeout (`deadline - openedAt`,
 * both on one scale); undefined for an edge stored without `openedAt`. What operators are shown (stats, observe).
 */
export const askedAtOf = (edge: AskEdge): number | undefined =>
  edge.openedAt === undefined ? undefined : dueOf(edge) - (edge.deadline - edge.openedAt)

const pairKey = (askerKey: string, targetKey: string) => `${askerKey}\u0001${targetKey}`
const askedKey = (targetKey: string, messageId: string) => `${targetKey}\u0002${messageId}`

/** Due times of open edges (`dueOf`), earliest first; entries of edges closed early are skipped lazily. */
class DeadlineHeap {
  private entries: Array<AskEdge> = []

  get size(): number {
    return this.entries.length
  }

  push(edge: AskEdge): void {
    const entries = this.entries
    entries.push(edge)
    let i = entries.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (dueOf(entries[parent]!) <= dueOf(edge)) break
      entries[i] = entries[parent]!
      i = parent
    }
    entries[i] = edge
  }

  peek(): AskEdge | undefined {
    return this.entries[0]
  }

  pop(): void {
    const entries = this.entries
    const last = entries.pop()
    if (last === undefined || entries.length === 0) return
    let i = 0
    while (true) {
      const left = 2 * i + 1
      if (left >= entries.length) break
      const right = left + 1
      const child = right < entries.length && dueOf(entries[right]!) < dueOf(entries[left]!) ? right : left
      if (dueOf(entries[child]!) >= dueOf(last)) break
      entries[i] = entries[child]!
      i = child
    }
    entries[i] = last
  }

  /** Rebuilds the heap from the edges still open (drops entries of closed ones). */
  rebuild(open: Iterable<AskEdge>): void {
    this.entries = []
    for (const edge of open) this.push(edge)
  }
}

const decrement = (counts: Map<string, number>, key: string): void => {
  const count = (counts.get(key) ?? 1) - 1
  if (count <= 0) counts.delete(key)
  else counts.set(key, count)
}

/** How many edges an `openPerAsked` entry stands for. */
const countOf = (asked: AskEdge | number): number => typeof asked === "number" ? asked : 1

/**
 * Told of a durable question's edge opened (`1`) or closed (`-1`, early or at its deadline), with the edge (its
 * asker's key, its key and its question id).
 *
 * @category models
 * @since 0.1.0
 */
export type QuestionEdgeWatch = (edge: AskEdge, delta: 1 | -1) => void

/** Told of edges opened and closed early (the store journal, when the broker is durable); not of expiry. */
export interface EdgeObserver {
  readonly opened: (edge: AskEdge) => void
  readonly closed: (messageKey: string) => void
}

/** The open ask edges, with per-pair counts and exact deadline expiry. */
export class AskEdges {
  private readonly edges = new Map<string, AskEdge>()
  private readonly openPerPair = new Map<string, number>()
  /**
   * Open asks by the asked session and message id (a reply to the wrong asker
   * is told so): the edge while it is the only one, else how many there are.
   */
  private readonly openPerAsked = new Map<string, AskEdge | number>()
  /** Open asks per asker (bounded: MAX_ASKS_PER_SESSION). */
  private readonly openPerAsker = new Map<string, number>()
  private readonly deadlines = new DeadlineHeap()
  /** Open edges whose asker is told when they expire (`AskEdge.notify`). */
  private notifying = 0
  private readonly observer: EdgeObserver | undefined
  /** Told of each durable question's edge opened and closed, by its asker's key (`watchQuestions`). */
  private questionWatch: QuestionEdgeWatch | undefined

  constructor(observer?: EdgeObserver) {
    this.observer = observer
  }

  /** Open edges. */
  get size(): number {
    return this.edges.size
  }

  /**
   * When the oldest open edge's ask was received on the broker's clock (`askedAtOf`), or undefined when none is
   * open or none knows it. A walk over the open edges: for metrics collection, never for the per-frame path.
   */
  oldestAskedAt(): number | undefined {
    let oldest: number | undefined
    for (const edge of this.edges.values()) {
      const at = askedAtOf(edge)
      if (at !== undefined && (oldest === undefined || at < oldest)) oldest = at
    }
    return oldest
  }

  /** Every open edge, in the order it was opened (oldest first, apart from edges restored at startup). */
  values(): IterableIterator<AskEdge> {
    return this.edges.values()
  }

  get(messageKey: string): AskEdge | undefined {
    return this.edges.get(messageKey)
  }

  open(edge: AskEdge): void {
    this.observer?.opened(edge)
    this.keep(edge)
  }

  /** An edge found stored at startup: open again, not stored again. */
  restore(edge: AskEdge): void {
    this.keep(edge)
  }

  private keep(edge: AskEdge): void {
    this.remove(edge.messageKey)
    this.edges.set(edge.messageKey, edge)
    this.deadlines.push(edge)
    const pair = pairKey(edge.askerKey, edge.targetKey)
    this.openPerPair.set(pair, (this.openPerPair.get(pair) ?? 0) + 1)
    const asked = askedKey(edge.targetKey, edge.messageId)
    const others = this.openPerAsked.get(asked)
    this.openPerAsked.set(asked, others === undefined ? edge : countOf(others) + 1)
    this.openPerAsker.set(edge.askerKey, (this.openPerAsker.get(edge.askerKey) ?? 0) + 1)
    if (edge.notify === true) this.notifying++
    if (edge.question === true) this.questionWatch?.(edge, 1)
    // Closed edges leave their heap entries behind; squeeze them out before they outnumber the open ones.
    if (this.deadlines.size > 64 && this.deadlines.size > 2 * this.edges.size) this.deadlines.rebuild(this.edges.values())
  }

  delete(messageKey: string): void {
    if (this.remove(messageKey)) this.observer?.closed(messageKey)
  }

  private remove(messageKey: string): boolean {
    const edge = this.edges.get(messageKey)
    if (edge === undefined) return false
    this.edges.delete(messageKey)
    this.closePair(edge)
    return true
  }

  /** Does `askerKey` wait for `targetKey`, not counting the edge `exceptKey`? */
  isWaiting(askerKey: string, targetKey: string, exceptKey: string | undefined): boolean {
    let count = this.openPerPair.get(pairKey(askerKey, targetKey)) ?? 0
    if (exceptKey !== undefined) {
      const excepted = this.edges.get(exceptKey)
      if (excepted !== undefined && excepted.askerKey === askerKey && excepted.targetKey === targetKey) count--
    }
    return count > 0
  }

  /** Asks `askerKey` has open. */
  openOf(askerKey: string): number {
    return this.openPerAsker.get(askerKey) ?? 0
  }

  /** Is `targetKey` asked something with id `messageId` (by anyone)? */
  isAsked(targetKey: string, messageId: string): boolean {
    return this.openPerAsked.has(askedKey(targetKey, messageId))
  }

  /**
   * The open edge asking `targetKey` the message `messageId`, when it is the
   * only such edge and was since it opened; undefined otherwise.
   */
  soleAsk(targetKey: string, messageId: string): AskEdge | undefined {
    const asked = this.openPerAsked.get(askedKey(targetKey, messageId))
    return typeof asked === "object" ? asked : undefined
  }

  /**
   * The earliest due time in the heap (broker clock, `dueOf`), or undefined when it is empty: when
   * `prune` next has something to do. May be a closed edge's leftover entry
   * (then `prune` only drops it), never later than the earliest open edge's.
   */
  nextDeadline(): number | undefined {
    const next = this.deadlines.peek()
    return next === undefined ? undefined : dueOf(next)
  }

  /**
   * From now on `watch` is told of every durable question's edge (`AskEdge.question`) opened and closed, with
   * the edge, those open already first: Questions.ts counts them per asker for its send stage (review revdb DB1) and
   * finds a question's edge by its id (helper fixqs3).
   */
  watchQuestions(watch: QuestionEdgeWatch): void {
    this.questionWatch = watch
    for (const edge of this.edges.values()) if (edge.question === true) watch(edge, 1)
  }

  /** How many open edges tell their asker when they expire (`AskEdge.notify`). */
  get notifyingCount(): number {
    return this.notifying
  }

  /** Closes every edge due by `now` (`dueOf(edge) <= now`, the broker's clock), telling `expired` of each with `now`. */
  prune(now: number, expired?: (edge: AskEdge, now: number) => void): void {
    for (let next = this.deadlines.peek(); next !== undefined && dueOf(next) <= now; next = this.deadlines.peek()) {
      this.deadlines.pop()
      // Only if that entry is still the open edge (it may have been closed or reopened since).
      if (this.edges.get(next.messageKey) === next) {
        this.edges.delete(next.messageKey)
        this.closePair(next)
        expired?.(next, now)
      }
    }
  }

  private closePair(edge: AskEdge): void {
    decrement(this.openPerPair, pairKey(edge.askerKey, edge.targetKey))
    const asked = askedKey(edge.targetKey, edge.messageId)
    const left = countOf(this.openPerAsked.get(asked) ?? 1) - 1
    if (left <= 0) this.openPerAsked.delete(asked)
    else this.openPerAsked.set(asked, left)
    decrement(this.openPerAsker, edge.askerKey)
    if (edge.notify === true) this.notifying--
    if (edge.question === true) this.questionWatch?.(edge, -1)
  }
}
