/**
 * One connection as an actor (design.md): one fiber, the reader, and a
 * writer that takes a fiber only while it has something to wait for:
 *
 * - the reader — the connection's own fiber — hands frame batches to the
 *   Router. When a batch's output does not fit its recipients' outboxes, a
 *   drainer fiber offers it (waiting for room) while the reader holds the
 *   connection's further frames — answering only `health` and `list` at once
 *   — until it fits: backpressure on exactly the sender that needs it;
 * - the writer (PeerWriter.ts) writes the outbox, plus pending membership
 *   changes, in one write per batch of routing: synchronously while the
 *   socket takes it, in a fiber of its own while the socket is full or the
 *   durable store must catch up.
 *
 * The actor owns its fibers and its admission permit, never the `Peer`'s
 * fields: it moves items between `Output` and the socket. A close requested
 * elsewhere (takeover, protocol error, registration timeout) interrupts the
 * reader; `finish` then runs uninterruptibly: output still parked is forced
 * through, an `end` close flushes the outbox first (bounded by END_GRACE),
 * and what was never written goes back to the Router, in order: the rest of
 * a write the socket did not finish, then what was still queued.
 */
import { Deferred, Duration, Effect, Fiber, type Scope } from "effect"
import { isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import type { Connection } from "../transport/Connection.ts"
import { type AdmissionGate, admit, type Permit } from "./AdmissionGate.ts"
import type { Output } from "./Output.ts"
import { Peer } from "./Peer.ts"
import { PeerWriter } from "./PeerWriter.ts"
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
 * its liveness probe, and a `received` confirmation is applied at once, so
 * that mail it confirms is not sent again if the connection closes while
 * held. Past HELD_LIMIT of held text the connection is not read
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
    /** Handles frames `from` up to `to` as one batch, then writes its output; true when some of it was parked (no room yet). */
    const batch = (frames: ReadonlyArray<string>, from: number, to: number): boolean => {
      let parked = false
      output.startBatch()
      try {
        router.handleBatch(peer, frames, from, to)
      } finally {
        // Taken before the flush: what a flush queues is not this batch's to park.
        parked = output.parkFor(peer)
        output.endBatch()
      }
      return parked
    }
    /**
     * Handles a batch, then writes its output; true when some of it was parked.
     * Trailing `received` frames are handled after the rest's output is
     * written, so a forwarded message does not wait for them. Behind parked
     * output they are applied at once, one by one, as the held path applies
     * any `received` (below): held, a confirmation would die with the
     * connection and its mail would be sent again (known issue 8).
     */
    const handle = (frames: ReadonlyArray<string>): boolean => {
      const end = outputEnd(frames)
      let parked = batch(frames, 0, end)
      if (end < frames.length) {
        if (!parked) parked = batch(frames, end, frames.length)
        else {
          for (let i = end; i < frames.length; i++) {
            router.seen(peer)
            router.handleFrame(peer, frames[i]!)
          }
        }
      }
      if (peer.state === "registered" || peer.state === "observing") permit.release()
      return parked
    }
    while (!peer.isClosing) {
        if (drainer === undefined) {
          let parked: boolean
          if (held.length > 0) {
            const frames = held.splice(0)
            heldText = 0
            heldChangesMembership = false
            parked = handle(frames)
          } else {
            parked = handle(yield* connection.read)
          }
          if (parked) drainer = yield* Effect.forkChild(drainParked(output, peer))
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
        output.startBatch()
        try {
          for (const text of next) {
            const type = frameType(text)
            if (type === "received") {
              // A confirmation (`received-v1`) answers nothing and only raises a count, so no order binds it;
              // held, it would die with the connection and its mail would be sent again (known issue 8).
              router.seen(peer)
              router.handleFrame(peer, text)
              continue
            }
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
        } finally {
          output.endBatch()
        }
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

/** How `received-v1` clients write their confirmations (ClientConnection.ts); another spelling is handled in order. */
const RECEIVED_PREFIX = `{"type":"received"`

/**
 * Where a batch's frames that may write something end: after it come only
 * `received` frames (each confirms frames read; its answer is none). At
 * least the first frame is in the first part.
 */
const outputEnd = (frames: ReadonlyArray<string>): number => {
  let end = frames.length
  while (end > 1 && frames[end - 1]!.startsWith(RECEIVED_PREFIX)) end--
  return end
}

/** The `type` of a frame's text, cheaply, or undefined (the Router reports what is wrong with it). */
const frameType = (text: string): string | undefined => {
  const frame = parseFrameText(text)
  return isFrameDecodeError(frame) ? undefined : frame.type
}

const finish = (router: Router, peer: Peer, writer: PeerWriter) =>
  Effect.gen(function*() {
    closePeer(peer, "destroy") // no-op when a close was already requested
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
 * probes are answered meanwhile (AdmissionGate.ts).
 */
export const runConnection = (
  router: Router,
  connection: Connection,
  admission: AdmissionGate
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.withFiber<void, never, Scope.Scope>((self) =>
    Effect.gen(function*() {
      const admitted = yield* admit(admission, connection)
      if (admitted === undefined) return
      const fork = Effect.runForkWith(yield* Effect.context<never>())
      const peer = new Peer(
        connection,
        router.currentTime(),
        () => self.interruptUnsafe(),
        (peer) => new PeerWriter(router, peer, fork)
      )
      router.attach(peer)
      yield* readLoop(router, peer, admitted.permit, admitted.held).pipe(
        Effect.ensuring(finish(router, peer, peer.writer))
      )
    })
  )
