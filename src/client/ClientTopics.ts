/**
 * A client's own side of topics (`topics-v1`): its subscriptions and its
 * latest publication per topic, kept so that after every reconnect — a broker
 * restart forgets them, a dropped connection loses its subscriptions — they
 * are sent again before the connection is used (C-BRK-28, C-TOP-15).
 *
 * It numbers this session's revisions of each topic: strictly increasing,
 * starting at 1, usually the previous + 1 but with gaps (below; C-TOP-3's
 * "previous + 1" as it holds here, docs/protocol.md). The number is reserved when a publish starts, from a per-topic
 * counter, so concurrent publishes on one topic get distinct, increasing
 * revisions (each interrupts subscribers once, C-TOP-10) rather than the same
 * one. A publish the broker refused (`topic_failed`: nothing changed there)
 * gives its number back when no later publish has taken one; a publish that
 * timed out or lost its connection may have been saved, so its number stays
 * spent, and the next revision skips it. Such a gap is harmless: the broker,
 * receivers (`TopicBoard`) and the ledger only compare revisions by order.
 * A broker that keeps a newer revision of ours (from before a restart of
 * this process) answers `stale` with it, and the publication is numbered
 * past it once more. A publication counts only once the broker confirmed it
 * (C-TOP-13): until then the kept state is unchanged, and a confirmation
 * never replaces a newer confirmed record.
 *
 * Owned by one `IntercomClient`; its Maps are touched only synchronously.
 */
import { Effect } from "effect"
import { checkPublish, checkTopic, type PublishInput, type TopicEntry, type TopicRecord, type TopicSubscription } from "../protocol/topics.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import { TopicRefused, type TopicsUnavailable } from "./errors.ts"
import type { TopicRequestError } from "./TopicRequests.ts"

/** A publication the broker confirmed (C-TOP-13). */
export interface Published {
  readonly record: TopicRecord
  /** Subscribers of the topic (other than this session) when it was published. */
  readonly subscribers: number
  /** Of those, how many had it written to their connection (accepted, not necessarily read). */
  readonly accepted: number
}

/** The answer to `topics`: current records and this session's subscriptions. */
export interface TopicsView {
  readonly entries: ReadonlyArray<TopicEntry>
  readonly subscriptions: ReadonlyArray<TopicSubscription>
  /** The broker left records or subscriptions out to keep its answer within one frame: the lists are incomplete. */
  readonly truncated: boolean
}

/** The answer to `subscribe`: the topic's current records. */
export interface SubscribedView {
  readonly entries: ReadonlyArray<TopicEntry>
  /** The broker left records out to keep its answer within one frame: `entries` is incomplete. */
  readonly truncated: boolean
}

/** What a session persists of its topics and gives back at start (`IntercomClient.seedTopics`). */
export interface SavedTopics {
  readonly subscriptions: ReadonlyArray<TopicSubscription>
  readonly publications: ReadonlyArray<TopicRecord>
}

/** Why a topic operation on a connection failed. */
export type TopicConnectionError = TopicRequestError | TopicsUnavailable

/** One client's subscriptions and own publications, and their restoration; see the module header. */
export class ClientTopics {
  private readonly subscriptions = new Map<string, boolean>()
  private readonly publications = new Map<string, TopicRecord>()
  /** The last revision handed out per topic (confirmed or still in flight). */
  private readonly reserved = new Map<string, number>()

  /** What to persist: subscriptions and own latest publications. */
  get saved(): SavedTopics {
    return {
      subscriptions: [...this.subscriptions].map(([topic, awaitRelease]) => ({ topic, awaitRelease })),
      publications: [...this.publications.values()]
    }
  }

  /** Takes saved state (a restart, a reload): kept as if published and subscribed, re-sent by `restore`. */
  seed(saved: SavedTopics): void {
    for (const subscription of saved.subscriptions) this.subscriptions.set(subscription.topic, subscription.awaitRelease)
    for (const record of saved.publications) {
      const held = this.publications.get(record.topic)
      if (held === undefined || held.revision < record.revision) this.publications.set(record.topic, record)
    }
  }

  /**
   * Checks, numbers and publishes; kept as the latest only once the broker
   * confirmed it. The revision is reserved synchronously when the returned
   * effect starts (see the module header).
   */
  publish(
    connection: Pick<ClientConnection, "topic">,
    input: PublishInput,
    now: number,
    timeoutMs: number
  ): Effect.Effect<Published, TopicConnectionError> {
    return Effect.suspend(() => {
      const checked = checkPublish(input)
      if (typeof checked === "string") return Effect.fail(new TopicRefused({ reason: `Invalid publish: ${checked}` }))
      const topic = checked.topic
      const attempt = (revision: number, retried: boolean): Effect.Effect<Published, TopicConnectionError> => {
        const record: TopicRecord = { ...checked, revision, updatedAt: now }
        return connection.topic({ type: "topic_publish", record }, timeoutMs).pipe(
          Effect.tapError((error) =>
            // Refused by the broker (nothing changed) or never sent: the number is free again.
            Effect.sync(() => {
              if (error._tag === "TopicRefused" || error._tag === "TopicsUnavailable") this.giveBack(topic, revision)
            })
          ),
          Effect.flatMap((answer) => {
            if (answer.type !== "topic_published") return Effect.fail(unexpected(answer.type))
            if (answer.stale === true) {
              if (!retried && answer.revision >= revision) return attempt(this.reserve(topic, answer.revision), true)
              return Effect.fail(new TopicRefused({ reason: `The broker keeps a newer revision (${answer.revision}) of ${topic}` }))
            }
            // Concurrent publishes can be confirmed out of order: the newest confirmed stays the latest.
            if ((this.publications.get(topic)?.revision ?? 0) < revision) this.publications.set(topic, record)
            return Effect.succeed({ record, subscribers: answer.subscribers, accepted: answer.accepted })
          })
        )
      }
      return attempt(this.reserve(topic, 0), false)
    })
  }

