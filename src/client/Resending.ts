/**
 * Sending again what a connection lost: the client's side of C-BRK-8 and
 * P46 across a reconnect, and a send refused just after one.
 *
 * - A send in flight when the connection drops is sent again, with the same
 *   message id, once the client has reconnected (`retrying`): the broker
 *   answers a retry from its record and never delivers it twice. Only if no
 *   connection comes back within `REPLAY_WINDOW_MS` (2 minutes), or the
 *   client is closed, taken over or declined to reconnect by its owner
 *   (`shouldReconnect`), does it fail with `ConnectionLost`
 *   (outcome unknown) — never silently.
 * - Sends lost with one connection are written again first on the next, as
 *   one batch in the order they were first sent (`lost`, then `writeAgain`;
 *   PendingSends.ts); each caller's retry takes that re-send's answer
 *   instead of writing again.
 * - Just after a reconnect (a broker restart empties the registry), a send
 *   whose target is not found, or a reply whose ask the broker does not
 *   hold, is retried until the rejoin grace is over (`send`): its target may
 *   not have registered again yet; so is, after a loss, every refusal that
 *   says only what the next broker holds now and may change within the
 *   grace ("target disconnected" — an ask's; a child's `supervisor_send`
 *   refused as its supervisor away —, an ambiguous target, …), while one no
 *   retry can change ends as the loss at once: which refusals are which,
 *   afterLoss.ts says, one rule with a late answer's. An ask's retries end
 *   sooner, when its timeout runs out, on the failure that stands.
 *
 * Owns the batch of sends the closed connections left unanswered, and the
 * record of every send a connection lost unanswered (`lostOnTheWay`, abandoned
 * ones too), for the client's life: a send of the same id and signature later,
 * on any connection and by any caller, may have been delivered by its first
 * write, so a "not found" it ends on is `ConnectionLost` and a rebound is
 * marked `afterLoss`. Entries are kept by id and signature (a send of
 * another signature under a reused id is another entry) and expire
 * `REPLAY_WINDOW_MS` after the send's latest lost write (checked on use, no
 * timer); past `MAX_LOST_ON_THE_WAY` the oldest recorded is forgotten. What it
 * reads of the connection state ConnectionLifetime.ts owns — the live
 * connection's retirement, whether a connection may still come, whether the
 * rejoin grace is on — it asks through `ResendSide`, and it gets connections
 * through that side's `withConnection`. Touched only by synchronous code.
 */
import { Clock, Deferred, Duration, Effect } from "effect"
import { REPLAY_WINDOW_MS } from "../protocol/constants.ts"
import { REUSE_REASON_V1 } from "../protocol/features.ts"
import { afterLossOf, endedAfterLoss, retriedInGrace } from "./afterLoss.ts"
import type { ClientConnection } from "./ClientConnection.ts"
import { ConnectionLost, IntercomNotConnected } from "./errors.ts"
import type { Delivery } from "./events.ts"
import type { UnansweredSend } from "./PendingSends.ts"
import { askTimeLeft, type SendError, type SendFrameType, type SendRequest, signatureOf } from "./requests.ts"
import type { StateEpochs } from "./StateEpochs.ts"

/**
 * How long a send that lost its connection waits, at most, for the client to
 * retire that connection, and how long it backs off when no connection comes.
 *
 * @category constants
 * @since 0.1.0
 */
export const LOST_BACKOFF_MS = 250

/**
 * How many sends lost on the way the client remembers at most (`Resending.lostOnTheWay`): past it, the one
 * recorded first is forgotten, and a later send of it reads its verdict as one never lost.
 *
 * @category constants
 * @since 0.1.0
 */
export const MAX_LOST_ON_THE_WAY = 1_024

/**
 * How a send is written on each connection it tries (`Resending.send`): under which frame, and the request as that
 * connection writes it — a child's `supervisor_send` goes to the supervisor the connection is bound to. `addressed`
 * is asked once per write, just before it.
 *
 * @category models
 * @since 0.1.0
 */
export interface SendWriting {
  readonly frameType: SendFrameType
  readonly addressed: (connection: ClientConnection) => SendRequest
}

