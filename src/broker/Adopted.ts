/**
 * Connections the broker takes over with no fiber and no Scope of their own
 * (`BrokerService.adopt`: the Unix-socket listener's): an idle connection is
 * its socket's listeners, its `Peer`, reader and writer, and an entry here.
 * This module owns that entry — the set of live peers, the connections
 * waiting for admission, and the fibers closing connections — and is what
 * the broker's shutdown closes them through (`closeAll`).
 *
 * A connection's life, each step in plain code from the socket's events:
 * - admission: a place now (`AdmissionGate.tryEnter`), or a wait in the
 *   gate's queue (`AdmissionGate.wait`) during which a `Waiting` (Waiting.ts)
 *   is the socket's receiver: it answers `health` probes, holds the other
 *   frames (reading on, up to the held limit) and sees the connection's end,
 *   which drops it — its wait withdrawn, its held frames with it, never
 *   registered. A place passes to it inside the batch that registered
 *   another connection, so it goes on in a short fiber of its own, after a
 *   yield: a stack of its own (AdmissionGate.ts); its reader then takes over
 *   from the `Waiting` (`Waiting.handOver`);
 * - reading: its `PeerReader` gets the socket's batches (`Connection.receive`);
 * - the end: once its reader stops (a close was requested), `finish`
 *   (ConnectionActor.ts) runs in a fiber, uninterruptibly; its permit is
 *   released after it and the peer forgotten.
 *
 * A connection that cannot push (`Connection.receive` missing) is run the
 * way `accept` runs it: `runConnection`, in a fiber and Scope of its own.
 */
import { Effect, Fiber } from "effect"
import type { Connection } from "../transport/Connection.ts"
import { PushControl } from "../transport/receive.ts"
import { type AdmissionGate, MAX_WAITING, type Permit, TOO_MANY_WAITING } from "./AdmissionGate.ts"
import { finish, runConnection } from "./ConnectionActor.ts"
import * as Encode from "./encode.ts"
import { Peer } from "./Peer.ts"
import { PeerReader, type StopListener } from "./PeerReader.ts"
import { PeerWriter } from "./PeerWriter.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"
import { Waiting, type WaitingOwner } from "./Waiting.ts"

/** Starts a fiber in the broker's context. */
export type ForkBroker = (effect: Effect.Effect<void>) => Fiber.Fiber<void>

/** The broker's adopted connections; see the module header. */
export class AdoptedConnections implements WaitingOwner, StopListener {
  private readonly router: Router
  private readonly admission: AdmissionGate
  private readonly fork: ForkBroker
  private readonly peers = new Set<Peer>()
  private readonly waiting = new Set<Waiting>()
  private readonly closing = new Set<Fiber.Fiber<void>>()
  /** The broker is shutting down: a connection adopted now is destroyed at once. */
  private shut = false

  /**
   * @param router the Router the connections' frames go to.
   * @param admission the broker's admission gate.
   * @param fork starts a fiber in the broker's context.
   */
  constructor(router: Router, admission: AdmissionGate, fork: ForkBroker) {
    this.router = router
    this.admission = admission
    this.fork = fork
  }

  /** Connections live (admitted, not yet closed). */
  get size(): number {
    return this.peers.size
  }

  /** Takes `connection` over: admission, then its reader; see the module header. */
  adopt(connection: Connection): void {
    if (this.shut) return this.run(connection.destroy)
    if (connection.receive === undefined) {
      // Pulled only: a fiber reads for it anyway, so it runs as `accept` runs a connection.
      return this.track(this.fork(Effect.scoped(runConnection(this.router, connection, this.admission)).pipe(
        Effect.ensuring(connection.destroy)
      )))
    }
    const permit = this.admission.tryEnter()
    if (permit !== undefined) return this.start(connection, permit, undefined)
    if (this.admission.waiting >= MAX_WAITING) {
      return this.run(
        connection.writeAll([Encode.errorFrame(TOO_MANY_WAITING)]).pipe(Effect.ignore, Effect.andThen(connection.end))
      )
    }
    const waiting = new Waiting(connection, this.router.heldBack.limit, this)
    waiting.reading(new PushControl(connection))
    this.waiting.add(waiting)
    // The place passes inside another connection's batch: go on after a yield (module header).
    waiting.cancel = this.admission.wait((permit) =>
      this.run(Effect.andThen(Effect.yieldNow, Effect.sync(() => this.admitted(waiting, permit))))
    )
    connection.receive(waiting)
  }

  /**
   * Closes every connection (broker shutdown) and waits until each has
   * finished closing; a connection adopted after it is destroyed at once.
   * The Router is told first (`Router.stopping`), so a session these closes
   * end leaves its durable question waits stored, as a crash would.
   */
  readonly closeAll: Effect.Effect<void> = Effect.suspend(() => {
    this.shut = true
    // The sessions these closes end end no durable wait: the store keeps what a crash would (Router.stopping).
    this.router.stopping()
    for (const waiting of this.waiting) waiting.drop()
    for (const peer of [...this.peers]) closePeer(peer, "destroy")
    return Fiber.awaitAll([...this.closing])
  }).pipe(Effect.asVoid)

  /** Runs `effect` in a fiber of its own, tracked until it ends (shutdown waits for it); `WaitingOwner.run`. */
  run(effect: Effect.Effect<void>): void {
    this.track(this.fork(effect))
  }

  /** A waiting connection ended or was dropped (`WaitingOwner.gone`): it is destroyed. */
  gone(waiting: Waiting): void {
    this.waiting.delete(waiting)
    this.run(waiting.connection.destroy)
  }

  private track(fiber: Fiber.Fiber<void>): void {
    if (fiber.pollUnsafe() !== undefined) return
    this.closing.add(fiber)
    fiber.addObserver(() => this.closing.delete(fiber))
  }

  private admitted(waiting: Waiting, permit: Permit): void {
    this.waiting.delete(waiting)
    if (waiting.gone || this.shut) {
      permit.release()
      return
    }
    this.start(waiting.connection, permit, waiting)
  }

  /** An admitted connection: its `Peer`, then its reader gets the frames held and those to come. */
  private start(connection: Connection, permit: Permit, waiting: Waiting | undefined): void {
    const router = this.router
    const fork = this.fork
    const peer = new Peer(
      connection,
      router.currentTime(),
      (peer) => new PeerReader(router, peer, permit, fork),
      (peer) => new PeerWriter(router, peer, fork)
    )
    this.peers.add(peer)
    router.attach(peer)
    const reader = peer.reader
    reader.whenStopped(this)
    if (waiting !== undefined) return waiting.handOver(reader)
    if (!reader.isStopping) {
      connection.receive?.(reader)
      reader.reading(new PushControl(connection))
    }
  }

  /** A reader stopped (`StopListener`): its connection closes (`finish`), then its place is released. */
  readerStopped(peer: Peer, permit: Permit): void {
    this.run(Effect.uninterruptible(finish(this.router, peer, peer.writer)).pipe(
      Effect.ensuring(Effect.sync(() => {
        permit.release()
        this.peers.delete(peer)
      }))
    ))
  }
}
