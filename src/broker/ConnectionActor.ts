/**
 * One connection as an actor (design.md): a reader, a writer, and its close:
 *
 * - the reader (PeerReader.ts) hands frame batches to the Router from the
 *   transport's own events, in plain code, with no fiber waiting in `read`;
 *   while a batch's output waits for room it holds the connection's further
 *   frames (backpressure on exactly the sender that needs it);
 * - the writer (PeerWriter.ts) writes the outbox, plus pending membership
 *   changes, in one write per batch of routing: synchronously while the
 *   socket takes it, in a fiber of its own while the socket is full or the
 *   durable store must catch up;
 * - `finish` closes it once its reader stopped.
 *
 * Two ways to hold a connection's lifetime: `runConnection` (here) keeps a
 * fiber and a Scope per connection, waiting for admission, then for the
 * reader to stop, then running `finish` — `BrokerService.accept`, which the
 * in-memory broker tests use; `AdoptedConnections` (Adopted.ts) keeps
 * neither — `BrokerService.adopt`, the Unix socket's and the simulation's.
 *
 * The actor owns its fiber and its admission permit, never the `Peer`'s
 * fields: it moves items between `Output` and the socket. A close requested
 * elsewhere (takeover, protocol error, registration timeout) stops the
 * reader; `finish` then runs uninterruptibly: output still parked is forced
 * through, an `end` close flushes the outbox first (bounded by END_GRACE),
 * and what was never written goes back to the Router, in order: the rest of
 * a write the socket did not finish, then what was still queued. Meanwhile
 * the reader still takes the connection's `received` frames (what the
 * transport held, what comes before the destroy), so mail its client
 * confirmed does not go back as unread (known issue 20).
 */
import { Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import type { Connection } from "../transport/Connection.ts"
import { receiveFrames } from "../transport/receive.ts"
import type { AdmissionGate } from "./AdmissionGate.ts"
import { Peer } from "./Peer.ts"
import { PeerReader } from "./PeerReader.ts"
import { PeerWriter } from "./PeerWriter.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"
import { admit } from "./Waiting.ts"

/** How long an ending connection may take to flush its output before it is destroyed. */
const END_GRACE = Duration.seconds(2)

/**
 * Closes a connection whose reader stopped: forces its parked output
 * through, flushes it on an `end` close, destroys it and gives back what was
 * never written. Run uninterruptibly.
 */
export const finish = (router: Router, peer: Peer, writer: PeerWriter): Effect.Effect<void> =>
  Effect.gen(function*() {
    // The reader's drainer goes with it: its pending offer is withdrawn, what is still parked stays parked.
    const drainer = peer.reader.drainer
    if (drainer !== undefined) yield* Fiber.interrupt(drainer)
    closePeer(peer, "destroy") // no-op when a close was already requested
    // Until it is destroyed, the `received` frames it still sends (or that the transport holds) are applied.
    peer.reader.confirmWhileClosing()
    // Its own parked output stays with it, taken back last, after what its outbox held (it was queued
    // after that); a registration of its session meanwhile hands it over at once (OutputEnd.handOver).
    router.output.end.forceParked(peer)
    const mode = yield* Deferred.await(peer.closing)
    if (mode === "end") {
      router.output.endOutput(peer)
      yield* writer.drain().pipe(Effect.timeoutOption(END_GRACE), Effect.ignore)
    }
    const running = writer.running
    if (running !== undefined) yield* Fiber.interrupt(running)
    // Before destroying: the socket still knows how much of an unfinished write it took. The rest is kept
    // on the peer, not here: a rejoin read while the destroy runs takes it first (Router.abandoned).
    router.abandonWrites(peer)
    yield* peer.connection.destroy
    // In order: the unfinished write's rest (unless a rejoin took it), then what was still queued, then
    // what was parked for it.
    router.detach(peer, [...router.output.end.drainOnClose(peer), ...router.output.end.takeOwnParked(peer)])
    router.output.end.releaseWaiters(peer)
  })

/**
 * Runs one connection's actor until the connection closes. It first waits for
 * admission (at most `maxUnregistered` connections wait to register at once),
 * so a burst of connections queues rather than being dropped; its health
 * probes are answered meanwhile, and a close then ends it unregistered
 * (Waiting.ts).
 */
export const runConnection = (
  router: Router,
  connection: Connection,
  admission: AdmissionGate
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const admitted = yield* admit(admission, connection, router.heldBack.limit)
    if (admitted === undefined) return
    const fork = Effect.runForkWith(yield* Effect.context<never>())
    const peer = new Peer(
      connection,
      router.currentTime(),
      (peer) => new PeerReader(router, peer, admitted.permit, fork),
      (peer) => new PeerWriter(router, peer, fork)
    )
    router.attach(peer)
    const reader = peer.reader
    yield* Effect.gen(function*() {
      // A connection that waited: what it sent meanwhile comes first, and its `Waiting` passes on the rest.
      if (admitted.waiting !== undefined) admitted.waiting.handOver(reader)
      else if (!reader.isStopping) reader.reading(yield* receiveFrames(connection, reader))
      yield* reader.stopped()
    }).pipe(Effect.ensuring(finish(router, peer, peer.writer)))
  })