/** A send in the record of sends lost on the way: its latest lost write's time, and when it was recorded (the bound's order). */
interface LostEntry {
  readonly since: number
  readonly order: number
}

/** Sends lost unanswered by two connections in turn, oldest first, each message once. */
const mergeUnsent = (
  older: ReadonlyArray<UnansweredSend>,
  newer: ReadonlyArray<UnansweredSend>
): ReadonlyArray<UnansweredSend> => {
  if (older.length === 0) return newer
  const seen = new Set(older.map((lost) => lost.request.message.id))
  return [...older, ...newer.filter((lost) => !seen.has(lost.request.message.id))]
}

/**
 * What re-sending reads of the connection state `makeConnectionLifetime` owns.
 *
 * @category models
 * @since 0.1.0
 */
export interface ResendSide {
  /** Uses the live connection at once; without one, waits for a connection (`IntercomClient`'s). */
  readonly withConnection: <A, E>(
    use: (connection: ClientConnection) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E | IntercomNotConnected>
  /**
   * While `connection` is the live one, what completes once the client has retired it after its
   * close (its unanswered sends taken, the reconnect begun); otherwise undefined.
   */
  readonly retirementOf: (connection: ClientConnection) => Deferred.Deferred<void> | undefined
  /** Whether no connection will come again: the client is closed, taken over, or its owner declined to reconnect. */
  readonly ended: () => boolean
  /** Completes once the client is closed (`disconnect`): a back-off raced with it ends then. */
  readonly whenStopped: Effect.Effect<void>
  /** Whether `now` is within the rejoin grace after a reconnect (not after the first connection). */
  readonly rejoining: (now: number) => boolean
}

/**
 * The client's re-sending (see the module header).
 *
 * @category models
 * @since 0.1.0
 */
export class Resending {
  /** Sends the last connection lost unanswered, oldest first: the next connection writes them before anything else. */
  private unsent: ReadonlyArray<UnansweredSend> = []
  /**
   * Every send a connection lost unanswered, by message id, then by signature (two sends under one id with other
   * signatures are two entries, review revbr BR3), abandoned or not, written again or not, with its latest lost write's
   * time; each until `REPLAY_WINDOW_MS` after it, at most `MAX_LOST_ON_THE_WAY` in all (`lostCount`). Keyed by id
   * first so that a send never lost is told at once, with no key built from its content (review revbs BS2).
   */
  private readonly lostSends = new Map<string, Map<string, LostEntry>>()
  /** How many (id, signature) entries `lostSends` holds in all: the bound counts them. */
  private lostCount = 0
  /** How many times a send was recorded: the `order` of the next entry recorded. */
  private recordings = 0
  private readonly side: ResendSide
  /** The epochs a delivery is acknowledged in (`StateEpochs.acknowledged`). */
  private readonly epochs: StateEpochs
  private readonly sendTimeoutMs: number

  constructor(side: ResendSide, epochs: StateEpochs, sendTimeoutMs: number) {
    this.side = side
    this.epochs = epochs
    this.sendTimeoutMs = sendTimeoutMs
  }

  /** Waits `ms` between tries, or until the client is closed, whichever is first: a closed client tries no more. */
  private backOff(ms: number): Effect.Effect<void> {
    return Effect.raceFirst(Effect.sleep(Duration.millis(ms)), this.side.whenStopped)
  }

  /**
   * A closed connection's unanswered sends: all recorded as lost on the way (`lostOnTheWay`), and those
   * `writeAgain` keeps taken for the next connection (merged by id with those already kept). Recording is not
   * re-sending: an abandoned send left out of the batch is recorded all the same.
   */
  lost(unanswered: ReadonlyArray<UnansweredSend>, writeAgain: (send: UnansweredSend) => boolean): void {
    for (const send of unanswered) this.record(send)
    this.unsent = mergeUnsent(this.unsent, unanswered.filter(writeAgain))
  }

