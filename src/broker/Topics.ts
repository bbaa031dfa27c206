/**
 * Size: one concept, about 530 lines — the four frames' handlers and the
 * per-namespace state they share (records, subscribers, the entry bound,
 * the broker-wide bounds and the retention prune, which forget records in
 * the same places); a split would pass that state between modules.
 *
 * Topics (extension `topics-v1`, C-TOP-3, 11, 12, 13): latest-state
 * publications shared inside one group of a scope.
 *
 * It owns, per routing namespace (scope + group, so groups never see each
 * other's topics): the current record of each (publisher, topic), the
 * subscriptions of live sessions, and how many of both it keeps (bounded by
 * `topicEntriesPerGroup`, a clear refusal past it). Over all namespaces the
 * records are bounded too, in count (`topicRecords`) and in bytes
 * (`topicBytes`, estimated by `topicRecordBytes`), so that a client cycling
 * through groups cannot make the broker hold more: past either bound a
 * publication is still accepted and older records are forgotten — first
 * those whose publisher left, oldest departure first, then those published
 * longest ago — each in O(1). Nobody is told (as when the retention
 * forgets a record): a publisher that is still here finds its record gone
 * from answers, and its next publication of that topic is kept anew.
 *
 * A publication with a lower revision than the one kept is stale and
 * changes nothing; any other replaces the record and is written once, as
 * one frame text, to every subscriber's outbox through `Output`
 * (backpressure as for any frame).
 *
 * A session taken over under another name (same id, P16) is named anew in
 * its records. When a session leaves, its subscriptions go (its client subscribes again
 * after a reconnect, C-BRK-28) and its records stay, marked unavailable —
 * never released (C-TOP-12) — and subscribers are told so; a record whose
 * publisher stays away for UNAVAILABLE_RETENTION_MS is forgotten (checked
 * before every topic request, and by the send path's prunes).
 *
 * A `topic_subscribed` or `topic_state` answer is built within ANSWER_BYTES
 * of UTF-8, the whole frame counted, so it is always one frame the broker
 * writes; what does not fit is left out and the answer says `truncated`.
 *
 * Only the four topic frames reach this module; the send path never does.
 */
import { decodeClientFrame, isFrameDecodeError } from "../protocol/decode.ts"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { TOPICS_V1 } from "../protocol/features.ts"
import { checkRecord, checkTopic, type TopicRecord } from "../protocol/topics.ts"
import { AgedMap } from "./AgedMap.ts"
import type { Peer } from "./Peer.ts"
import type { RegistrationHooks } from "./Registration.ts"
import { type Session, sessionKey } from "./Registry.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"

/**
 * Estimated memory of one kept record, in bytes: its entry text twice in
 * UTF-16 (the text, and the parsed record and publisher it was made from),
 * plus 512 for the maps that hold it. What `topicBytes` bounds.
 */
export const topicRecordBytes = (entryJson: string): number => 4 * entryJson.length + 512

/** How long a record whose publisher left is kept (shown unavailable) before it is forgotten. */
export const UNAVAILABLE_RETENTION_MS = 24 * 3_600_000

/**
 * UTF-8 bytes one `topic_subscribed` / `topic_state` answer takes at most, the
 * whole frame counted (entries, subscriptions, `requestId`, topic), well
 * inside the frame limit: a frame over the limit is never written, and its
 * request would go unanswered.
 */
export const ANSWER_BYTES = Math.floor(MAX_FRAME_BYTES / 4)

/** The field an answer carries when entries or subscriptions were left out to stay within ANSWER_BYTES. */
const TRUNCATED_FIELD = `,"truncated":true`

/** What is left of one answer's budget, and whether something was left out. */
interface AnswerBudget {
  left: number
  truncated: boolean
}

/** A budget for an answer whose fixed parts are `fixed` (their bytes and the `truncated` field are set aside). */
const answerBudget = (...fixed: ReadonlyArray<string>): AnswerBudget => {
  let left = ANSWER_BYTES - TRUNCATED_FIELD.length
  for (const text of fixed) left -= Buffer.byteLength(text, "utf8")
  return { left, truncated: false }
}

/**
 * The texts of `source`, in order, while they fit in the budget (a comma
 * each); the first that does not fit, and every one after it, is left out
 * and the budget marked truncated.
 */
