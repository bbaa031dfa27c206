/**
 * Topics in the session runtime (`topics-v1`, C-TOP-1…17): the tool actions
 * `publish`, `subscribe`, `unsubscribe` and `topics`, the fiber that takes
 * subscribed records from the client into the `TopicBoard`, and the host's
 * topic store (C-TOP-15).
 *
 * - A record that interrupts (TopicBoard's rules) reaches the host as an
 *   inbound with intent `steer` (busy) or `trigger` (idle); every other
 *   record only changes the quiet board, which `topics` shows.
 * - Topic state is restored from the host's store when the generation
 *   starts (a failure is a warning; messaging stays usable) and handed to the
 *   client so it is re-sent to the broker after every reconnect. It is saved
 *   only when it differs from what was last saved or restored: at once after
 *   a topic action or an interrupting record (a resume must not interrupt
 *   again, `notifiedRevision`); a quiet record waits `QUIET_SAVE_DELAY`, so a
 *   burst of them is one save of its latest state, and whatever is still
 *   waiting is saved when the generation ends. A host store that appends
 *   (pi's session entries) so grows with what the session did, not with
 *   every quiet update it was sent.
 * - A topic action that finishes after its generation ended (the session
 *   changed under it) saves nothing and fails (C-TOP-17).
 *
 * It owns the board and the generation's "ended" flag for topics; the client
 * owns revisions and what is re-sent.
 */
import { Duration, Effect, Queue, type Scope, Semaphore, Stream } from "effect"
import { TopicRefused } from "../client/errors.ts"
import type { SessionInfo } from "../protocol/frames.ts"
import type { TopicEntry } from "../protocol/topics.ts"
import type { IntercomSessionError } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { SavedTopicState } from "./Host.ts"
import type { ToolAction } from "./IntercomTool.ts"
import type { IntercomToolParams, ToolResult } from "./models.ts"
import type { LifecycleStatus } from "./render.ts"
import { type HeldRecord, TopicBoard } from "./TopicBoard.ts"
import { TopicSessionChanged } from "./topicErrors.ts"
import type { ToolExposure } from "./ToolExposure.ts"

/**
 * How long a quiet change of the received records (an `update`, a record that
 * does not interrupt) waits before it is saved: every change within it is
 * one save of the latest state (and one at the generation's end at the latest).
 */
export const QUIET_SAVE_DELAY: Duration.Duration = Duration.seconds(2)

/** The note every publish result carries (C-TOP-13). */
export const ACCEPTANCE_NOTE = "Accepted means written to the subscriber's connection, not that it was read."

const publisherName = (entry: TopicEntry) => entry.from.name?.trim() || entry.from.id

/** One record as a line of `topics` / `subscribe` output. */
export const renderTopicEntry = (entry: TopicEntry): string => {
  const { record } = entry
  const resource = record.resource === undefined
    ? ""
    : ` [${record.resource}${record.ownership === undefined ? "" : `: ${record.ownership}`}]`
  const away = entry.available ? "" : " (publisher disconnected / unavailable; not released)"
  return `- ${record.topic} — ${publisherName(entry)}, revision ${record.revision}, ${record.event}${resource}${away}: ${record.text}`
}

/** The line that ends a list of records the broker had to cut to fit its answer in one frame. */
export const TRUNCATED_NOTE = "(Incomplete: the broker left further records out to keep its answer within one frame.)"

/** Rows of records, or `No current records.`; `note` (the list is incomplete) ends them when given. */
const renderEntries = (entries: ReadonlyArray<TopicEntry>, note?: string): string => {
  const rows = entries.map(renderTopicEntry)
  if (note !== undefined) rows.push(note)
  return rows.length === 0 ? "No current records." : rows.join("\n")
}

/** The rendering of an interrupting record, as the host is handed it. */
export const renderTopicNotice = (entry: TopicEntry): string => {
  const { record } = entry
  const resource = record.resource === undefined ? "" : ` about ${record.resource}`
  return `**Topic ${record.topic}: ${record.event}${resource} from ${publisherName(entry)}** (revision ${record.revision})\n\n${record.text}`
}

const senderInfo = (entry: TopicEntry): SessionInfo => ({
  id: entry.from.id,
  ...(entry.from.name === undefined ? {} : { name: entry.from.name }),
  cwd: "",
  model: "",
  pid: 0,
  startedAt: 0,
  lastActivity: entry.record.updatedAt
})

