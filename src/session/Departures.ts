/**
 * Departures: what a peer leaving, or the broker being replaced, does to a
 * generation's waits and pending asks.
 *
 * - A peer's `session_left` (or a `Left` the client made up after a
 *   reconnect for a peer the broker no longer lists, client/MembershipView.ts)
 *   ends the wait on it (C-ASK-9) and retires its
 *   pending asks (C-RPL-10), once the messages read before it were handled
 *   (`IntercomClient.caughtUp`), without holding up the presence stream: the
 *   round trip that confirms a waited-on peer is gone runs per wait.
 * - After a reconnect the broker reached may be a new one that never knew the
 *   peer (no `session_left` ever comes): once the rejoin grace is over, an
 *   ordinary wait on a peer that broker does not list ends too (C-ASK-2).
 * - A reconnect to a broker that lost its state (`IntercomClient.stateLost`,
 *   `state-epoch-v1`) ends at once the wait on a question that state held
 *   (`BrokerStateLost`); the client has logged what else was lost.
 *
 * Owns the departures noted and not acted on yet and the confirmation in
 * progress; every fiber runs in the generation's Scope, so closing the
 * generation ends them. Split from `Inbound.ts`, which hands messages to the
 * host; this module only reads presence and reconnects.
 */
import { Duration, Effect, Latch, Option, type Scope, Stream } from "effect"
import type { BrokerStateLost as StateLostEvent } from "../client/StateEpochs.ts"
import { BrokerStateLost, ReplyPeerDisconnected } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { Waiter } from "./ReplyWaiter.ts"

/**
 * Departed peers noted and not acted on yet (their departures wait for
 * `IntercomClient.caughtUp`) that a generation keeps, at most: past it the
 * oldest is acted on at once.
 *
 * @category constants
 * @since 0.1.0
 */
export const DEPARTURES_LIMIT = 1_000

