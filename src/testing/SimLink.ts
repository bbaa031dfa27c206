/**
 * One simulated connection: wraps both endpoints of an in-memory pair so the
 * world can watch every frame (the Ledger's wire taps) and inject faults.
 *
 * Faults model a local socket:
 * - `sever(side)` drops the connection on one side, as if that process's socket
 *   vanished: frames still travelling *toward* that side are lost, frames it
 *   had already written still reach the other side (which then sees the end).
 * - `stall(side)` stops that side reading; the other side's writes back up
 *   once the in-memory buffer is full (backpressure, a slow consumer).
 * - `delay(side, ms)` makes each write from that side take `ms` first.
 *
 * "In flight" is exact: a frame is in flight from the moment the transport
 * takes it (frame by frame, so a write that meets a full buffer is partly
 * flushed) until the wrapper returns it to the reader. Frames of a write that
 * never got them across were never written: the ledger forgets them, and their
 * writer must take them back (the broker requeues them).
 */
import { Effect, Exit, Latch } from "effect"
import { frameTexts } from "../protocol/framing.ts"
import { type Connection, ConnectionClosed } from "../transport/Connection.ts"
import type { Ledger, Side } from "./Ledger.ts"

/** A test-only change to what the broker writes (a deliberately broken build). */
export type BrokerOutputFault = (linkId: number, frames: ReadonlyArray<string>) => ReadonlyArray<string>

/**
 * A test-only change to what the broker reads (a deliberately broken build):
 * the frames a client wrote, as the broker takes them.
 */
export type BrokerInputFault = (linkId: number, frames: ReadonlyArray<string>) => ReadonlyArray<string>

const other = (side: Side): Side => side === "client" ? "broker" : "client"

const removeDelivered = (inFlight: Array<string>, frames: ReadonlyArray<string>): void => {
  for (const frame of frames) {
    if (inFlight[0] === frame) {
      inFlight.shift()
      continue
    }
    const index = inFlight.indexOf(frame)
    if (index >= 0) inFlight.splice(index, 1)
  }
}

/**
 * One watched, faultable in-memory connection. The simulation makes one per
 * dial and hands its `client` and `server` endpoints to the client and the
 * broker; scenarios reach it through a session's `drop`, `stall` and
 * `delayWrites`.
 */
export class SimLink {
  /** The network's connection id (`link #<id>` in the trace). */
  readonly id: number
  /** The broker incarnation it was dialled to. */
  readonly brokerEpoch: number
  /** The session that dialled it, once `attach`ed. */
  owner: string | undefined = undefined
  /** Frames on their way to each side. */
  private readonly inFlight: Record<Side, Array<string>> = { client: [], broker: [] }
  private readonly gates: Record<Side, Latch.Latch> = { client: Latch.makeUnsafe(true), broker: Latch.makeUnsafe(true) }
  private readonly delays: Record<Side, number> = { client: 0, broker: 0 }
  private severedSide: Side | undefined = undefined
  /**
   * The sides that destroyed their endpoint themselves (a client's failed liveness probe, say): the
   * ledger counted what was on its way to that side lost with it then.
   */
  private readonly destroyed: Record<Side, boolean> = { client: false, broker: false }
  private closedFlag = false
  /** The broker's side has seen the connection end (its read failed, or it destroyed it). */
  private brokerDone = false
  /** Writes sleeping out a delay right now (a delay cleared by `heal` still finishes its sleep). */
  private delayedWrites = 0
  private readonly ledger: Ledger
  private readonly raw: { readonly client: Connection; readonly server: Connection }
  /** The client's endpoint, watched. */
  readonly client: Connection
  /** The broker's endpoint, watched (and rewritten by `brokerOutputFault`, if any). */
  readonly server: Connection

  /**
   * Wraps the raw endpoint pair of connection `id`; what the broker writes
   * goes through `brokerOutputFault`, what it reads through `brokerInputFault`.
   */
  constructor(
    id: number,
    brokerEpoch: number,
    raw: { readonly client: Connection; readonly server: Connection },
    ledger: Ledger,
    brokerOutputFault: BrokerOutputFault | undefined,
    brokerInputFault?: BrokerInputFault
  ) {
    this.id = id
    this.brokerEpoch = brokerEpoch
    this.raw = raw
    this.ledger = ledger
    this.client = this.wrap("client", raw.client, undefined, undefined)
    this.server = this.wrap("broker", raw.server, brokerOutputFault, brokerInputFault)
  }

  /** Names the session (and client) that dialled this link; frames are observed from then on. */
  attach(owner: string, client: string): void {
    this.owner = owner
    this.ledger.linkOpened(this.id, owner, client, this.brokerEpoch)
  }

  /** The side it was dropped on, if it was. */
  get severed(): Side | undefined {
    return this.severedSide
  }

