/**
 * A client whose session id another process took over (`taken_over`,
 * `takeover-v1`), and how it takes the id back (`reclaim-v1`,
 * `reclaim-released-v1`).
 *
 * Reconnecting after a takeover would take the id back from that process,
 * which would take it back in turn. So the client stays unconnected: the
 * takeover's `IntercomNotConnected` (`TakeoverState.error`, shown as
 * `status.takenOver`) is what every operation fails with, and `whenTakenOver`
 * fails with it at once (a session's ask waiting for its reply ends then, not
 * at its timeout). When the broker granted `reclaim-v1`, `reclaim` asks every
 * `RECLAIM_INTERVAL_MS` to register again: once the process that took the id
 * over has exited (its pid, from `taken_over`), only if the id is free
 * (`ifFree`); while it lives, only if its holder gave it up on the broker
 * (`ifReleased`, `reclaim-released-v1`: the taker moved on) — never from a
 * live holder, not even while that one reconnects to a restarted broker. A
 * registration an older broker made of an `ifReleased` without asking
 * whether the id was given up is dropped (`dropsReleasedRegistration`).
 *
 * Why apart from ConnectionLifetime.ts: the takeover decides whether the
 * client reconnects at all, but not how a connection is attempted or
 * adopted. This module owns the takeover's error and its signal
 * (`TakeoverState`); the attempt, the owner's `shouldReconnect` and the
 * adoption of the connection taken back are the lifetime's, over the
 * connection state it owns, reached through `ReclaimSide`. Touched only by
 * synchronous code.
 */
import { Deferred, Duration, Effect, Exit, type Scope } from "effect"
import { isProcessAlive } from "../config/pidFile.ts"
import { RECLAIM_RELEASED_V1, RECLAIM_V1, RELEASE_GRACE_MS, TAKEOVER_V1 } from "../protocol/features.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import { IntercomNotConnected, type TakenOver, takenOverReason } from "./errors.ts"

/**
 * After a takeover, how often the client asks to register its id again if it is free (`ifFree`,
 * `reclaim-v1`): slow, since a live holder keeps refusing it.
 *
 * @category constants
 * @since 0.1.0
 */
export const RECLAIM_INTERVAL_MS = 5_000

/**
 * Why an `ifReleased` take-back was dropped: the broker registered it as free, not asking whether it was given up.
 *
 * @category constants
 * @since 0.1.0
 */
export const UNGRANTED_RELEASED =
  "the broker did not grant reclaim-released-v1: it registered the session as free without asking whether the taker gave it up (the taker may be reconnecting), so the registration was dropped"

/**
 * Whether a registration made with `ifReleased` on a broker granting `features` must be dropped at
 * once, before anything uses it.
 *
 * This broker (a restarted one, older) did not ask whether the id was given up. With `reclaim-v1`
 * it found the id free: the taker, alive, may be only reconnecting. Without `takeover-v1` either,
 * it ended the taker without telling it, so the taker will take the id back, and keeping this one
 * would make the two take it from each other for ever. (With `takeover-v1` alone it took the id from
 * the taker, which was told and stops: kept, or nobody would hold it.)
 *
 * @category predicates
 * @since 0.1.0
 */
export const dropsReleasedRegistration = (features: ReadonlySet<string>): boolean =>
  !features.has(RECLAIM_RELEASED_V1) && (features.has(RECLAIM_V1) || !features.has(TAKEOVER_V1))

/**
 * A registered connection and the Scope of its own it lives in, not yet adopted.
 *
 * @category models
 * @since 0.1.0
 */
export interface Registered {
  readonly connection: ClientConnection
  readonly scope: Scope.Closeable
}

/**
 * What a take-back needs of the connection state `makeConnectionLifetime` owns.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReclaimSide {
  /** Whether the client is closed. */
  readonly stopped: () => boolean
  /** Completes once the client is closed (`disconnect`): a wait between tries raced with it ends then. */
  readonly whenStopped: Effect.Effect<void>
  /** One attempt with `ifFree` or `ifReleased`; `ungranted` is called if an `ifReleased` registration was dropped. */
  readonly attempt: (only: "ifFree" | "ifReleased", ungranted?: () => void) => Effect.Effect<Registered, IntercomNotConnected>
  /** `attempt` unless the owner says no first (`shouldReconnect`): then `declined`. */
  readonly unlessDeclined: <A>(
    attempt: Effect.Effect<A, IntercomNotConnected>,
    declined: IntercomNotConnected
  ) => Effect.Effect<A, IntercomNotConnected>
  /**
   * Runs one take-back try, from the owner's `shouldReconnect` through the adoption of what it
   * registered, as an attempt in flight that `disconnect` joins (C-BRK-30), as it joins a reconnect's.
   */
  readonly joinable: <A, E>(attempt: Effect.Effect<A, E>) => Effect.Effect<A, E>
  /**
   * Adopts the connection taken back as the client's and, once it is adopted (never on a closed
   * client, which closes it instead), clears the takeover (`TakeoverState.takenBack`); then runs
   * `announce`. Waiting operations see the result.
   */
  readonly adoptTakenBack: (registered: Registered, announce: Effect.Effect<void>) => Effect.Effect<void>
}