  /**
   * Records `send` as lost on the way, as of its latest lost write: a fresh write of it lost again (a caller's retry
   * written anew, `begin`) moves the window on, while the client's own re-send keeps its first write's time (review
   * revbr BR1: the window ran from the first write only, and a later lost write was forgotten with it). Drops what
   * expired or overflowed.
   */
  private record(send: UnansweredSend): void {
    const messageId = send.request.message.id
    const known = this.lostSends.get(messageId)
    const since = Math.max(known?.get(send.signature)?.since ?? send.since, send.since)
    this.forget(messageId, send.signature)
    const signatures = this.lostSends.get(messageId) ?? new Map<string, LostEntry>()
    signatures.set(send.signature, { since, order: this.recordings++ })
    this.lostSends.set(messageId, signatures)
    this.lostCount += 1
    // Expired entries go; past the bound, the one recorded first (the one whose record was least recently renewed).
    let oldest: { readonly messageId: string; readonly signature: string; readonly order: number } | undefined
    for (const [recordedId, recorded] of this.lostSends) {
      for (const [signature, entry] of recorded) {
        if (send.since - entry.since >= REPLAY_WINDOW_MS) this.forget(recordedId, signature)
        else if (oldest === undefined || entry.order < oldest.order) oldest = { messageId: recordedId, signature, order: entry.order }
      }
    }
    if (this.lostCount > MAX_LOST_ON_THE_WAY && oldest !== undefined) this.forget(oldest.messageId, oldest.signature)
  }

  /** Drops the entry of the send `messageId` with this `signature`, if recorded (and its id once it has none left). */
  private forget(messageId: string, signature: string): void {
    const signatures = this.lostSends.get(messageId)
    if (signatures === undefined || !signatures.delete(signature)) return
    this.lostCount -= 1
    if (signatures.size === 0) this.lostSends.delete(messageId)
  }

  /**
   * Whether a connection lost the send `messageId` with this `signature` unanswered within `REPLAY_WINDOW_MS` of
   * its latest lost write, as of `now`: any answer to it read since speaks only for a write after the loss, whoever waits
   * for it (an expired entry is dropped here). Plain synchronous code: a connection's `begin` asks it per send.
   */
  lostOnTheWay(messageId: string, signature: string, now: number): boolean {
    if (this.lostCount === 0) return false
    const entry = this.lostSends.get(messageId)?.get(signature)
    if (entry === undefined) return false
    if (now - entry.since >= REPLAY_WINDOW_MS) {
      this.forget(messageId, signature)
      return false
    }
    return true
  }

  /**
   * Writes what the last connection lost on the way first, in the order it was first sent
   * (PendingSends.ts), those still within the replay window. Refused or cut short, the batch stays
   * here and with this connection's close (merged by id). An answer that comes before its caller is
   * back waits for it as long as the caller would have waited.
   */
  writeAgain(connection: ClientConnection): Effect.Effect<void> {
    return Effect.gen({ self: this }, function*() {
      const now = yield* Clock.currentTimeMillis
      const due = this.unsent.filter((lost) => now - lost.since < REPLAY_WINDOW_MS)
      const resent = yield* connection.resend(due, this.sendTimeoutMs).pipe(
        Effect.as(true),
        Effect.orElseSucceed(() => false)
      )
      if (resent) this.unsent = []
    })
  }

