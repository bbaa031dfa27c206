/**
 * One connection as an actor (design.md), with two fibers, and a third while
 * it is held back:
 *
 * - the reader — the connection's own fiber — hands frame batches to the
 *   Router. When a batch's output does not fit its recipients' outboxes, a
 *   drainer fiber offers it (waiting for room) while the reader holds the
 *   connection's further frames — answering only `health` and `list` at once
 *   — until it fits: backpressure on exactly the sender that needs it;
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
import { isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import type { Connection } from "../transport/Connection.ts"
import { type AdmissionGate, admit, type Permit } from "./AdmissionGate.ts"
import type { ResolvedCoreOptions } from "./options.ts"
import type { Output, WriteBatch } from "./Output.ts"
import { END_OF_OUTPUT, type OutboundItem, Peer } from "./Peer.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"

/** How long an ending connection may take to flush its output before it is destroyed. */
const END_GRACE = Duration.seconds(2)

/** Frame text held while a connection is held back, before it stops being read at all. */
const HELD_LIMIT = 1_048_576

/** Offers the reader's parked output in order, each waiting for room. */
const drainParked = (output: Output, peer: Peer) =>
  Effect.gen(function*() {
    for (let next = output.nextParked(peer); next !== undefined; next = output.nextParked(peer)) {
      const [recipient, item] = next
      output.parkedOffered(peer, yield* output.offer(recipient, item))
    }
  })

const DRAINED: unique symbol = Symbol("drained")

/**
 * Reads until the connection closes. The admission `permit` is released once
 * the connection has registered, so the next waiting connection may start.
 *
 * Backpressure: while this connection's output waits for room (a drainer
 * fiber offers it), its other frames are held, in order, and handled once it
 * fits — but `health`, and `list` when no held frame changes membership, are
 * answered at once, so a sender held back by a slow receiver still passes
 * its liveness probe. Past HELD_LIMIT of held text the connection is not read
 * until its output fits.
 */
const readLoop = (router: Router, peer: Peer, permit: Permit, initial: ReadonlyArray<string>) => {
  // The drainer is the reader's: it goes when the reader goes (its pending offer is withdrawn,
  // so what is still parked stays parked, for `finish` to force through).
  let drainer: Fiber.Fiber<void> | undefined
  return Effect.gen(function*() {
    const connection = peer.connection
    const output = router.output
    // What it sent while it waited for admission comes first.
    const held: Array<string> = [...initial]
    let heldText = 0
    let heldChangesMembership = false
    const handle = (frames: ReadonlyArray<string>) => {
      router.handleBatch(peer, frames)
      output.wakeTouched()
      if (peer.state === "registered" || peer.state === "observing") permit.release()
    }
    while (!peer.isClosing) {
        if (drainer === undefined) {
          if (held.length > 0) {
            handle(held.splice(0))
            heldText = 0
            heldChangesMembership = false
          } else {
            handle(yield* connection.read)
          }
          if (output.parkFor(peer)) drainer = yield* Effect.forkChild(drainParked(output, peer))
          continue
        }
        if (heldText >= HELD_LIMIT) {
          yield* Fiber.join(drainer)
          drainer = undefined
          continue
        }
        const next = yield* Effect.raceFirst(Effect.as(Fiber.await(drainer), DRAINED), connection.read)
        if (next === DRAINED) {
          drainer = undefined
          continue
        }
        // Answered early, ahead of parked messages and acks, but never ahead of an earlier such answer.
        let ownParked = output.parksAnswerFor(peer)
        for (const text of next) {
          const type = frameType(text)
          if (!ownParked && (type === "health" || (type === "list" && !heldChangesMembership))) {
            router.seen(peer) // C-HLT-4: a frame answered early is seen too
            router.handleFrame(peer, text)
            // An answer that met this connection's own full outbox was parked: the rest waits behind it.
            if (output.parkFor(peer)) ownParked = true
          } else {
            held.push(text)
            heldText += text.length
            if (type === "register" || type === "unregister" || type === "presence") heldChangesMembership = true
          }
        }
        output.wakeTouched()
        // An early answer that met a full outbox joined the parked output; a finished drainer takes it anew.
        if (peer.parked.length > 0 && drainer.pollUnsafe() !== undefined) {
          drainer = yield* Effect.forkChild(drainParked(output, peer))
        }
    }
  }).pipe(
    Effect.ensuring(Effect.suspend(() => drainer === undefined ? Effect.void : Fiber.interrupt(drainer))),
    Effect.catchTags({
      FrameTooLarge: (error) => Effect.sync(() => router.reportProtocolError(peer, error.message)),
      InvalidUtf8: (error) => Effect.sync(() => router.reportProtocolError(peer, error.message))
    }),
    Effect.catch(() => Effect.void)
  )
}

