/**
 * The live side of `intercom ui`: follows the broker and publishes views.
 *
 * It owns the latest snapshot the broker sent and the state of the link to
 * the broker, for the life of the fiber `runLiveView` runs in. Two fibers:
 *
 * - the follower reads the snapshot stream (observe-v1, adapted to
 *   `ViewInput`); when the stream fails or ends (broker stopped, not
 *   started yet) it marks the link `lost` with the reason, keeps the last
 *   snapshot on screen, and opens a new stream after `retryAfter`;
 * - a link whose stream has sent nothing for `staleAfter` is shown `stale`:
 *   the broker sends an update every interval, so its silence means it is
 *   stopped (SIGSTOP), hung or overloaded while its socket stays open, and
 *   the snapshot on screen is no longer current. The next update makes it
 *   `connected` again;
 * - the publisher builds the view (View.ts) and publishes it as JSON to the
 *   server's hub when something changed, at most once per `minInterval`, and
 *   at least once per `refreshEvery` even when nothing did, since ages grow
 *   and an ask becomes stuck with no new frame from the broker.
 *
 * Every wait is an `Effect.sleep` on the Clock, so a TestClock drives it.
 */
import * as Duration from "effect/Duration"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import { buildView, type ConnectionState, type ViewInput } from "./View.ts"

/** What `runLiveView` needs. */
export interface LiveViewOptions {
  /** One subscription to the broker: a stream of snapshots. Opened again after it fails or ends. */
  readonly source: Stream.Stream<ViewInput, { readonly message: string }>
  /** Where views go (UiServer.makeViewHub). */
  readonly hub: PubSub.PubSub<string>
  readonly stuckAfterMs: number
  readonly socketPath: string
  /** Wait before opening the stream again after it failed or ended. */
  readonly retryAfter: Duration.Duration
  /** Least time between two published views. */
  readonly minInterval: Duration.Duration
  /** Most time between two published views. */
  readonly refreshEvery: Duration.Duration
  /** Time without an update after which the link shows `stale` (`staleAfterMs` of the watch's interval). */
  readonly staleAfter: Duration.Duration
}

/** Defaults for `intercom ui`. */
export const LIVE_VIEW_DEFAULTS = {
  retryAfter: Duration.seconds(1),
  minInterval: Duration.millis(250),
  refreshEvery: Duration.seconds(1)
} as const

/** Publishes views until interrupted; never fails (a broker that goes away is a state the page shows). */
export const runLiveView = (options: LiveViewOptions): Effect.Effect<never> =>
  Effect.gen(function*() {
    const latest = yield* Ref.make<ViewInput | undefined>(undefined)
    /** The clock when the stream last sent a snapshot. */
    const lastInputAt = yield* Ref.make<number | undefined>(undefined)
    const connection = yield* Ref.make<ConnectionState>({ state: "connecting", detail: "connecting to the broker…" })
    const changed = yield* Queue.sliding<void>(1)
    const markChanged = Queue.offer(changed, undefined)

    const publish = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const link = yield* Ref.get(connection)
      const last = yield* Ref.get(lastInputAt)
      const silentFor = last === undefined ? 0 : now - last
      const view = buildView(yield* Ref.get(latest), {
        now,
        stuckAfterMs: options.stuckAfterMs,
        connection: link.state === "connected" && silentFor >= Duration.toMillis(options.staleAfter) ? staleState(silentFor) : link,
        socketPath: options.socketPath
      })
      yield* PubSub.publish(options.hub, JSON.stringify(view))
    })

    const setConnection = (state: ConnectionState) => Ref.set(connection, state).pipe(Effect.andThen(markChanged))
    const lost = (detail: string) => setConnection({ state: "lost", detail })

    const followOnce = options.source.pipe(
      Stream.runForEach((input) =>
        Clock.currentTimeMillis.pipe(
          Effect.flatMap((now) => Ref.set(lastInputAt, now)),
          Effect.andThen(Ref.set(latest, input)),
          Effect.andThen(setConnection({ state: "connected", detail: "connected" }))
        )
      ),
      Effect.matchEffect({
        // The error's message says what is wrong and what to do (ObserveError), e.g. no broker answers.
        onFailure: (error) => lost(`${error.message} Retrying…`),
        onSuccess: () => lost("The broker ended the stream. Retrying…")
      }),
      Effect.andThen(Effect.sleep(options.retryAfter))
    )

    // Publish, then wait for a change or for refreshEvery, whichever comes first; never twice within minInterval.
    const publisher = Effect.gen(function*() {
      yield* publish
      const publishedAt = yield* Clock.currentTimeMillis
      yield* Effect.raceFirst(Queue.take(changed), Effect.sleep(options.refreshEvery))
      const rest = Duration.toMillis(options.minInterval) - ((yield* Clock.currentTimeMillis) - publishedAt)
      if (rest > 0) yield* Effect.sleep(Duration.millis(rest))
    })

    yield* Effect.forkChild(Effect.forever(followOnce))
    return yield* Effect.forever(publisher)
  })

/** The link to a broker that has sent nothing for `silentForMs`, its connection still open. */
const staleState = (silentForMs: number): ConnectionState => ({
  state: "stale",
  detail: `The broker has not answered for ${
    Math.floor(silentForMs / 1_000)
  } s: it may be stopped (SIGSTOP), hung or overloaded. Showing what it last sent; waiting for it…`
})
