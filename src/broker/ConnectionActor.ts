/**
 * One connection as an actor (design.md): a reader fiber that hands frame
 * batches to the Router and waits for parked output before reading on, and a
 * writer fiber that drains the bounded outbox — plus pending membership
 * changes — into batched writes. The connection's Scope is its lifetime.
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
      const parked = router.takeParked()
      if (parked !== undefined) {
        // Backpressure: this connection is not read again until its output fits.
        for (const [recipient, item] of parked) {
          if (!(yield* Queue.offer(recipient.outbox, item))) router.undeliverable(item)
        }
      }
    }
  }).pipe(
    Effect.catchTag("FrameTooLarge", (error) =>
      Effect.sync(() => {
        router.reportProtocolError(peer, error.message)
      })),
    Effect.catch(() => Effect.void),
    Effect.ensuring(Effect.sync(() => router.close(peer, "destroy")))
  )

const writeLoop = (router: Router, peer: Peer) =>
  Effect.gen(function*() {
    const connection = peer.connection
    while (true) {
      const items = yield* Queue.takeAll(peer.outbox)
      const frames: Array<string> = []
      router.collectFeed(peer, frames)
      let ending = false
      for (const item of items) {
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
const drainAndShutdown = (outbox: Queue.Queue<OutboundItem>): Array<OutboundItem> => {
  const items: Array<OutboundItem> = []
  for (let exit = Queue.takeUnsafe(outbox); exit !== undefined && Exit.isSuccess(exit); exit = Queue.takeUnsafe(outbox)) {
    items.push(exit.value)
  }
  Queue.shutdownUnsafe(outbox)
  return items
}

export const runConnection = (
  router: Router,
  connection: Connection,
  options: ResolvedCoreOptions
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const outbox = yield* Queue.bounded<OutboundItem>(options.outboxCapacity)
    const peer = new Peer(connection, outbox, router.currentTime())
    router.attach(peer)
    const writer = yield* Effect.forkScoped(writeLoop(router, peer), { startImmediately: true })
    const reader = yield* Effect.forkScoped(readLoop(router, peer), { startImmediately: true })
    const mode = yield* Deferred.await(peer.closing)
    yield* Fiber.interrupt(reader)
    if (mode === "end") {
      yield* Queue.offer(outbox, END_OF_OUTPUT).pipe(
        Effect.andThen(Fiber.await(writer)),
        Effect.timeoutOption(END_GRACE)
      )
    }
    yield* Fiber.interrupt(writer)
    yield* connection.destroy
    yield* Effect.sync(() => router.detach(peer, drainAndShutdown(outbox)))
  }).pipe(Effect.onInterrupt(() => Effect.void))
