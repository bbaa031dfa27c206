/**
 * Reads one connection into the Router, with no fiber of its own: the
 * transport hands each inbound batch to `frames` (`Connection.receive`; for
 * the Unix socket, from the socket's `readable` event), which routes it
 * synchronously and writes its output, as the reader fiber's loop did. A
 * broker holding thousands of idle sessions holds no reader fiber, stack or
 * mailbox for them (docs/performance.md, "Idle sessions, third stop").
 *
 * Backpressure: when a batch's output does not fit its recipients' outboxes,
 * a drainer fiber offers it (waiting for room) while this connection's
 * further frames are held, in order, and handled once it fits — but
 * `health`, and `list` when no held frame changes membership, are answered
 * at once, so a sender held back by a slow receiver still passes its
 * liveness probe. Past HELD_LIMIT of held text the connection is not read
 * (`Receiving.pause`) until its output fits. A close requested elsewhere
 * pauses reading too (`stop`): nothing more of the connection is handled.
 *
 * It owns its held frames and its drainer, never the `Peer`'s fields.
 */
import { Effect, Fiber, type Scope } from "effect"
import { isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import type { ConnectionError, FrameReceiver, Receiving } from "../transport/Connection.ts"
import type { Permit } from "./AdmissionGate.ts"
import type { Output } from "./Output.ts"
import type { Peer } from "./Peer.ts"
import type { ForkWriter } from "./PeerWriter.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"

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

/** The `type` of a frame's text, cheaply, or undefined (the Router reports what is wrong with it). */
const frameType = (text: string): string | undefined => {
  const frame = parseFrameText(text)
  return isFrameDecodeError(frame) ? undefined : frame.type
}

/** One connection's reader; see the module header. */
export class PeerReader implements FrameReceiver {
  private readonly router: Router
  private readonly peer: Peer
  private readonly permit: Permit
  private readonly fork: ForkWriter
  /** The transport's control of this reader's flow, once it receives. */
  private receiving: Receiving | undefined = undefined
  /** Frames held while the drainer runs (and, first, what came while the connection waited for admission). */
  private held: Array<string>
  private heldText = 0
  private heldChangesMembership = false
  /** Offers the parked output; the reader's, interrupted by `stop`. */
  private drainer: Fiber.Fiber<void> | undefined = undefined
  /** A defect thrown while handling a batch; the actor dies with it after closing the connection. */
  defect: { readonly cause: unknown } | undefined = undefined

  /**
   * @param permit the admission place, released once the connection has registered.
   * @param initial what the connection sent while it waited for admission: handled first, by `start`.
   * @param fork starts the drainer in the connection's context.
   */
  constructor(router: Router, peer: Peer, permit: Permit, initial: ReadonlyArray<string>, fork: ForkWriter) {
    this.router = router
    this.peer = peer
    this.permit = permit
    this.held = [...initial]
    this.fork = fork
  }

  /** Handles what came during admission, then takes the connection's frames as they arrive. */
  start(): Effect.Effect<void, never, Scope.Scope> {
    return Effect.suspend(() => {
      this.guarded(() => this.handleHeld())
      if (this.peer.isClosing) return Effect.void
      return Effect.map(this.peer.connection.receive(this), (receiving) => {
        this.receiving = receiving
        if (this.peer.isClosing || this.heldText >= HELD_LIMIT) receiving.pause()
      })
    })
  }

  /** A batch from the transport (`FrameReceiver`). */
  frames(frames: ReadonlyArray<string>): void {
    if (this.peer.isClosing) return this.receiving?.pause()
    this.guarded(() => this.drainer === undefined ? this.handleNow(frames) : this.handleWhileHeld(frames))
  }

  /** Reading ended: an oversize frame or invalid UTF-8 is a protocol error; any end closes the connection. */
  end(error: ConnectionError): void {
    if (error._tag === "FrameTooLarge" || error._tag === "InvalidUtf8") {
      this.router.reportProtocolError(this.peer, error.message)
    }
    closePeer(this.peer, "destroy")
  }

  /**
   * Stops reading (a close was requested) and the drainer: what is still
   * parked stays parked, for the actor's `finish` to force through.
   */
  stop(): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.receiving?.pause()
      const drainer = this.drainer
      this.drainer = undefined
      return drainer === undefined ? Effect.void : Fiber.interrupt(drainer)
    })
  }

  /** Pauses reading at once (closePeer): nothing more of this connection is handled. */
  pause(): void {
    this.receiving?.pause()
  }

  /** Runs `body`; a defect closes the connection and is kept for the actor to die with. */
  private guarded(body: () => void): void {
    try {
      body()
    } catch (cause) {
      this.defect ??= { cause }
      closePeer(this.peer, "destroy")
    }
  }

  /** Handles a batch, then writes its output; true when some of it was parked (no room yet). */
  private handle(frames: ReadonlyArray<string>): boolean {
    const output = this.router.output
    const peer = this.peer
    let parked = false
    output.startBatch()
    try {
      this.router.handleBatch(peer, frames)
    } finally {
      // Taken before the flush: what a flush queues is not this batch's to park.
      parked = output.parkFor(peer)
      output.endBatch()
    }
    if (peer.state === "registered" || peer.state === "observing") this.permit.release()
    return parked
  }

  private handleNow(frames: ReadonlyArray<string>): void {
    if (this.handle(frames)) this.startDrainer()
  }

  /** The held frames, if any, as one batch. */
  private handleHeld(): void {
    if (this.held.length === 0) return
    const held = this.held
    this.held = []
    this.heldText = 0
    this.heldChangesMembership = false
    this.handleNow(held)
  }

  /** While the drainer runs: `health` and `list` answered early, the rest held. */
  private handleWhileHeld(frames: ReadonlyArray<string>): void {
    const output = this.router.output
    const peer = this.peer
    // Answered early, ahead of parked messages and acks, but never ahead of an earlier such answer.
    let ownParked = output.parksAnswerFor(peer)
    output.startBatch()
    try {
      for (const text of frames) {
        const type = frameType(text)
        if (!ownParked && (type === "health" || (type === "list" && !this.heldChangesMembership))) {
          this.router.seen(peer) // C-HLT-4: a frame answered early is seen too
          this.router.handleFrame(peer, text)
          // An answer that met this connection's own full outbox was parked: the rest waits behind it.
          if (output.parkFor(peer)) ownParked = true
        } else {
          this.held.push(text)
          this.heldText += text.length
          if (type === "register" || type === "unregister" || type === "presence") this.heldChangesMembership = true
        }
      }
    } finally {
      output.endBatch()
    }
    if (this.heldText >= HELD_LIMIT) this.receiving?.pause()
  }

  private startDrainer(): void {
    // The drainer may finish before `fork` returns (every offer fitting at once): then it is not kept.
    let finished = false
    const fiber = this.fork(Effect.andThen(
      drainParked(this.router.output, this.peer),
      Effect.sync(() => {
        finished = true
        this.drained()
      })
    ))
    if (!finished) this.drainer = fiber
  }

  /** The drainer offered everything parked: handle what was held meanwhile, and read on. */
  private drained(): void {
    this.drainer = undefined
    if (this.peer.isClosing) return
    this.guarded(() => {
      // An early answer that met a full outbox joined the parked output after the drainer's last
      // offer: a new drainer takes it, and the held frames keep waiting.
      if (this.peer.parked.length > 0) return this.startDrainer()
      this.handleHeld()
    })
    if (this.peer.isClosing || this.heldText >= HELD_LIMIT) return
    this.receiving?.resume()
  }
}
