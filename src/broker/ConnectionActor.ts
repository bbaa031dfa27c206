/**
 * One connection as an actor (design.md), with two fibers:
 *
 * - the reader — the connection's own fiber — hands frame batches to the
 *   Router and offers the batch's parked output (waiting for room) before it
 *   reads again: backpressure on exactly the sender that needs it;
 * - the writer drains the bounded outbox, plus pending membership changes,
 *   into batched writes.
 *
 * A close requested elsewhere (takeover, protocol error, registration
 * timeout) interrupts the reader; `finish` then runs uninterruptibly: output
 * still parked is forced through, an `end` close flushes the outbox first
 * (bounded by END_GRACE), and what was never written goes back to the Router.
 */
import { Deferred, Duration, Effect, Exit, Fiber, Queue, type Scope } from "effect"
import type { Connection } from "../transport/Connection.ts"
import type { ResolvedCoreOptions } from "./options.ts"
import { END_OF_OUTPUT, FEED_TICK, type OutboundItem, Peer } from "./Peer.ts"
import type { Router } from "./Router.ts"

/** How long an ending connection may take to flush its output before it is destroyed. */
const END_GRACE = Duration.seconds(2)

const readLoop = (router: Router, peer: Peer) =>
  Effect.gen(function*() {
    const connection = peer.connection
    while (!peer.isClosing) {
      const frames = yield* connection.read
      router.handleBatch(peer, frames)
      router.wakeTouched()
      if (router.parkFor(peer)) {
        // Backpressure: this connection is not read again until its output fits.
        while (peer.parked.length > 0) {
          const [recipient, item] = peer.parked[0]!
          if (!(yield* Queue.offer(recipient.outbox, item))) router.undeliverable(item)
          peer.parked.shift()
        }
      }
    }
  }).pipe(
    Effect.catchTag("FrameTooLarge", (error) => Effect.sync(() => router.reportProtocolError(peer, error.message))),
    Effect.catch(() => Effect.void)
  )

const writeLoop = (router: Router, peer: Peer) =>
  Effect.gen(function*() {
    const connection = peer.connection
    while (true) {
      const items = yield* Queue.takeAll(peer.outbox)
      const frames: Array<string> = []
      router.collectFeed(peer, frames)
      let ending = false
      const overflow = peer.overflow
      peer.overflow = undefined
      for (const item of overflow === undefined ? items : [...items, ...overflow]) {
        if (typeof item === "string") frames.push(item)
        else if (item === FEED_TICK) peer.feedPending = false
        else if (item === END_OF_OUTPUT) ending = true
        else frames.push(item.frame)
      }
      if (frames.length > 0) yield* connection.writeAll(frames)
      if (ending) return yield* connection.end
    }
  }).pipe(
    Effect.catch(() => Effect.sync(() => router.close(peer, "destroy")))
  )

/**
 * Takes what is left in an outbox and shuts it, in one synchronous step so no
 * offer can slip in between: offers still waiting are taken too, and later
 * ones are refused (their senders requeue the mail).
 */
const drainAndShutdown = (peer: Peer): Array<OutboundItem> => {
  const items: Array<OutboundItem> = []
  const outbox = peer.outbox
  for (let exit = Queue.takeUnsafe(outbox); exit !== undefined && Exit.isSuccess(exit); exit = Queue.takeUnsafe(outbox)) {
    items.push(exit.value)
  }
  Queue.shutdownUnsafe(outbox)
  if (peer.overflow !== undefined) items.push(...peer.overflow)
  peer.overflow = undefined
  return items
}

const finish = (router: Router, peer: Peer, writer: Fiber.Fiber<void>) =>
  Effect.gen(function*() {
    router.close(peer, "destroy") // no-op when a close was already requested
    router.forceParked(peer)
    const mode = yield* Deferred.await(peer.closing)
    if (mode === "end") {
      yield* Queue.offer(peer.outbox, END_OF_OUTPUT).pipe(
        Effect.andThen(Fiber.await(writer)),
        Effect.timeoutOption(END_GRACE),
        Effect.ignore
      )
    }
    yield* Fiber.interrupt(writer)
    yield* peer.connection.destroy
    router.detach(peer, drainAndShutdown(peer))
  })

export const runConnection = (
  router: Router,
  connection: Connection,
  options: ResolvedCoreOptions
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.withFiber<void, never, Scope.Scope>((self) =>
    Effect.gen(function*() {
      const outbox = yield* Queue.bounded<OutboundItem>(options.outboxCapacity)
      const peer = new Peer(connection, outbox, router.currentTime(), () => self.interruptUnsafe())
      router.attach(peer)
      const writer = yield* Effect.forkScoped(writeLoop(router, peer), { startImmediately: true })
      yield* readLoop(router, peer).pipe(Effect.ensuring(finish(router, peer, writer)))
    })
  ).pipe(Effect.onInterrupt(() => Effect.void))