  /** Dropped, or closed by either side. */
  get closed(): boolean {
    return this.closedFlag || this.severedSide !== undefined
  }

  /**
   * A stall, a delay, frames a client wrote that the broker has not read
   * yet, or an end the broker has not seen yet is holding back what the
   * broker or the ledger would otherwise agree on: state comparisons must
   * wait. Unread frames matter when a write runs in a fiber the TestClock
   * does not wait for (a held return's old connection, simulation/heldReturn.ts):
   * the ledger counts its `unregister` once handed over, the broker once it
   * reads it (seed 9629 `--held-return`).
   */
  get settling(): boolean {
    return !this.brokerDone &&
      (this.stalled || this.delayed || this.delayedWrites > 0 || this.closed || this.inFlight.broker.length > 0)
  }

  /** Closed, but the broker has not seen the end yet (its reader is parked, stalled or gone). */
  get lingering(): boolean {
    return this.closed && !this.brokerDone
  }

  /** A side has stopped reading. */
  get stalled(): boolean {
    return !this.gates.client.isOpen() || !this.gates.broker.isOpen()
  }

  /** A side's writes are delayed. */
  get delayed(): boolean {
    return this.delays.client > 0 || this.delays.broker > 0
  }

  private markBrokerDone(): void {
    if (this.brokerDone) return
    this.brokerDone = true
    this.ledger.brokerEnded(this.id)
  }

  private markClosed(): void {
    if (this.closedFlag) return
    this.closedFlag = true
    this.ledger.linkClosed(this.id)
  }