const takeWithin = (budget: AnswerBudget, source: Iterable<string>): Array<string> => {
  const out: Array<string> = []
  for (const text of source) {
    const bytes = Buffer.byteLength(text, "utf8") + 1
    if (bytes > budget.left) {
      budget.truncated = true
      return out
    }
    budget.left -= bytes
    out.push(text)
  }
  return out
}

/** The refusals of topic requests. */
export const TopicText = {
  full: (max: number) =>
    `This intercom group already keeps ${max} topic records and subscriptions, as many as the broker allows ` +
    `(setting topicEntriesPerGroup; intercom broker --topic-entries); unsubscribe from topics you no longer need, or raise the setting`,
  invalid: (detail: string) => `Invalid topic request: ${detail}`
} as const

/** One publisher's kept record. */
interface Kept {
  /** The publisher as entries name it: its id and its name as of its latest registration. */
  fromJson: string
  record: TopicRecord
  entryJson: string
  /** `topicRecordBytes(entryJson)`, counted in the broker-wide total. */
  bytes: number
  available: boolean
}

/** Where one kept record is: its namespace, topic and publisher id. */
interface Where {
  readonly spaceKey: string
  readonly topic: string
  readonly id: string
}

/** One topic of a namespace: records by publisher id, subscribers by session key (value: awaitRelease). */
interface TopicState {
  readonly records: Map<string, Kept>
  readonly subscribers: Map<string, boolean>
}

/** One namespace's topics and how many records and subscriptions they hold. */
interface TopicSpace {
  readonly topics: Map<string, TopicState>
  entries: number
}

const keptKey = (spaceKey: string, topic: string, publisherId: string) => `${spaceKey}\u0000${topic}\u0000${publisherId}`

/** The entry texts of kept records, source after source. */
function* entryTexts(sources: ReadonlyArray<Iterable<Kept>>): Generator<string> {
  for (const source of sources) for (const kept of source) yield kept.entryJson
}

/** `{id, name?}` of a publisher, as its entries carry it. */
const fromJsonOf = (session: Session): string =>
  JSON.stringify(session.fields.name === undefined ? { id: session.id } : { id: session.id, name: session.fields.name })

const entryJsonOf = (fromJson: string, record: TopicRecord, available: boolean): string =>
  `{"from":${fromJson},"record":${JSON.stringify(record)},"available":${available}}`

/** The topics concern: four frame handlers, registration hooks and a prune. */
export class Topics {
  private readonly ctx: RouterContext
  private readonly spaces = new Map<string, TopicSpace>()
  /** Topics each live session subscribes to, by session key. */
  private readonly subscribed = new Map<string, Set<string>>()
  /** Topics each live session published in, by session key. */
  private readonly published = new Map<string, Set<string>>()
  /** Records whose publisher left, oldest departure first: forgotten after the retention, or first past a broker-wide bound. */
  private readonly away = new AgedMap<string, Where>()
  /** Every record, published longest ago first: forgotten in this order past a broker-wide bound once none is away. */
  private readonly byAge = new AgedMap<string, Where>()
  /** `topicRecordBytes` of every record, over all namespaces. */
  private bytes = 0

  constructor(ctx: RouterContext) {
    this.ctx = ctx
  }

