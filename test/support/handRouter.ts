/**
 * A Router driven by hand, for tests that put each batch, each write and
 * each drainer offer at an exact point: no fiber runs (a writer's or a
 * drainer's fork is a fiber that does nothing, so a writer whose write does
 * not complete at once stays busy), and a batch is handled as a connection's
 * reader handles one. Connections are `fakeConnection`s or the test's own.
 */
import { Effect, Fiber } from "effect"
import { type BrokerCoreOptions, resolveCoreOptions } from "../../src/broker/options.ts"
import { Peer } from "../../src/broker/Peer.ts"
import { PeerReader } from "../../src/broker/PeerReader.ts"
import { PeerWriter } from "../../src/broker/PeerWriter.ts"
import { makeRouterSignals, Router, type RouterTelemetry } from "../../src/broker/Router.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import type { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"

/** A Router driven by hand, and how to feed it. */
export interface HandRouter {
  readonly router: Router
  /**
   * Handles `frames` from `peer` as its reader does: one batch, what it
   * parked taken before the flush. True when the batch parked output.
   */
  readonly batch: (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>) => boolean
  /** `connection`'s peer, attached to the Router (not registered: send it a `register` with `batch`). */
  readonly attach: (connection: Connection) => Peer
  /** `peer`'s connection closes as ConnectionActor.finish closes it, with no grace: parked output forced, then detached. */
  readonly close: (peer: Peer) => void
  /**
   * `peer`'s connection closes as `finish` closes it when its writing is
   * abandoned (a destroyed socket): marked closing, parked output forced,
   * the unfinished write given back, then detached.
   */
  readonly closeAbandoning: (peer: Peer) => void
  /** One try of `reader`'s drainer: true when its oldest parked item left the list (the offer did not wait). */
  readonly tryDrain: (reader: Peer) => boolean
}

/**
 * A Router with `options` (no idle exit unless they say) on the clock `now`,
 * with `telemetry` (a `ReaderObserver`'s calls, say) when given, and durable
 * questions (`questions-v1`, its `questions` concern) with `withQuestions`:
 * no question fiber runs, so a `question_ask` stays asked, not handled, until
 * the test makes the fiber's calls itself (Questions.wait, Questions.notify);
 * with `journal`, a durable broker's (no store writer runs: the test takes its batches).
 *
 * @example
 * const { router, batch, attach } = yield* handRouter({ outboxCapacity: 2 })
 * const peer = attach(fakeConnection(1, false))
 * batch(peer, [registerFrame({ sessionId: "a" })])
 */
export const handRouter = (
  options: BrokerCoreOptions,
  now: () => number = () => 1_000_000,
  telemetry: RouterTelemetry = {},
  withQuestions = false,
  journal?: StoreJournal
): Effect.Effect<HandRouter> =>
  Effect.gen(function*() {
    const signals = yield* makeRouterSignals(withQuestions)
    const router = new Router(resolveCoreOptions({ idleExit: null, ...options }), now, signals, journal, telemetry)
    const fork = () => Effect.runFork(Effect.void)
    const permit = { release: () => {} }
    const batch = (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>): boolean => {
      router.output.startBatch()
      router.handleBatch(peer, frames.map((frame) => JSON.stringify(frame)))
      const parked = router.output.parkFor(peer)
      router.output.endBatch()
      return parked
    }
    const attach = (connection: Connection): Peer => {
      const peer = new Peer(
        connection,
        now(),
        (peer) => new PeerReader(router, peer, permit, fork),
        (peer) => new PeerWriter(router, peer, fork)
      )
      router.attach(peer)
      return peer
    }
    const close = (peer: Peer): void => {
      router.output.end.forceParked(peer)
      router.detach(peer, [...router.output.end.drainOnClose(peer), ...router.output.end.takeOwnParked(peer)])
      router.output.end.releaseWaiters(peer)
    }
    const closeAbandoning = (peer: Peer): void => {
      closePeer(peer, "destroy")
      router.output.end.forceParked(peer)
      router.abandonWrites(peer)
      router.detach(peer, [...router.output.end.drainOnClose(peer), ...router.output.end.takeOwnParked(peer)])
      router.output.end.releaseWaiters(peer)
    }
    const tryDrain = (reader: Peer): boolean => {
      const entry = router.output.drain.nextParked(reader)
      if (entry === undefined) return false
      const fiber = Effect.runFork(router.output.drain.offerParked(reader, entry))
      const moved = reader.parked[0] !== entry
      Effect.runSync(Fiber.interrupt(fiber))
      return moved
    }
    return { router, batch, attach, close, closeAbandoning, tryDrain }
  })

/**
 * A frame a hand-driven recipient is written, as the return-order tests read
 * it: a message's text, `left <id>` or `joined <id>`; other frames are
 * dropped.
 */
export const orderLabel = (frame: OutFrame): Array<string> => {
  const parsed: { type: string; message?: { content: { text: string } }; sessionId?: string; session?: { id: string } } =
    JSON.parse(frameText(frame))
  if (parsed.type === "message") return [`${parsed.message?.content.text}`]
  if (parsed.type === "session_left") return [`left ${parsed.sessionId}`]
  if (parsed.type === "session_joined") return [`joined ${parsed.session?.id}`]
  return []
}