  /** Hands out the next revision of `topic`: past every one handed out, confirmed, seeded, or `past`. */
  private reserve(topic: string, past: number): number {
    const revision = Math.max(this.reserved.get(topic) ?? 0, this.publications.get(topic)?.revision ?? 0, past) + 1
    this.reserved.set(topic, revision)
    return revision
  }

  /** A refused publish's revision is free again, unless a later publish has taken a number since. */
  private giveBack(topic: string, revision: number): void {
    if (this.reserved.get(topic) === revision) this.reserved.set(topic, revision - 1)
  }

  /**
   * Subscribes; returns the topic's current state (no replay of earlier
   * interruptions, C-TOP-11), and whether the broker had to leave records out.
   */
  subscribe(
    connection: ClientConnection,
    topic: string,
    awaitRelease: boolean,
    timeoutMs: number
  ): Effect.Effect<SubscribedView, TopicConnectionError> {
    const problem = checkTopic(topic)
    if (problem !== undefined) return Effect.fail(new TopicRefused({ reason: `Invalid subscribe: ${problem}` }))
    return connection.topic({ type: "topic_subscribe", topic, awaitRelease }, timeoutMs).pipe(
      Effect.flatMap((answer) => {
        if (answer.type !== "topic_subscribed") return Effect.fail(unexpected(answer.type))
        this.subscriptions.set(topic, awaitRelease)
        return Effect.succeed({ entries: answer.entries, truncated: answer.truncated === true })
      })
    )
  }

  /** Unsubscribes (a topic not subscribed is fine). */
  unsubscribe(connection: ClientConnection, topic: string, timeoutMs: number): Effect.Effect<void, TopicConnectionError> {
    const problem = checkTopic(topic)
    if (problem !== undefined) return Effect.fail(new TopicRefused({ reason: `Invalid unsubscribe: ${problem}` }))
    return connection.topic({ type: "topic_unsubscribe", topic }, timeoutMs).pipe(
      Effect.flatMap((answer) => {
        if (answer.type !== "topic_unsubscribed") return Effect.fail(unexpected(answer.type))
        this.subscriptions.delete(topic)
        return Effect.void
      })
    )
  }

  /** The broker's current records (of `topic`, or all of the group) and this session's subscriptions. */
  query(connection: ClientConnection, topic: string | undefined, timeoutMs: number): Effect.Effect<TopicsView, TopicConnectionError> {
    return connection.topic({ type: "topic_query", ...(topic === undefined ? {} : { topic }) }, timeoutMs).pipe(
      Effect.flatMap((answer) =>
        answer.type === "topic_state"
          ? Effect.succeed({ entries: answer.entries, subscriptions: answer.subscriptions, truncated: answer.truncated === true })
          : Effect.fail(unexpected(answer.type))
      )
    )
  }

  /**
   * Sends every subscription and own latest publication again on a new
   * connection (C-BRK-28). A broker without topics is skipped quietly; other
   * failures are returned as texts (the state stays, for the next connection).
   */
  restore(connection: ClientConnection, timeoutMs: number): Effect.Effect<ReadonlyArray<string>> {
    const subscriptions = [...this.subscriptions]
    const publications = [...this.publications.values()]
    if (subscriptions.length === 0 && publications.length === 0) return Effect.succeed([])
    const quiet = <A>(effect: Effect.Effect<A, TopicConnectionError>) =>
      effect.pipe(
        Effect.as(undefined),
        Effect.catch((error) => Effect.succeed(error._tag === "TopicsUnavailable" ? undefined : `topics: ${error.message}`))
      )
    return Effect.forEach(
      [
        ...subscriptions.map(([topic, awaitRelease]) =>
          quiet(connection.topic({ type: "topic_subscribe", topic, awaitRelease }, timeoutMs))
        ),
        ...publications.map((record) => quiet(connection.topic({ type: "topic_publish", record }, timeoutMs)))
      ],
      (effect) => effect
    ).pipe(Effect.map((problems) => problems.filter((problem) => problem !== undefined)))
  }
}

const unexpected = (type: string) => new TopicRefused({ reason: `The broker answered a topic request with "${type}"` })