  readonly frames: FrameHandlers = {
    topic_publish: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.publish(peer, session, raw)) },
    topic_subscribe: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.subscribe(peer, session, raw)) },
    topic_unsubscribe: {
      handle: (peer, raw) => this.guard(peer, raw, (session) => this.unsubscribe(peer, session, raw))
    },
    topic_query: { handle: (peer, raw) => this.guard(peer, raw, (session) => this.query(peer, session, raw)) }
  }

  readonly hooks: RegistrationHooks = {
    registered: (session, previous) => {
      if (previous !== undefined) this.renamed(session)
    },
    left: (session, now) => this.left(session, now)
  }

  /**
   * Forgets records whose publisher has been away longer than
   * UNAVAILABLE_RETENTION_MS. Run at the start of every topic request and by
   * the send path's prunes.
   */
  prune(now: number): void {
    for (const gone of this.away.expire(now - UNAVAILABLE_RETENTION_MS)) this.forget(gone)
  }

  /** Records kept, over all namespaces (what `topicRecords` bounds): for stats and tests. */
  get recordCount(): number {
    return this.byAge.size
  }

  /** Estimated bytes of the records kept, over all namespaces (what `topicBytes` bounds): for stats and tests. */
  get recordBytes(): number {
    return this.bytes
  }

  /**
   * Topic names in live publishers' lists (what a leaving publisher walks),
   * over all sessions: at most the records of live publishers, since a
   * forgotten record leaves its publisher's list too. For stats and tests.
   */
  get publishedCount(): number {
    let total = 0
    for (const topics of this.published.values()) total += topics.size
    return total
  }

  /** Records and subscriptions kept, over all namespaces: for stats and tests. */
  get size(): number {
    let total = 0
    for (const space of this.spaces.values()) total += space.entries
    return total
  }

  /**
   * Only a session granted `topics-v1` may use topic frames (a base client
   * never sends them). Every topic request first forgets the records past
   * their retention, at the broker's clock: an O(1) check when none is due.
   */
  private guard(peer: Peer, raw: { readonly type: string }, act: (session: Session) => void): void {
    if (!peer.features.has(TOPICS_V1)) {
      return this.ctx.protocolError(peer, `"${raw.type}" frame without the ${TOPICS_V1} extension`)
    }
    const session = peer.session
    if (session === undefined) return
    // Records of publishers gone past the retention must not count against the
    // bound, nor show, even when no `send` has run the broker's prunes since.
    this.prune(this.ctx.now())
    act(session)
  }

  private fail(peer: Peer, requestId: string, reason: string): void {
    this.ctx.output.enqueue(peer, JSON.stringify({ type: "topic_failed", requestId, reason }))
  }

  /** A frame that does not decode: answered by requestId when it has one, else a protocol error. */
  private undecodable(peer: Peer, raw: { readonly [key: string]: unknown }, message: string): void {
    const requestId = raw["requestId"]
    if (typeof requestId === "string") return this.fail(peer, requestId, TopicText.invalid(message))
    this.ctx.protocolError(peer, message)
  }

  private spaceOf(spaceKey: string): TopicSpace {
    let space = this.spaces.get(spaceKey)
    if (space === undefined) {
      space = { topics: new Map(), entries: 0 }
      this.spaces.set(spaceKey, space)
    }
    return space
  }

  private stateOf(space: TopicSpace, topic: string): TopicState {
    let state = space.topics.get(topic)
    if (state === undefined) {
      state = { records: new Map(), subscribers: new Map() }
      space.topics.set(topic, state)
    }
    return state
  }

  /** Drops an empty topic, and an empty namespace. */
  private tidy(spaceKey: string, space: TopicSpace, topic: string, state: TopicState): void {
    if (state.records.size === 0 && state.subscribers.size === 0) space.topics.delete(topic)
    if (space.topics.size === 0) this.spaces.delete(spaceKey)
  }

  /** Forgets one record: from its topic, its namespace's count, the byte total, both age orders and its live publisher's topics. */
  private forget(gone: Where): void {
    const key = keptKey(gone.spaceKey, gone.topic, gone.id)
    this.away.delete(key)
    this.byAge.delete(key)
    const space = this.spaces.get(gone.spaceKey)
    const state = space?.topics.get(gone.topic)
    const kept = state?.records.get(gone.id)
    if (space === undefined || state === undefined || kept === undefined) return
    state.records.delete(gone.id)
    space.entries--
    this.bytes -= kept.bytes
    // A live publisher's list of its topics goes with the record, or it would grow past every bound.
    if (kept.available) {
      const publisherKey = sessionKey(gone.spaceKey, gone.id)
      const topics = this.published.get(publisherKey)
      topics?.delete(gone.topic)
      if (topics?.size === 0) this.published.delete(publisherKey)
    }
    this.tidy(gone.spaceKey, space, gone.topic, state)
  }

  /** Sets a kept record's entry text, keeping the byte total in step. */
  private setEntry(kept: Kept, entryJson: string): void {
    const bytes = topicRecordBytes(entryJson)
    this.bytes += bytes - kept.bytes
    kept.entryJson = entryJson
    kept.bytes = bytes
  }

  /**
   * Past a broker-wide bound (`topicRecords`, `topicBytes`), forgets records
   * whose publisher left, oldest departure first, then those published
   * longest ago; never the newest (after a publish, the publication just
   * accepted), so a bound smaller than one record still keeps that one. Also
   * run when a record's entry grows (its publisher left or was renamed).
   * O(1) per record forgotten.
   */
  private evict(): void {
    const { topicBytes, topicRecords } = this.ctx.options
    while (this.byAge.size > 1 && (this.byAge.size > topicRecords || this.bytes > topicBytes)) {
      const gone = this.away.expireOldest(Number.POSITIVE_INFINITY) ??
        this.byAge.expireOldest(Number.POSITIVE_INFINITY)
      if (gone === undefined) return
      this.forget(gone)
    }
  }

  private get limit(): number {
    return this.ctx.options.topicEntriesPerGroup
  }

  private publish(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.topic_publish(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    const record = frame.record
    const problem = checkRecord(record)
    if (problem !== undefined) return this.fail(peer, frame.requestId, TopicText.invalid(problem))
    const spaceKey = session.space.key
    const existingSpace = this.spaces.get(spaceKey)
    const kept = existingSpace?.topics.get(record.topic)?.records.get(session.id)
    if (kept === undefined && (existingSpace?.entries ?? 0) >= this.limit) {
      return this.fail(peer, frame.requestId, TopicText.full(this.limit))
    }
    const space = this.spaceOf(spaceKey)
    const state = this.stateOf(space, record.topic)
    const subscribers = state.subscribers.size - (state.subscribers.has(session.key) ? 1 : 0)
    if (kept !== undefined && record.revision < kept.record.revision) {
      // Stale (C-TOP-6): an older revision never replaces a newer record.
      // The answer carries the kept revision, so the publisher can number past it.
      return this.answerPublished(peer, frame.requestId, kept.record, subscribers, 0, true)
    }
    const fromJson = fromJsonOf(session)
    const entryJson = entryJsonOf(fromJson, record, true)
    if (kept === undefined) {
      const fresh: Kept = { fromJson, record, entryJson, bytes: 0, available: true }
      this.setEntry(fresh, entryJson)
      state.records.set(session.id, fresh)
      space.entries++
    } else {
      kept.fromJson = fromJson
      kept.record = record
      kept.available = true
      this.setEntry(kept, entryJson)
    }
    const key = keptKey(spaceKey, record.topic, session.id)
    this.away.delete(key)
    this.byAge.set(key, this.byAge.get(key) ?? { spaceKey, topic: record.topic, id: session.id }, this.ctx.now())
    this.evict()
    let topics = this.published.get(session.key)
    if (topics === undefined) this.published.set(session.key, topics = new Set())
    topics.add(record.topic)
    const accepted = this.fanOut(state, session.key, entryJson)
    this.answerPublished(peer, frame.requestId, record, subscribers, accepted, false)
  }

  /** Writes one `topic_record` to every subscriber but `except`; returns how many outboxes took it. */
  private fanOut(state: TopicState, except: string | undefined, entryJson: string): number {
    if (state.subscribers.size === 0) return 0
    const text = `{"type":"topic_record","entry":${entryJson}}`
    let accepted = 0
    for (const key of state.subscribers.keys()) {
      if (key === except) continue
      const subscriber = this.ctx.registry.byKey.get(key)
      if (subscriber === undefined || subscriber.peer.isClosing) continue
      this.ctx.output.enqueue(subscriber.peer, text)
      accepted++
    }
    return accepted
  }

  private answerPublished(
    peer: Peer,
    requestId: string,
    record: TopicRecord,
    subscribers: number,
    accepted: number,
    stale: boolean
  ): void {
    this.ctx.output.enqueue(
      peer,
      JSON.stringify({
        type: "topic_published",
        requestId,
        topic: record.topic,
        revision: record.revision,
        subscribers,
        accepted,
        ...(stale ? { stale: true } : {})
      })
    )
  }

  private subscribe(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.topic_subscribe(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    const problem = checkTopic(frame.topic)
    if (problem !== undefined) return this.fail(peer, frame.requestId, TopicText.invalid(problem))
    const spaceKey = session.space.key
    const existing = this.spaces.get(spaceKey)?.topics.get(frame.topic)
    const already = existing?.subscribers.has(session.key) === true
    if (!already && (this.spaces.get(spaceKey)?.entries ?? 0) >= this.limit) {
      return this.fail(peer, frame.requestId, TopicText.full(this.limit))
    }
    const space = this.spaceOf(spaceKey)
    const state = this.stateOf(space, frame.topic)
    state.subscribers.set(session.key, frame.awaitRelease === true)
    if (!already) {
      space.entries++
      let topics = this.subscribed.get(session.key)
      if (topics === undefined) this.subscribed.set(session.key, topics = new Set())
      topics.add(frame.topic)
    }
    const head = `{"type":"topic_subscribed","requestId":${JSON.stringify(frame.requestId)},"topic":${
      JSON.stringify(frame.topic)
    },"entries":[`
    const budget = answerBudget(head, "]}")
    const entries = takeWithin(budget, entryTexts([state.records.values()]))
    this.ctx.output.enqueue(peer, `${head}${entries.join(",")}]${budget.truncated ? TRUNCATED_FIELD : ""}}`)
  }

  private unsubscribe(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.topic_unsubscribe(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    this.dropSubscription(session, frame.topic)
    this.subscribed.get(session.key)?.delete(frame.topic)
    this.ctx.output.enqueue(peer, JSON.stringify({ type: "topic_unsubscribed", requestId: frame.requestId, topic: frame.topic }))
  }

  private dropSubscription(session: Session, topic: string): void {
    const spaceKey = session.space.key
    const space = this.spaces.get(spaceKey)
    const state = space?.topics.get(topic)
    if (space === undefined || state === undefined || !state.subscribers.delete(session.key)) return
    space.entries--
    this.tidy(spaceKey, space, topic, state)
  }

  private query(peer: Peer, session: Session, raw: { readonly [key: string]: unknown }): void {
    const frame = decodeClientFrame.topic_query(raw)
    if (isFrameDecodeError(frame)) return this.undecodable(peer, raw, frame.message)
    const space = this.spaces.get(session.space.key)
    const states = space === undefined
      ? []
      : frame.topic === undefined
      ? [...space.topics.values()]
      : [space.topics.get(frame.topic)].filter((state) => state !== undefined)
    const head = `{"type":"topic_state","requestId":${JSON.stringify(frame.requestId)},"entries":[`
    const middle = `],"subscriptions":[`
    // One budget for the whole answer: entries first, then this session's subscriptions with what is left.
    const budget = answerBudget(head, middle, "]}")
    const entries = takeWithin(budget, entryTexts(states.map((state) => state.records.values())))
    const subscriptions = takeWithin(budget, this.subscriptionTexts(session, space, frame.topic))
    this.ctx.output.enqueue(
      peer,
      `${head}${entries.join(",")}${middle}${subscriptions.join(",")}]${budget.truncated ? TRUNCATED_FIELD : ""}}`
    )
  }

  /** This session's subscriptions (to `only`, if given) as `{topic, awaitRelease}` texts. */
  private *subscriptionTexts(session: Session, space: TopicSpace | undefined, only: string | undefined): Generator<string> {
    for (const topic of this.subscribed.get(session.key) ?? []) {
      if (only !== undefined && topic !== only) continue
      const awaitRelease = space?.topics.get(topic)?.subscribers.get(session.key) === true
      yield JSON.stringify({ topic, awaitRelease })
    }
  }

  /**
   * A live session taken over by a new registration (same id, P16), which
   * may carry another name: its records name it as it is now, in answers and
   * in the `unavailable` entry its subscribers get when it leaves. Nobody is
   * told of the new name by itself (the record did not change); a re-publish
   * after the takeover (C-BRK-28) carries it anyway.
   */
  private renamed(session: Session): void {
    const published = this.published.get(session.key)
    const space = this.spaces.get(session.space.key)
    if (published === undefined || space === undefined) return
    const fromJson = fromJsonOf(session)
    for (const topic of published) {
      const kept = space.topics.get(topic)?.records.get(session.id)
      if (kept === undefined || kept.fromJson === fromJson) continue
      kept.fromJson = fromJson
      this.setEntry(kept, entryJsonOf(fromJson, kept.record, kept.available))
    }
    this.evict()
  }

  private left(session: Session, now: number): void {
    for (const topic of this.subscribed.get(session.key) ?? []) this.dropSubscription(session, topic)
    this.subscribed.delete(session.key)
    const published = this.published.get(session.key)
    if (published === undefined) return
    this.published.delete(session.key)
    const spaceKey = session.space.key
    const space = this.spaces.get(spaceKey)
    if (space === undefined) return
    for (const topic of published) {
      const state = space.topics.get(topic)
      const kept = state?.records.get(session.id)
      if (state === undefined || kept === undefined || !kept.available) continue
      // C-TOP-12: unavailable, never released; subscribers learn it.
      kept.available = false
      this.setEntry(kept, entryJsonOf(kept.fromJson, kept.record, false))
      const key = keptKey(spaceKey, topic, session.id)
      this.away.set(key, this.byAge.get(key) ?? { spaceKey, topic, id: session.id }, now)
      this.fanOut(state, undefined, kept.entryJson)
    }
    this.evict()
  }
}