/**
 * Starts a generation's departure handling in the current Scope (the
 * generation's): the presence fiber that notes departures, the fiber that acts
 * on them, and the check after each reconnect.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runDepartures = (generation: Generation): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { client, slot, tracker } = generation

  /**
   * A peer left: the wait on it ends (C-ASK-9) and its asks are retired (C-RPL-10) — only once the
   * messages read before the departure were handled (`caughtUp`), so a reply it sent just before it
   * left answers the ask, and an ask it sent is recorded before it is retired.
   *
   * The presence fiber only notes the departure (`departures`, each peer once, however often it
   * left meanwhile, at most DEPARTURES_LIMIT peers) and wakes one fiber that acts on all those noted, after `caughtUp`: a departure
   * waiting for a slow host never holds up the presence events read after it, which the fiber
   * drains as they come. A wait on a departed peer is then confirmed by its own fiber in the
   * generation's Scope (`confirmDeparture`), off both: its `list` round trip can take up to the
   * client's list timeout on a stalled connection.
   */
  const departures = new Set<string>()
  const departuresNoted = Latch.makeUnsafe(false)
  const generationScope = yield* Effect.scope
  /** The wait whose departure is being confirmed (the slot holds one at a time); `again` asks for one more pass. */
  let confirming: { readonly waiter: Waiter; again: boolean } | undefined

  /**
   * Confirms that the peer `waiter` waits on is gone, and ends the wait if so. A round trip first, a
   * guard for brokers that write a `session_left` ahead of the output queued before it (ours did before
   * it wrote departures after the queued output): the answer to a `list` comes after everything queued
   * for us before it, and `caughtUp` again routes what came. Output the peer had parked behind
   * backpressure can still come after its `session_left`; a message so read is `senderLeft`.
   *
   * A wait whose target left after its question was (last) sent (`leftSince` its `sentMark`) ends, even if the
   * peer is back: the incarnation that had the question left, and the one that joined may not have it.
   * Any other wait on a peer that is back keeps waiting: it was made to the rejoined peer, which has the
   * question. Back means both that the client has read a `session_joined` for it since (`isDeparted`
   * false) and that the `list` answer names it; `isDeparted` alone would call a peer back whose
   * departure was read on an earlier connection. A departure noted while this runs makes it check again.
   */
  const confirmDeparture = (run: { readonly waiter: Waiter; again: boolean }, peerId: string): Effect.Effect<void> =>
    Effect.gen(function*() {
      while (true) {
        const listed = yield* Effect.option(client.list)
        yield* client.caughtUp
        // Read as the wait is now: a question resent after `E_TARGET_REBOUND` rebinds it (a fresh
        // `sentMark`, perhaps another target), and a wait no longer on this peer is not this departure's.
        const waiter = slot.current()
        if (waiter?.outcome !== run.waiter.outcome || waiter.targetId !== peerId) return
        const leftSinceSent = waiter.sentMark !== undefined && (yield* client.leftSince(peerId, waiter.sentMark))
        const back = !leftSinceSent && Option.isSome(listed) && listed.value.some((session) => session.id === peerId) &&
          !(yield* client.isDeparted(peerId))
        if (!back) return slot.peerLeft(waiter, new ReplyPeerDisconnected({ peerId }))
        // Read and let go in one synchronous step: a departure noted after this starts a run of its own.
        if (!run.again) {
          if (confirming === run) confirming = undefined
          return
        }
        run.again = false
      }
    }).pipe(Effect.ensuring(Effect.sync(() => {
      if (confirming === run) confirming = undefined
    })))

  /** Acts on the departures noted, after the messages read before them were handled (`caughtUp`). */
  const actOnDepartures: Effect.Effect<void> = Effect.gen(function*() {
    yield* departuresNoted.await
    departuresNoted.closeUnsafe()
    if (departures.size === 0) return
    const peers = [...departures]
    departures.clear()
    yield* client.caughtUp
    yield* Effect.forEach(peers, actOn, { discard: true })
    yield* generation.pendingChanged // C-HLT-3: their asks no longer count
  })

  /** Retires `peerId`'s asks, and starts (or repeats) the confirmation of a wait on it. Never waits. */
  const actOn = (peerId: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      tracker.forgetSender(peerId)
      const waiter = slot.current()
      if (waiter === undefined || waiter.targetId !== peerId) return Effect.void
      if (confirming !== undefined && confirming.waiter.outcome === waiter.outcome) {
        confirming.again = true
        return Effect.void
      }
      const run = { waiter, again: false }
      confirming = run
      return Effect.asVoid(Effect.forkIn(confirmDeparture(run, peerId), generationScope, { startImmediately: true }))
    })

  /**
   * Notes a departure for `actOnDepartures`. Past DEPARTURES_LIMIT peers noted (a host that takes no
   * message for long while peers come and go), the oldest is acted on at once rather than kept: an ask
   * of it not recorded yet then stays pending until its own timeout, instead of the notes growing.
   */
  const noteDeparture = (peerId: string): Effect.Effect<void> => {
    departures.delete(peerId)
    departures.add(peerId)
    departuresNoted.openUnsafe()
    if (departures.size <= DEPARTURES_LIMIT) return Effect.void
    const oldest = departures.values().next().value ?? peerId
    departures.delete(oldest)
    return Effect.andThen(actOn(oldest), generation.pendingChanged)
  }

  /**
   * After a reconnect (C-ASK-2, C-ASK-9): the broker reached may be a new one (the last stopped) that
   * never knew the peer a wait is on, so no `session_left` for it will come. Once the rejoin grace is
   * over (a peer that was going to register again has), a `list`; a wait whose target it does not name
   * ends with `ReplyPeerDisconnected`. A target named keeps its wait: a durable broker kept the ask.
   * `caughtUp` first, so a reply read before the answer is routed before the wait is judged. A durable
   * question (no `sentMark`) is left alone, as it is on a departure: the broker keeps it for the peer;
   * so is a wait on this child's supervisor (contact_supervisor), which `list` need not name.
   * A later reconnect replaces the check of the one before (`switchMap`); a `list` that fails (the
   * connection dropped again) leaves it to that next one.
   *
   * A broker that lost its state (a memory-mode broker restarted) is told apart by its state epoch
   * (`stateLost`, below); a broker that does not say (no `state-epoch-v1`) cannot be, and a target
   * that registered again with it keeps the wait until its timeout.
   */
  const checkAfterReconnect: Effect.Effect<void> = Effect.gen(function*() {
    yield* Effect.sleep(Duration.millis(client.rejoinGraceMs))
    const waiter = slot.current()
    if (waiter === undefined || waiter.targetId === undefined || waiter.sentMark === undefined) return
    const peerId = waiter.targetId
    // contact_supervisor: the supervisor may be in another group, which `list` does not show.
    if ((yield* client.status).supervisorSessionId === peerId) return
    const listed = yield* Effect.option(client.list)
    if (Option.isNone(listed)) return
    yield* client.caughtUp
    if (listed.value.some((session) => session.id === peerId)) return
    slot.peerLeft(waiter, new ReplyPeerDisconnected({ peerId, reason: "not on the broker after a reconnect" }))
  })

  /**
   * The broker reached after a reconnect lost the state the last one held (`state-epoch-v1`): a wait
   * on a question that state acknowledged ends now with `BrokerStateLost` — that broker never heard
   * of it, and would refuse its reply — instead of at its timeout. Only a question the old broker
   * acknowledged (the client lists them): one sent, or sent again, on the new connection is that
   * broker's, and waits; so does a durable question, which the client asks again by itself (C-DQ-6).
   */
  const onStateLost = (event: StateLostEvent): Effect.Effect<void> =>
    Effect.gen(function*() {
      const lostWaiter = () => {
        const waiter = slot.current()
        if (waiter?.questionId === undefined || waiter.targetId === undefined) return undefined
        return event.asks.some((lost) => lost.messageId === waiter.questionId) ? waiter : undefined
      }
      if (lostWaiter() === undefined) return
      // What was read before the new connection is routed first: a reply that came in time answers.
      yield* client.caughtUp
      // Read as the wait is now: one resent meanwhile (`E_TARGET_REBOUND`) is another question.
      const waiter = lostWaiter()
      if (waiter?.questionId === undefined || waiter.targetId === undefined) return
      slot.peerLeft(
        waiter,
        new BrokerStateLost({ questionId: waiter.questionId, peerId: waiter.targetId, peerName: waiter.targetName })
      )
    })

    yield* Effect.forkScoped(client.stateLost.pipe(Stream.runForEach(onStateLost)), { startImmediately: true })
    yield* Effect.forkScoped(Effect.forever(actOnDepartures), { startImmediately: true })
    // A departure the client made up after a reconnect (`resync`) is not acted on: the session may only be
    // slower to come back than the grace, and its asks to this one still wait on the broker. Waits on it are
    // `checkAfterReconnect`'s.
    yield* Effect.forkScoped(
      client.presenceEvents.pipe(Stream.runForEach((event) =>
        event._tag === "Left" && event.resync !== true ? noteDeparture(event.sessionId) : Effect.void
      )),
      { startImmediately: true }
    )
    yield* Effect.forkScoped(
      client.reconnects.pipe(Stream.switchMap(() => Stream.fromEffect(checkAfterReconnect)), Stream.runDrain),
      { startImmediately: true }
    )
  })