  /**
   * A send whose connection dropped before its answer came is sent again,
   * with the same message id, once a connection is back: the broker answers
   * a retry from its record (P46) and never delivers it twice. Within the
   * replay window (REPLAY_WINDOW_MS) of the first attempt; after it, or once
   * the client is closed, `ConnectionLost` stands (outcome unknown).
   *
   * A send (a child's `supervisorSend` too) is usually sent again by the client itself, first thing on
   * the next connection (`writeAgain`); the retry then joins that re-send, or
   * gets its answer if it came first (PendingSends.ts), and writes nothing.
   * After a loss the retry waits only until the client has retired the
   * dead connection (so that it waits for the next one instead of trying
   * the dead one again), at most `LOST_BACKOFF_MS`; with no connection to
   * be had, it backs off `LOST_BACKOFF_MS` between waits. Closing the client ends that back-off at
   * once, and `ConnectionLost` stands.
   */
  retrying<A, E>(
    attempt: (connection: ClientConnection) => Effect.Effect<A, E | ConnectionLost>
  ): Effect.Effect<A, E | ConnectionLost | IntercomNotConnected> {
    const side = this.side
    return Effect.flatMap(Clock.currentTimeMillis, (startedAt) => {
      /** The retirement of the connection the last try used, while it was the live one. */
      let usedRetired: Deferred.Deferred<void> | undefined
      const tryOn = (connection: ClientConnection) => {
        usedRetired = side.retirementOf(connection)
        return attempt(connection)
      }
      // After a loss, a connection that does not come back in time is not the end: the window is.
      const again = (lost: ConnectionLost): Effect.Effect<A, E | ConnectionLost | IntercomNotConnected> =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          side.ended() || now - startedAt >= REPLAY_WINDOW_MS
            ? Effect.fail(lost)
            : side.withConnection(tryOn).pipe(
              Effect.catchIf(
                (error): error is ConnectionLost | IntercomNotConnected =>
                  error instanceof ConnectionLost || error instanceof IntercomNotConnected,
                (error) =>
                  Effect.andThen(error instanceof ConnectionLost ? afterLoss() : this.backOff(LOST_BACKOFF_MS), again(lost))
              )
            ))
      const afterLoss = () => {
        const retired = usedRetired
        return retired === undefined ? Effect.void : Effect.timeoutOption(Deferred.await(retired), LOST_BACKOFF_MS)
      }
      return side.withConnection(tryOn).pipe(
        Effect.catchIf(
          (error): error is ConnectionLost => error instanceof ConnectionLost,
          (lost) => Effect.andThen(afterLoss(), again(lost))
        )
      )
    })
  }

  /**
   * A send. Just after a reconnect, "not found" may mean "not back yet" (a
   * broker restart empties its registry), and a reply's "no pending ask"
   * may mean "not asked again yet" (a durable broker killed before it
   * stored an ask it had already delivered: the asker re-sends it once it
   * is back, docs/store.md): the send is retried with the same id until the
   * grace ends, then the failure stands. After a loss, so is a "target
   * disconnected" (`retriedInGrace`, afterLoss.ts): an ask's re-send refused
   * so failed at once, a "not delivered" though the first write may have
   * been. A child's `supervisor_send` goes this way too (`writing`: its frame, addressed
   * on each connection to that connection's supervisor), with the same handling of a loss (review revbr BR4: it went
   * through `retrying` alone, and a "not found" or a rebound after a loss failed at once, read as the first write's).
   */
  send(
    request: SendRequest,
    writing: SendWriting = { frameType: "send", addressed: () => request }
  ): Effect.Effect<Delivery, SendError | IntercomNotConnected> {
    return this.sendRejoining(request, writing, 0, { lost: undefined, reuseReasons: false })
  }