/**
 * Whether the session was taken over, and the signal `whenTakenOver` waits on (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export class TakeoverState {
  /** Set once the broker said another connection took this session over: the client never reconnects after. */
  private takenOverError: IntercomNotConnected | undefined
  /** Failed with the takeover's error when it is set (`whenTakenOver`); a fresh one once the session is taken back. */
  private signal = Deferred.makeUnsafe<never, IntercomNotConnected>()
  /** What the takeover's error tells the user to do. */
  private readonly hint: string

  /** Fails once the session is taken over (at once if it is now); never completes otherwise. */
  readonly whenTakenOver: Effect.Effect<never, IntercomNotConnected> = Effect.suspend(() =>
    Deferred.await(this.signal)
  )

  constructor(hint: string) {
    this.hint = hint
  }

  /** The takeover's error while the session is taken over. */
  get error(): IntercomNotConnected | undefined {
    return this.takenOverError
  }

  /** The broker said `over` took the session: notes it, and returns the error operations fail with. */
  takenOver(over: TakenOver): IntercomNotConnected {
    const error = new IntercomNotConnected({ reason: takenOverReason(over, this.hint), takenOver: over })
    this.takenOverError = error
    return error
  }

  /** Says the takeover at once: a wait on the lost connection (an ask's reply) would otherwise run to its timeout. */
  tell(error: IntercomNotConnected): void {
    Deferred.doneUnsafe(this.signal, Exit.fail(error))
  }

  /** The session is the client's again. */
  takenBack(): void {
    this.takenOverError = undefined
    this.signal = Deferred.makeUnsafe<never, IntercomNotConnected>()
  }

  /**
   * After a takeover (`taken_over`): every `RECLAIM_INTERVAL_MS`, once the process that took the id
   * over has exited (its pid from `taken_over`; an unknown pid counts as exited), registers again
   * only if the id is free (`ifFree`, `reclaim-v1`); while it lives, with `released` (the broker
   * granted `reclaim-released-v1`), only if its last holder gave it up there (`ifReleased`: the
   * taker moved on). The broker refuses while another live connection holds it; the pid check, or
   * the broker's record of an `unregister`, covers what the broker cannot see: after a broker
   * restart the live holder is only reconnecting, and the new broker would see the id free. Once
   * back, what was queued for the session meanwhile is delivered as on any re-register, and
   * the takeover is cleared. Ends when the client is closed (at once, in a wait between tries; an
   * attempt in flight then is joined by `disconnect` and closed by the adoption, never adopted, the
   * takeover left as it was), or when `shouldReconnect` says no (`declined`).
   */
  reclaim(
    over: IntercomNotConnected,
    released: boolean,
    sessionId: string,
    declined: IntercomNotConnected,
    side: ReclaimSide
  ): Effect.Effect<void> {
    const asking = { released }
    const pid = over.takenOver?.pid === undefined ? "" : ` (pid ${over.takenOver.pid})`
    /** `attempts` after `ms`; closing the client ends the wait at once, and the take-back with it. */
    const after = (ms: number): Effect.Effect<void, IntercomNotConnected> =>
      Effect.raceFirst(Effect.sleep(Duration.millis(ms)), Effect.andThen(side.whenStopped, Effect.fail(over))).pipe(
        Effect.andThen(Effect.suspend(() => attempts))
      )
    // One try and, registered, its adoption: `disconnect` joins the two (C-BRK-30).
    const tryOnce = side.joinable(
      reclaimAttempt(over, asking, declined, side).pipe(
        Effect.flatMap(({ connection, scope, how }) =>
          side.adoptTakenBack(
            { connection, scope },
            Effect.logInfo(`Intercom: took session ${sessionId} back; the process that took it over${pid} ${how}`)
          )
        )
      )
    )
    // Every interval; sooner after a refusal because the id was given up only just now (its grace).
    const attempts: Effect.Effect<void, IntercomNotConnected> = tryOnce.pipe(
      Effect.catch((error) =>
        side.stopped() || error === declined
          ? Effect.fail(error)
          : after(error.releasedRecently === true ? RELEASE_GRACE_MS : RECLAIM_INTERVAL_MS)
      )
    )
    return after(RECLAIM_INTERVAL_MS).pipe(Effect.ignore)
  }
}

/**
 * One take-back attempt. While the taker's process lives, only if the id was given up
 * (`ifReleased`, while `asking.released`: the broker granted `reclaim-released-v1`; refused here,
 * without asking the broker, otherwise); once it has exited, if the id is free (`ifFree`). A broker
 * that then finds the id free without granting the extension (a restarted, older one with
 * `reclaim-v1`) has its registration dropped, and `asking.released` turns false for good: no more
 * `ifReleased`, to this broker or a later one, until the taker's process exits (then `ifFree`).
 * Succeeds with the connection and how the taker lost the id (left, gave it up, or taken from it
 * by a broker without `reclaim-v1`).
 */
const reclaimAttempt = (
  over: IntercomNotConnected,
  asking: { released: boolean },
  declined: IntercomNotConnected,
  side: ReclaimSide
): Effect.Effect<Registered & { readonly how: string }, IntercomNotConnected> => {
  const pid = over.takenOver?.pid
  const takerAlive = pid === undefined ? Effect.succeed(false) : isProcessAlive(pid)
  return side.unlessDeclined(Effect.flatMap(takerAlive, (alive) =>
    !alive
      ? Effect.map(side.attempt("ifFree"), (back) => ({ ...back, how: "has left" }))
      : asking.released
      ? Effect.map(side.attempt("ifReleased", () => (asking.released = false)), (back) => ({
        ...back,
        how: back.connection.features.has(RECLAIM_RELEASED_V1)
          ? "gave it up"
          : "lost it to this register: the broker (an older version, without reclaim-v1) ignored ifReleased"
      }))
      : Effect.fail(over)), declined)
}