/** The `type` of a frame's text, cheaply, or undefined (the Router reports what is wrong with it). */
const frameType = (text: string): string | undefined => {
  const frame = parseFrameText(text)
  return isFrameDecodeError(frame) ? undefined : frame.type
}

/**
 * The batch being written, owned by the actor until its write completes: if
 * the connection closes first, what was not handed over is taken back.
 */
interface InFlight {
  batch: WriteBatch | undefined
  /** The socket was handed the batch (before: it waits for the durable store, and none of it was written). */
  writing: boolean
}

const writeLoop = (router: Router, peer: Peer, inFlight: InFlight) =>
  Effect.gen(function*() {
    const connection = peer.connection
    const journal = router.journal
    while (true) {
      // Wait for output without taking it, then take it and record it as in flight in one
      // uninterruptible step: a close interrupting the writer between taking items from the
      // outbox and recording them would lose them (seed 716 found it), and `finish` sends back
      // whatever `inFlight` holds.
      yield* Queue.peek(peer.outbox)
      const batch = yield* Effect.uninterruptible(Effect.map(Queue.clear(peer.outbox), (items) => {
        const taken = router.output.takeForWrite(peer, items)
        inFlight.batch = taken.frames.length > 0 ? taken : undefined
        inFlight.writing = false
        return taken
      }))
      if (batch.frames.length > 0) {
        // Durable: nothing leaves before the changes that preceded it are stored (StoreJournal.ts).
        if (journal !== undefined && !journal.mayWrite(peer)) yield* journal.awaitStored(peer)
        inFlight.writing = true
        yield* connection.writeAll(batch.frames)
        inFlight.batch = undefined
        inFlight.writing = false
        router.written(peer, batch, batch.frames.length)
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
    const written = batch === undefined
      ? 0
      : inFlight.writing
      ? peer.connection.unfinishedWrite() ?? batch.frames.length
      : 0
    if (batch !== undefined) router.written(peer, batch, written)
    const unwritten = batch === undefined ? [] : router.output.unwrittenOf(batch, written)
    yield* peer.connection.destroy
    // In order: the unfinished write's rest, then what was still queued.
    router.detach(peer, [...unwritten, ...router.output.drainOnClose(peer)])
  })

/**
 * Runs one connection's actor until the connection closes. It first waits for
 * admission (at most `maxUnregistered` connections wait to register at once),
 * so a burst of connections queues rather than being dropped; its health
 * probes are answered meanwhile (AdmissionGate.ts).
 */
export const runConnection = (
  router: Router,
  connection: Connection,
  options: ResolvedCoreOptions,
  admission: AdmissionGate
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.withFiber<void, never, Scope.Scope>((self) =>
    Effect.gen(function*() {
      const admitted = yield* admit(admission, connection)
      if (admitted === undefined) return
      const outbox = yield* Queue.bounded<OutboundItem>(options.outboxCapacity)
      const peer = new Peer(connection, outbox, router.currentTime(), () => self.interruptUnsafe())
      router.attach(peer)
      const inFlight: InFlight = { batch: undefined, writing: false }
      const writer = yield* Effect.forkScoped(writeLoop(router, peer, inFlight), { startImmediately: true })
      yield* readLoop(router, peer, admitted.permit, admitted.held).pipe(
        Effect.ensuring(finish(router, peer, writer, inFlight))
      )
    })
  )
