/**
 * One connection as an actor (design.md), with two fibers:
 *
 * - the reader — the connection's own fiber — hands frame batches to the
 *   Router and offers the batch's parked output (waiting for room) before it
 *   reads again: backpressure on exactly the sender that needs it;
 * - the writer drains the bounded outbox, plus pending membership changes,
 *   into batched writes.
 *
 * The actor owns its fibers and its admission permit, never the `Peer`'s
 * fields: it moves items between `Output` and the socket. A close requested
 * elsewhere (takeover, protocol error, registration timeout) interrupts the
 * reader; `finish` then runs uninterruptibly: output still parked is forced
 * through, an `end` close flushes the outbox first (bounded by END_GRACE),
 * and what was never written goes back to the Router, in order: the rest of
 * a write the socket did not finish, then what was still queued.
 */
import { Deferred, Duration, Effect, Fiber, Queue, type Scope } from "effect"
import type { Connection } from "../transport/Connection.ts"
import type { AdmissionGate, Permit } from "./AdmissionGate.ts"
import type { ResolvedCoreOptions } from "./options.ts"
import type { WriteBatch } from "./Output.ts"
import { END_OF_OUTPUT, type OutboundItem, Peer } from "./Peer.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"

/** How long an ending connection may take to flush its output before it is destroyed. */
const END_GRACE = Duration.seconds(2)

/**
 * Reads until the connection closes. The admission `permit` is released once
 * the connection has registered, so the next waiting connection may start.
 */
const readLoop = (router: Router, peer: Peer, permit: Permit) =>
  Effect.gen(function*() {
    const connection = peer.connection
    const output = router.output
    while (!peer.isClosing) {
      const frames = yield* connection.read
      router.handleBatch(peer, frames)
      output.wakeTouched()
      if (peer.state === "registered") permit.release()
      if (output.parkFor(peer)) {
        // Backpressure: this connection is not read again until its output fits.
        for (let next = output.nextParked(peer); next !== undefined; next = output.nextParked(peer)) {
          const [recipient, item] = next
          output.parkedOffered(peer, yield* Queue.offer(recipient.outbox, item))
        }
      }
    }
  }).pipe(
    Effect.catchTag("FrameTooLarge", (error) => Effect.sync(() => router.reportProtocolError(peer, error.message))),
    Effect.catch(() => Effect.void)
  )

/**
 * The batch being written, owned by the actor until its write completes: if
 * the connection closes first, what was not handed over is taken back.
 */
interface InFlight {
  batch: WriteBatch | undefined
}

const writeLoop = (router: Router, peer: Peer, inFlight: InFlight) =>
  Effect.gen(function*() {
    const connection = peer.connection
    while (true) {
      const batch = router.output.takeForWrite(peer, yield* Queue.takeAll(peer.outbox))
      if (batch.frames.length > 0) {
        inFlight.batch = batch
        yield* connection.writeAll(batch.frames)
        inFlight.batch = undefined
      }
      if (batch.ending) return yield* connection.end
    }
  }).pipe(
    Effect.catch(() => Effect.sync(() => closePeer(peer, "destroy")))
  )

const finish = (router: Router, peer: Peer, writer: Fiber.Fiber<void>, inFlight: InFlight) =>
  Effect.gen(function*() {
    closePeer(peer, "destroy") // no-op when a close was already requested
    router.output.forceParked(peer)
    const mode = yield* Deferred.await(peer.closing)
    if (mode === "end") {
      yield* Queue.offer(peer.outbox, END_OF_OUTPUT).pipe(
        Effect.andThen(Fiber.await(writer)),
        Effect.timeoutOption(END_GRACE),
        Effect.ignore
      )
    }
    yield* Fiber.interrupt(writer)
    // Before destroying: the socket still knows how much of an unfinished write it took.
    const batch = inFlight.batch
    const unwritten = batch === undefined
      ? []
      : router.output.unwrittenOf(batch, peer.connection.unfinishedWrite() ?? batch.frames.length)
    yield* peer.connection.destroy
    // In order: the unfinished write's rest, then what was still queued.
    router.detach(peer, [...unwritten, ...router.output.drainOnClose(peer)])
  })

/**
 * Runs one connection's actor until the connection closes. It first waits for
 * admission (at most `maxUnregistered` connections wait to register at once),
 * so a burst of connections queues rather than being dropped.
 */
export const runConnection = (
  router: Router,
  connection: Connection,
  options: ResolvedCoreOptions,
  admission: AdmissionGate
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.withFiber<void, never, Scope.Scope>((self) =>
    Effect.gen(function*() {
      const permit = yield* admission.enter
      const outbox = yield* Queue.bounded<OutboundItem>(options.outboxCapacity)
      const peer = new Peer(connection, outbox, router.currentTime(), () => self.interruptUnsafe())
      router.attach(peer)
      const inFlight: InFlight = { batch: undefined }
      const writer = yield* Effect.forkScoped(writeLoop(router, peer, inFlight), { startImmediately: true })
      yield* readLoop(router, peer, permit).pipe(Effect.ensuring(finish(router, peer, writer, inFlight)))
    })
  )