const ok = (text: string, details: Record<string, unknown>): ToolResult => ({ text, isError: false, details })

/** The running topic side of a generation. */
export interface TopicRuntime {
  /** The four topic tool actions, for the tool's action table. */
  readonly actions: ReadonlyMap<string, ToolAction>
  /** What this session holds: subscriptions and received records (for a host's own view). */
  readonly board: TopicBoard
}

/**
 * Starts the topic side of a generation in the current Scope: restores the
 * host's saved state, and takes subscribed records until the Scope closes.
 */
export const makeTopics = (
  generation: Generation,
  lifecycle: () => LifecycleStatus,
  exposure: ToolExposure
): Effect.Effect<TopicRuntime, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { client, host } = generation
    const board = new TopicBoard()
    const store = host.topicStore
    let ended = false
    yield* Effect.addFinalizer(() => Effect.sync(() => ended = true))

    const snapshot: Effect.Effect<SavedTopicState> = Effect.map(client.savedTopics, (saved) => ({
      subscriptions: board.subscribed,
      publications: saved.publications,
      received: board.held()
    }))
    /** The state last saved or restored, as JSON: a save of the same state is skipped. */
    let lastSaved: string | undefined
    /** A quiet change waits to be saved (the quiet saver was signalled). */
    let quietPending = false
    const quietSignal = yield* Queue.sliding<true>(1)
    const saving = yield* Semaphore.make(1)
    /** Saves the current state if it differs from the last saved one; covers any waiting quiet change. */
    const save = store === undefined ? Effect.void : saving.withPermits(1)(
      Effect.gen(function*() {
        quietPending = false
        const state = yield* snapshot
        const text = JSON.stringify(state)
        if (text === lastSaved) return
        yield* store.save(state)
        lastSaved = text
      })
    ).pipe(Effect.catchCause(() => store.warn("Intercom topics: saving topic state failed")))
    /** A quiet change: saved with the next save, or `QUIET_SAVE_DELAY` after the first change waiting. */
    const saveQuietly = Effect.suspend(() => {
      if (store === undefined || quietPending) return Effect.void
      quietPending = true
      return Queue.offer(quietSignal, true)
    })

    // C-TOP-15: restore, hand to the client (re-sent after every reconnect); a failure is a warning.
    if (store !== undefined) {
      yield* store.load.pipe(
        Effect.flatMap((saved) =>
          saved === undefined ? Effect.void : Effect.suspend(() => {
            board.restore(saved.subscriptions, saved.received)
            return client.seedTopics({ subscriptions: saved.subscriptions, publications: saved.publications }).pipe(
              Effect.andThen(snapshot),
              Effect.map((restored) => {
                lastSaved = JSON.stringify(restored)
              })
            )
          })
        ),
        Effect.catchCause(() =>
          store.warn("Intercom topics: saved topic state could not be restored; messaging is unaffected")
        )
      )
      // Registered before the fibers below start, so it runs after they were interrupted: what still waits is saved.
      yield* Effect.addFinalizer(() => Effect.suspend(() => quietPending ? save : Effect.void))
      yield* Effect.forkScoped(
        Queue.take(quietSignal).pipe(
          Effect.andThen(Effect.sleep(QUIET_SAVE_DELAY)),
          Effect.andThen(Effect.suspend(() => quietPending ? save : Effect.void)),
          Effect.forever
        ),
        { startImmediately: true }
      )
    }

    const interrupt = (entry: TopicEntry) =>
      Effect.gen(function*() {
        yield* exposure.expose
        const message = {
          id: `topic:${entry.from.id}:${entry.record.topic}:${entry.record.revision}`,
          timestamp: entry.record.updatedAt,
          content: { text: entry.record.text }
        }
        yield* host.deliver({
          intent: lifecycle() === "idle" ? "trigger" : "steer",
          from: senderInfo(entry),
          message,
          text: renderTopicNotice(entry),
          expectsReply: false,
          // C-TOP-9: blocker, decision and an awaited release steer the subscriber.
          delivery: "steer"
        })
      })

    yield* Effect.forkScoped(
      client.topicRecords.pipe(
        Stream.runForEach((entry) =>
          Effect.suspend(() => {
            const received = board.receive(entry)
            if (received._tag === "Ignored") return Effect.void
            // An interruption is saved at once: a resume must not interrupt with it again (notifiedRevision).
            return received._tag === "Interrupt" ? Effect.andThen(save, interrupt(entry)) : saveQuietly
          }).pipe(Effect.catchCause(Effect.logError))
        )
      ),
      { startImmediately: true }
    )

    /** Runs a topic action; if the generation ended meanwhile, nothing is saved (C-TOP-17). */
    const guarded = <A>(
      action: Effect.Effect<A, IntercomSessionError>,
      commit: (value: A) => void
    ): Effect.Effect<A, IntercomSessionError> =>
      Effect.gen(function*() {
        yield* generation.connect
        const value = yield* action
        if (ended) return yield* new TopicSessionChanged()
        commit(value)
        yield* save
        return value
      })

    const needTopic = (params: IntercomToolParams, action: string): Effect.Effect<string, TopicRefused> =>
      params.topic === undefined || params.topic.trim() === ""
        ? Effect.fail(new TopicRefused({ reason: `Invalid ${action}: ${action} needs an exact topic` }))
        : Effect.succeed(params.topic)

    const publish: ToolAction = (params) =>
      Effect.gen(function*() {
        const topic = yield* needTopic(params, "publish")
        // C-TOP-5: a publication is not a conversation message.
        if (params.replyTo !== undefined) {
          return yield* new TopicRefused({ reason: "Invalid publish: a topic publication cannot carry replyTo" })
        }
        const published = yield* guarded(
          client.publish({
            topic,
            text: params.message ?? "",
            event: params.event,
            resource: params.resource,
            ownership: params.ownership
          }),
          () => undefined
        )
        const { record } = published
        return ok(
          `Current state saved for ${record.topic}. ${published.accepted}/${published.subscribers} subscribed deliveries accepted. ${ACCEPTANCE_NOTE}`,
          { topic: record.topic, revision: record.revision, event: record.event, subscribers: published.subscribers, accepted: published.accepted }
        )
      })

    const subscribe: ToolAction = (params) =>
      Effect.gen(function*() {
        const topic = yield* needTopic(params, "subscribe")
        const awaitRelease = params.awaitRelease === true
        const current = yield* guarded(
          client.subscribe(topic, { awaitRelease }),
          (view) => board.subscribe(topic, awaitRelease, view.entries)
        )
        return ok(
          `Subscribed to ${topic}${awaitRelease ? " (releases interrupt)" : ""}. Current state:\n${
            renderEntries(current.entries, current.truncated ? TRUNCATED_NOTE : undefined)
          }`,
          { topic, awaitRelease, records: current.entries, ...(current.truncated ? { truncated: true } : {}) }
        )
      })

    const unsubscribe: ToolAction = (params) =>
      Effect.gen(function*() {
        const topic = yield* needTopic(params, "unsubscribe")
        yield* guarded(client.unsubscribe(topic), () => board.unsubscribe(topic))
        return ok(`Unsubscribed from ${topic}.`, { topic })
      })

    const held = (topic: string | undefined): ReadonlyArray<TopicEntry> =>
      board.held(topic).map((record: HeldRecord) => record.entry)

    const topics: ToolAction = (params) =>
      Effect.gen(function*() {
        const topic = params.topic === undefined || params.topic.trim() === "" ? undefined : params.topic
        const view = yield* generation.connect.pipe(
          Effect.andThen(client.topics(topic)),
          Effect.catchTag("TopicsUnavailable", (error) =>
            // C-TOP-16: unavailable, with the last saved records.
            Effect.fail(new TopicRefused({ reason: `${error.message}\nLast saved records:\n${renderEntries(held(topic))}` })))
        )
        if (ended) return yield* new TopicSessionChanged()
        const subscriptions = board.subscribed.filter((s) => topic === undefined || s.topic === topic)
        const subscribed = subscriptions.length === 0
          ? "Subscriptions: none."
          : `Subscriptions: ${subscriptions.map((s) => `${s.topic}${s.awaitRelease ? " (awaitRelease)" : ""}`).join(", ")}.`
        const note = !view.truncated
          ? undefined
          : topic === undefined
          ? `${TRUNCATED_NOTE} Name one topic to see only its records.`
          : TRUNCATED_NOTE
        return ok(`${renderEntries(view.entries, note)}\n${subscribed}`, {
          records: view.entries,
          subscriptions,
          ...(view.truncated ? { truncated: true } : {})
        })
      })

    return {
      board,
      actions: new Map<string, ToolAction>([
        ["publish", publish],
        ["subscribe", subscribe],
        ["unsubscribe", unsubscribe],
        ["topics", topics]
      ])
    }
  })