  private wrap(
    side: Side,
    endpoint: Connection,
    outputFault: BrokerOutputFault | undefined,
    inputFault: BrokerInputFault | undefined
  ): Connection {
    const toward = other(side)
    const gate = this.gates[side]
    const dead = () => new ConnectionClosed({ clean: false, cause: "connection dropped (simulated)" })
    const read: Connection["read"] = gate.await.pipe(
      Effect.andThen(Effect.suspend(() => this.severedSide === side ? Effect.fail(dead()) : endpoint.read)),
      // A reader stalled while it was waiting does not take what just arrived until it resumes.
      Effect.tap(() => gate.await),
      Effect.flatMap((frames) => {
        // Frames this side had not taken when it was severed were lost with it.
        if (this.severedSide === side) return Effect.fail(dead())
        // Taken from the transport before this side destroyed its endpoint, returned after (its reader was
        // stalled): the ledger counted them lost with the destroy. The program still gets them, as a process
        // gets what its `read` took before the close; what it does with them is its own (a client granted
        // `received-v1` does not hand them on: the broker requeues them, or withdraws what was cancelled).
        // The ledger remembers a client's, to judge what its session is handed (`handed-after-drop`).
        if (this.destroyed[side]) {
          if (side === "client") this.ledger.clientTookAfterDrop(this.id, frames)
          return Effect.succeed(frames)
        }
        removeDelivered(this.inFlight[side], frames)
        const taken = inputFault === undefined ? frames : inputFault(this.id, frames)
        if (side === "client") this.ledger.clientRead(this.id, taken)
        else this.ledger.brokerRead(this.id, taken)
        return Effect.succeed(taken)
      }),
      Effect.tapError(() =>
        Effect.sync(() => {
          if (side === "broker") this.markBrokerDone()
          this.markClosed()
        })
      )
    )
    /** The frames of this side's write that has not completed, and how many have been transferred. */
    let pending: { written: number } | undefined
    /**
     * The broker's write that did not complete (failed, or interrupted): the ledger is told which
     * of its frames the transport never took (`Ledger.brokerWriteCut`); the broker takes them back
     * when the connection closes.
     */
    const watched = (
      sent: ReadonlyArray<string>,
      progress: { readonly written: number },
      effect: Effect.Effect<void, ConnectionClosed>
    ): Effect.Effect<void, ConnectionClosed> => {
      if (side === "client") return effect
      const startedAt = this.ledger.now()
      return Effect.onExit(effect, (exit) =>
        Exit.isSuccess(exit)
          ? Effect.void
          : Effect.sync(() => this.ledger.brokerWriteCut(this.id, sent.slice(progress.written), startedAt)))
    }
    const write: Connection["write"] = (frames) => {
      if (this.severedSide === side) {
        // Refused: none of it was transferred (`unfinishedWrite` is 0, not "all written").
        pending = { written: 0 }
        return watched(frameTexts(frames), pending, Effect.fail(dead()))
      }
      // Frames in parts (the broker's) are handled as their texts here: the ledger and faults see text.
      const texts = frameTexts(frames)
      const sent = outputFault === undefined ? texts : outputFault(this.id, texts)
      if (sent.length === 0) return undefined
      // The broker writes one outbox take per write: the departure check tells them apart (ledger/departure.ts).
      if (side === "broker") this.ledger.brokerWriteStarted(this.id, sent)
      const progress = { written: 0 }
      pending = progress
      const queue = this.inFlight[toward]
      // Frame by frame, as the transport takes them: a frame is in flight (and written, for
      // the ledger) from the moment it is handed over; frames a dying write never handed over
      // were never written — their owner must take them back.
      const handOver = (frame: string): void => {
        queue.push(frame)
        if (side === "client") this.ledger.clientWrote(this.id, [frame])
        else this.ledger.brokerWrote(this.id, [frame])
      }
      const withdraw = (frame: string) =>
        Effect.sync(() => {
          removeDelivered(queue, queue.includes(frame) ? [frame] : [])
          this.ledger.unwritten(this.id, side, [frame])
        })
      /** The rest of a frame's transfer the endpoint did not take at once. */
      const finishOne = (frame: string, rest: Effect.Effect<void, ConnectionClosed>) =>
        rest.pipe(
          Effect.tap(() => Effect.sync(() => progress.written++)),
          Effect.onError(() => withdraw(frame)),
          Effect.tapError(() => Effect.sync(() => this.markClosed()))
        )
      const transferOne = (frame: string) =>
        Effect.suspend(() => {
          if (this.severedSide !== undefined) return Effect.fail(dead())
          handOver(frame)
          return finishOne(frame, endpoint.writeAll([frame]))
        })
      const done = Effect.sync(() => {
        if (pending === progress) pending = undefined
      })
      const delay = this.delays[side]
      if (delay > 0) {
        this.delayedWrites++
        return watched(
          sent,
          progress,
          Effect.sleep(delay).pipe(
            Effect.ensuring(Effect.sync(() => this.delayedWrites--)),
            Effect.andThen(Effect.forEach(sent, transferOne, { discard: true })),
            Effect.andThen(done)
          )
        )
      }
      // At once while the endpoint takes each frame at once; the rest, if any, as an Effect.
      while (progress.written < sent.length) {
        if (this.severedSide !== undefined) return watched(sent, progress, Effect.fail(dead()))
        const frame = sent[progress.written]!
        handOver(frame)
        const rest = endpoint.write([frame])
        if (rest !== undefined) {
          return watched(
            sent,
            progress,
            finishOne(frame, rest).pipe(
              // The frames after it, once it is through (`progress` counts it then).
              Effect.andThen(Effect.suspend(() => Effect.forEach(sent.slice(progress.written), transferOne, { discard: true }))),
              Effect.andThen(done)
            )
          )
        }
        progress.written++
      }
      if (pending === progress) pending = undefined
      return undefined
    }
    const writeAll: Connection["writeAll"] = (frames) => Effect.suspend(() => write(frames) ?? Effect.void)
    return {
      id: endpoint.id,
      trustedLocal: endpoint.trustedLocal,
      read,
      writeAll,
      write,
      unfinishedWrite: () => pending?.written,
      readProgress: endpoint.readProgress,
      readPending: endpoint.readPending,
      end: endpoint.end,
      destroy: Effect.andThen(
        endpoint.destroy,
        Effect.sync(() => {
          // As a socket: what this side had not read yet is gone with it.
          this.destroyed[side] = true
          if (this.severedSide === undefined) this.ledger.discarded(this.id, side, this.inFlight[side].splice(0))
          if (side === "broker") this.markBrokerDone()
          this.markClosed()
        })
      )
    }
  }

  /** Drops the connection on `side` (see the module comment). No-op once dropped. */
  sever(side: Side): Effect.Effect<void> {
    return Effect.suspend(() => {
      if (this.severedSide !== undefined) return Effect.void
      this.severedSide = side
      const lost = this.inFlight[side].splice(0)
      this.ledger.discarded(this.id, side, lost)
      this.markClosed()
      // A stalled reader on either side must still see the end.
      this.gates.client.openUnsafe()
      this.gates.broker.openUnsafe()
      // The severed side's socket goes: what it had not read is dropped, what it wrote still arrives.
      return side === "client" ? this.raw.client.destroy : this.raw.server.destroy
    })
  }

  /** Stops `side` reading (until `resume` or `heal`); no-op once dropped. */
  stall(side: Side): void {
    if (this.severedSide === undefined) this.gates[side].closeUnsafe()
  }

  /** `side` reads again. */
  resume(side: Side): void {
    this.gates[side].openUnsafe()
  }

  /** Each later write from `side` takes `ms` first (0: no delay). */
  delay(side: Side, ms: number): void {
    this.delays[side] = ms
  }

  /** Clears stalls and delays (the end of a run heals every fault). */
  heal(): void {
    this.resume("client")
    this.resume("broker")
    this.delays.client = 0
    this.delays.broker = 0
  }
}