  /**
   * Retries those failures after a reconnect every 25, 50, 100, 200, then
   * 250 ms, until the grace ends, or, for an ask, until its timeout since its
   * first send (`askTimeLeft`) runs out; closing the client ends the wait between
   * tries at once (then `IntercomNotConnected`). If the send was lost with a connection on
   * the way — this caller's, or one the client wrote it again after before this caller came
   * (`ClientConnection.writtenAfterLoss`) — a failure that stands says what the broker it reached
   * next knows, which does not tell whether the first attempt arrived (a broker killed after
   * delivering it and before storing it forgot it): the outcome is unknown,
   * `ConnectionLost` carrying that refusal — at the grace's end, and when the client is closed (or
   * no connection will come again) during the wait between tries; at once for a refusal no retry can change
   * (afterLoss.ts `unknown`).
   */
  private sendRejoining(
    request: SendRequest,
    writing: SendWriting,
    attempt: number,
    lostOnTheWay: { lost: ConnectionLost | undefined; reuseReasons: boolean }
  ): Effect.Effect<Delivery, SendError | IntercomNotConnected> {
    // What the send ends on when `error` stands: after a loss, as afterLoss.ts reads it (the loss carrying the
    // refusal, or a rebound marked `afterLoss`).
    const standing = (error: SendError | IntercomNotConnected): SendError | IntercomNotConnected =>
      lostOnTheWay.lost === undefined ? error : endedAfterLoss(lostOnTheWay.lost, error, lostOnTheWay.reuseReasons)
    return this.retrying((c) =>
      // Looked up as the write is entered, as the connection's `begin` marks it (review revbr BR2: looked up when the
      // answer was read, a write entered inside the window and answered just after it lost its mark).
      Effect.flatMap(Clock.currentTimeMillis, (writtenAt) => {
        const addressed = writing.addressed(c)
        // The signature is built only for an id the record holds: a send never lost builds no string here (BS2).
        const recorded = this.lostSends.has(request.message.id) &&
          this.lostOnTheWay(request.message.id, signatureOf(addressed, writing.frameType), writtenAt)
        return c.send(addressed, this.sendTimeoutMs, writing.frameType).pipe(
          Effect.tap((delivery) => Effect.sync(() => this.epochs.acknowledged(c.stateEpoch, request, delivery))),
          Effect.tapError((error) =>
            Effect.sync(() => {
              // The refusal is read by the grants of the connection that answered it (`reuse-reason-v1`: review
              // revdh DH3).
              lostOnTheWay.reuseReasons = c.features.has(REUSE_REASON_V1)
              if (error._tag === "ConnectionLost") lostOnTheWay.lost = error
              // A caller that came only after a connection lost this send (it joined the re-send, took its kept
              // answer, or wrote it once more after it, on this connection or after another loss; or retried one
              // abandoned before the loss) never saw the loss itself, but what it reads answers a write after it.
              else if (lostOnTheWay.lost === undefined && (recorded || c.writtenAfterLoss(addressed, writing.frameType))) {
                lostOnTheWay.lost = new ConnectionLost({ operation: "send", messageId: request.message.id })
              }
            })
          )
        )
      })
    ).pipe(
      // One rule with a late answer's (afterLoss.ts): after a loss, a rebound answers a re-send, the first write
      // maybe delivered (marked `afterLoss`, review revas AS2); a refusal that says only what the next broker holds
      // now and no retry can change, or that is the record of the first write this broker took (delivered or queued
      // for the session `to` named then), ends as the loss at once, carrying it.
      Effect.catchIf(
        (error) => {
          if (lostOnTheWay.lost === undefined) return false
          const kind = afterLossOf(error, lostOnTheWay.reuseReasons)
          return kind === "rebound" || kind === "unknown" || kind === "received" || kind === "deliveredHere" ||
            kind === "queued"
        },
        (error) => Effect.fail(standing(error))
      ),
      // The same rule: "not found", "target disconnected" (an ask's, or a child's "supervisor away", review revbs
      // BS3) and the other refusals it classes `retried` may mean "not back yet", and the first write may have been
      // delivered.
      Effect.catchIf(
        (error) => retriedInGrace(error, lostOnTheWay.lost !== undefined, lostOnTheWay.reuseReasons),
        (error) =>
          Effect.gen({ self: this }, function*() {
            const now = yield* Clock.currentTimeMillis
            if (!this.side.rejoining(now)) {
              return yield* Effect.fail(standing(error))
            }
            yield* this.backOff(Math.min(250, 25 * 2 ** attempt))
            // Closed during the wait: a send lost on the way has an unknown outcome, whatever the next broker said.
            if (this.side.ended() && lostOnTheWay.lost !== undefined) return yield* Effect.fail(standing(error))
            // An ask whose timeout ran out during the wait is not written again, and ends as at the grace's
            // end, on the failure that stands: not as an ask timed out unwritten, which its asker takes for a
            // question asked and left unanswered (sim seed 192 of `--reader-return --client-timings`).
            const left = askTimeLeft(request, yield* Clock.currentTimeMillis)
            if (left !== undefined && left <= 0) return yield* Effect.fail(standing(error))
            return yield* this.sendRejoining(request, writing, attempt + 1, lostOnTheWay)
          })
      )
    )
  }
}
