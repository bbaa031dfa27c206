/**
 * One connection as an actor (design.md): a reader and a writer that take a
 * fiber only while they have something to wait for, and one fiber that waits
 * for the connection's close and then finishes it:
 *
 * - the reader (PeerReader.ts) is called by the transport with each batch of
 *   frames and hands it to the Router. When a batch's output does not fit its
 *   recipients' outboxes, a drainer fiber offers it (waiting for room) while
 *   the reader holds the connection's further frames — answering only
 *   `health` and `list` at once — until it fits: backpressure on exactly the
 *   sender that needs it;
 * - the writer (PeerWriter.ts) writes the outbox, plus pending membership
 *   changes, in one write per batch of routing: synchronously while the
 *   socket takes it, in a fiber of its own while the socket is full or the
 *   durable store must catch up.
 *
 * The actor owns its fibers and its admission permit, never the `Peer`'s
 * fields: it moves items between `Output` and the socket. A close requested
 * elsewhere (takeover, protocol error, registration timeout) pauses the
 * reader and wakes the actor's fiber; `finish` then stops the reader's drainer
 * and runs uninterruptibly: output still parked is forced
 * through, an `end` close flushes the outbox first (bounded by END_GRACE),
 * and what was never written goes back to the Router, in order: the rest of
 * a write the socket did not finish, then what was still queued.
 */
import { Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import type { Connection } from "../transport/Connection.ts"
import { type AdmissionGate, admit } from "./AdmissionGate.ts"
import { Peer } from "./Peer.ts"
import { PeerReader } from "./PeerReader.ts"
import { PeerWriter } from "./PeerWriter.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"

/** How long an ending connection may take to flush its output before it is destroyed. */
const END_GRACE = Duration.seconds(2)

const finish = (router: Router, peer: Peer) =>
  Effect.gen(function*() {
    const writer = peer.writer
    closePeer(peer, "destroy") // no-op when a close was already requested
    yield* peer.reader.stop()
    router.output.forceParked(peer)
    const mode = yield* Deferred.await(peer.closing)
    if (mode === "end") {
      router.output.endOutput(peer)
      yield* writer.drain().pipe(Effect.timeoutOption(END_GRACE), Effect.ignore)
    }
    const running = writer.running
    if (running !== undefined) yield* Fiber.interrupt(running)
    // Before destroying: the socket still knows how much of an unfinished write it took.
    const batch = writer.inFlight
    const written = batch === undefined ? 0 : peer.connection.unfinishedWrite() ?? batch.frames.length
    if (batch !== undefined) router.written(peer, batch, written)
    const unwritten = batch === undefined ? [] : router.output.unwrittenOf(batch, written)
    yield* peer.connection.destroy
    // In order: the unfinished write's rest, then what was still queued.
    router.detach(peer, [...unwritten, ...router.output.drainOnClose(peer)])
    router.output.releaseWaiters(peer)
  })

/**
 * Runs one connection's actor until the connection closes. It first waits for
 * admission (at most `maxUnregistered` connections wait to register at once),
 * so a burst of connections queues rather than being dropped; its health
 * probes are answered meanwhile (AdmissionGate.ts). Then no fiber reads: the
 * transport hands frames to the reader (PeerReader.ts), and the actor's fiber
 * only waits for the close, to `finish`.
 */
export const runConnection = (
  router: Router,
  connection: Connection,
  admission: AdmissionGate
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const admitted = yield* admit(admission, connection)
    if (admitted === undefined) return
    // Admission may resume this fiber inside another connection's batch (the permit it released passes
    // here, synchronously): go on from a fresh stack, or a burst of waiters nests batch in batch.
    yield* Effect.yieldNow
    const fork = Effect.runForkWith(yield* Effect.context<never>())
    const peer = new Peer(
      connection,
      router.currentTime(),
      (peer) => new PeerWriter(router, peer, fork),
      (peer) => new PeerReader(router, peer, admitted.permit, admitted.held, fork)
    )
    router.attach(peer)
    yield* Effect.andThen(peer.reader.start(), Deferred.await(peer.closing)).pipe(
      Effect.ensuring(finish(router, peer))
    )
    // A defect while handling a batch closed the connection; the actor dies with it, as a reader fiber did.
    const defect = peer.reader.defect
    if (defect !== undefined) return yield* Effect.die(defect.cause)
  })
