/**
 * Size: about 515 lines, one concept — one connection's reading, with its
 * held frames from the read to their hand-back, refusal or drop; over a
 * third of it is this header and the JSDoc of those paths.
 *
 * Reads one connection into the Router with no fiber of its own: the
 * transport hands it each batch of frames (`FrameReceiver`, from the
 * socket's `data` event; a pulled transport's fiber calls it the same way,
 * transport/receive.ts), and it handles the batch in plain synchronous code.
 *
 * Backpressure: when a batch's output does not fit its recipients' outboxes,
 * a drainer fiber offers it (waiting for room) while the reader holds the
 * connection's further frames — answering only `health`, `list` and
 * `received` at once (`health` and `list` held too while an earlier answer
 * to one is parked or an earlier one is held, and taken from the held
 * frames and answered once that answer left: `answerHeldReads`) — until it fits; past the held limit (`heldLimit`,
 * 1 MiB by default) of held text the connection is not read at all. The drainer hands the held frames back on a
 * stack of its own (after a yield), so their batch never runs inside the
 * flush of the writer that made room.
 *
 * Held frames were read, not accepted. A close drops them, unanswered, as the
 * socket's unread frames are (`stop`); a takeover (P16) first answers each
 * held `send` — from its replay record when the broker handled a copy of it
 * (P46), else `E_SENDER_NOT_FOUND` (`refuseHeldSends`) — after the answers
 * parked for the frames it handled (`OutputEnd.forceOwnAnswers`), so a sender
 * still reading its old connection learns how each of its last sends ended. An
 * optional `ReaderObserver` (the simulation's ledger) is told which frames
 * each batch handles, just before it does, and which held frames were
 * dropped: one field test per batch when absent.
 *
 * A connection that begins to close within a batch (a protocol error, an
 * answer whose write finds the peer gone) has the rest of that batch
 * dropped, except its `received` frames: they were read, answer nothing,
 * and tell the custody what the client read, which otherwise goes back to
 * the session's next connection as unread (known issue 17). So does every
 * batch that comes after the close was requested: those the transport had
 * already taken, and those `finish` reads while it closes the connection
 * (`confirmWhileClosing`; known issue 20).
 *
 * Two orders a reader fiber gave for free are kept here on purpose:
 * - a close requested while a batch of this reader runs (a protocol error,
 *   its own `unregister`…) takes effect once the batch is over: `stop` is
 *   deferred, as a fiber's interruption was, so `finish` never runs inside
 *   this connection's own batch;
 * - a batch that changed membership announces it as it ends
 *   (`Membership.announce`), so a session that registers and leaves in two
 *   quick batches is announced joined, then left — a reader fiber left room
 *   for the notifier fiber between two batches; the socket's events do not.
 *
 * The reader owns its held frames and its drainer, never the `Peer`'s
 * fields (Peer.ts). The actor (ConnectionActor.ts) waits on `stopped` and
 * then runs `finish`, which interrupts the drainer.
 */
import { Effect, type Fiber } from "effect"
import { isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import { DeliveryCode, isRetryable, Reason } from "../protocol/delivery.ts"
import { SUPERVISOR_V1 } from "../protocol/features.ts"
import type { ConnectionError, FrameReceiver } from "../transport/Connection.ts"
import type { ReadControl } from "../transport/receive.ts"
import type { Permit } from "./AdmissionGate.ts"
import type { ParkedDrain } from "./ParkedDrain.ts"
import type { Peer } from "./Peer.ts"
import type { Router } from "./Router.ts"
import { closePeer } from "./RouterContext.ts"
import * as Encode from "./encode.ts"

/** Starts a fiber in the connection's context. */
export type ForkDrainer = (effect: Effect.Effect<void>) => Fiber.Fiber<void>

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

/** A held frame, parsed, when it is a `send` or `supervisor_send`; otherwise undefined. */
const heldSend = (text: string): { readonly type: string; readonly [key: string]: unknown } | undefined => {
  const frame = parseFrameText(text)
  return isFrameDecodeError(frame) || (frame.type !== "send" && frame.type !== "supervisor_send") ? undefined : frame
}

/** The message id a send frame names, or undefined (none to name). */
const messageIdOf = (frame: { readonly [key: string]: unknown }): string | undefined => {
  const message = frame["message"]
  return typeof message === "object" && message !== null && "id" in message && typeof message.id === "string" ? message.id : undefined
}

/**
 * Offers the reader's parked output in order, each waiting for room; when
 * the last parked answer to a read-only request leaves, `readsFree` runs on
 * a stack of its own (after a yield), before the next offer.
 */
const drainParked = (drain: ParkedDrain, peer: Peer, readsFree: () => void) =>
  Effect.gen(function*() {
    for (let next = drain.nextParked(peer); next !== undefined; next = drain.nextParked(peer)) {
      if (yield* drain.offerParked(peer, next)) {
        yield* Effect.yieldNow
        readsFree()
      }
    }
  })

/**
 * Told once a reader has stopped (`PeerReader.whenStopped`), with its
 * connection and its admission place: one listener serves every connection
 * of a broker (AdoptedConnections), not a closure per connection.
 */
export interface StopListener {
  readerStopped(peer: Peer, permit: Permit): void
}

/** One connection's reader; see the module header. */
export class PeerReader implements FrameReceiver {
  private readonly router: Router
  private readonly peer: Peer
  private readonly permit: Permit
  private readonly fork: ForkDrainer
  /** How to pause the transport (known once it reads for this reader). */
  private control: ReadControl | undefined = undefined
  /** Frames held, in order, while the drainer offers parked output. */
  private held: Array<string> | undefined = undefined
  private heldText = 0
  private heldChangesMembership = false
  /**
   * How many `health`/`list` frames the held frames hold: while any is held,
   * a later one is held too, never answered ahead of it (`whileHeldBack`).
   */
  private heldReads = 0
  /** Reading is paused: the held limit of text is held (`Router.heldBack`). */
  private readPaused = false
  /** The fiber offering this connection's parked output, while there is some. */
  drainer: Fiber.Fiber<void> | undefined = undefined
  /** Batches of this reader running now (a drainer's hand-back may run inside a batch's flush). */
  private depth = 0
  /** A close was requested: only `received` frames are still handled. */
  private stopping = false
  /** The actor was told (`stopped` completed or will complete at once). */
  private done = false
  /** Who is told once the reader stopped (`whenStopped`); an object, so an idle connection keeps no closure for it. */
  private onStopped: StopListener | undefined = undefined

  /**
   * @param router the Router the frames go to.
   * @param peer the connection's record.
   * @param permit its admission place, released once it registers.
   * @param fork starts the drainer fiber in the connection's context.
   */
  constructor(router: Router, peer: Peer, permit: Permit, fork: ForkDrainer) {
    this.router = router
    this.peer = peer
    this.permit = permit
    this.fork = fork
  }

  /**
   * Tells `listener` once the reader has stopped (a close was requested,
   * outside any batch of its own): at once if it has. One listener.
   */
  whenStopped(listener: StopListener): void {
    if (this.done) return listener.readerStopped(this.peer, this.permit)
    this.onStopped = listener
  }

  /** Completes once the reader has stopped (see `whenStopped`), for an actor that waits in a fiber. */
  stopped(): Effect.Effect<void> {
    return Effect.callback<void>((resume) => {
      this.whenStopped({ readerStopped: () => resume(Effect.void) })
      return Effect.sync(() => {
        this.onStopped = undefined
      })
    })
  }

  /** Whether a close was requested: the actor then installs no transport reading. */
  get isStopping(): boolean {
    return this.stopping
  }

  /** The transport reads for this reader now; a pause asked for before is passed on. */
  reading(control: ReadControl): void {
    this.control = control
    if (this.readPaused) control.pause()
  }

  /**
   * Stops handling frames; the actor is told once no batch of this reader
   * runs (`closePeer` calls it). Frames still held behind parked output are
   * dropped unhandled, as the frames its socket still buffers are: none was
   * answered, so a client of ours sends them again on its next connection
   * (IntercomClient's unanswered sends). At a takeover the `send`s among
   * them were answered first (`refuseHeldSends`).
   */
  stop(): void {
    if (this.stopping) return
    this.stopping = true
    this.control?.pause()
    const held = this.held
    if (held !== undefined) {
      this.held = undefined
      this.heldText = 0
      this.heldChangesMembership = false
      this.heldReads = 0
      if (held.length > 0) this.router.readerObserver?.dropped(this.peer.connection.id, held)
    }
    if (this.depth === 0) this.tellStopped()
  }

  /**
   * The connection's session `senderKey` was taken over (P16; `endTakenOver`,
   * after the answers its parked output held for it were forced out:
   * `OutputEnd.forceOwnAnswers`, before its `taken_over` and its `end`): each
   * `send` or `supervisor_send` still held behind parked output is answered
   * now, forced past a full outbox as `taken_over` is, so that the graceful
   * end writes it. A held copy of a send the broker already handled (a
   * retry) gets what its replay record says, as SendReplays.ts answers a replay
   * (P46; `Router.recordedAnswer`); any other is answered as a send from a
   * connection that holds no session: `delivery_failed` with
   * `E_SENDER_NOT_FOUND`. A `supervisor_send` from a connection not granted
   * `supervisor-v1` (which, handled, would have been a protocol error) is
   * answered `E_INVALID_MESSAGE` naming the extension to ask for, rather
   * than as if the session were the problem. Not handled for the session: the new holder may
   * be another process, and frames of the old connection cannot affect the
   * new session (P16); not dropped unanswered: a client that does not send
   * it again would lose it with no word (docs/protocol.md, "Deliberate
   * deviations"). The rest stays held, and `stop` drops it. A send with no
   * message id cannot be answered about; it is dropped.
   */
  refuseHeldSends(senderKey: string): void {
    const held = this.held
    if (held === undefined || this.stopping) return
    const router = this.router
    for (const text of held) {
      const frame = heldSend(text)
      if (frame === undefined) continue
      const id = messageIdOf(frame)
      if (id === undefined) continue
      router.output.forceEnqueue(
        this.peer,
        frame.type === "supervisor_send" && !this.peer.features.has(SUPERVISOR_V1)
          ? Encode.deliveryFailedFrame(id, DeliveryCode.InvalidMessage, Reason.supervisorSendUngranted, isRetryable(DeliveryCode.InvalidMessage))
          : router.recordedAnswer(this.peer, senderKey, frame) ??
            Encode.deliveryFailedFrame(id, DeliveryCode.SenderNotFound, Reason.senderNotFound, isRetryable(DeliveryCode.SenderNotFound))
      )
    }
  }

  /**
   * Reading goes on while the connection closes (`finish` calls it, once the
   * reader stopped), for its `received` frames only: what the transport took
   * after the close was requested, and what comes until it is destroyed, is
   * applied to the custody rather than dropped (known issue 20). One that
   * comes after the custody was handed back (`Router.detach`) releases
   * nothing: the custody is empty then.
   */
  confirmWhileClosing(): void {
    if (this.stopping) this.control?.resume()
  }

  /**
   * Handles a batch from the transport, or holds it while the connection is
   * held back; once a close was requested, only its `received` frames.
   */
  frames(frames: ReadonlyArray<string>): void {
    if (this.stopping) return this.confirmRest(frames, 0, frames.length)
    this.depth++
    try {
      if (this.drainer === undefined) this.handle(frames)
      else this.whileHeldBack(frames)
    } finally {
      this.batchOver()
    }
  }

  /** Reading ended: a framing error is a protocol error; either way the connection closes. */
  ended(error: ConnectionError): void {
    if (this.stopping) return
    if (error._tag !== "ConnectionClosed") this.router.reportProtocolError(this.peer, error.message)
    closePeer(this.peer, "destroy")
  }

  private batchOver(): void {
    this.depth--
    if (this.stopping && this.depth === 0) this.tellStopped()
  }

  private tellStopped(): void {
    if (this.done) return
    this.done = true
    const listener = this.onStopped
    this.onStopped = undefined
    listener?.readerStopped(this.peer, this.permit)
  }

  /** Handles frames `from` up to `to` as one batch, then writes its output; true when some of it was parked. */
  private batch(frames: ReadonlyArray<string>, from: number, to: number): boolean {
    const output = this.router.output
    let parked = false
    output.startBatch()
    try {
      // One field test per batch: the simulation's ledger counts a frame's effect when it is handled here.
      // Told first: handling may end another connection at once (a takeover), whose end the ledger sees then.
      const observer = this.router.readerObserver
      if (observer !== undefined) observer.handled(this.peer.connection.id, frames, from, to)
      const stopped = this.router.handleBatch(this.peer, frames, from, to)
      if (stopped < to) this.confirmRest(frames, stopped, to)
    } finally {
      // Taken before the flush: what a flush queues is not this batch's to park.
      parked = output.parkFor(this.peer)
      output.endBatch()
    }
    // The end of a batch that changed membership announces it (module header).
    this.router.membership.announce()
    return parked
  }

  /**
   * Handles a batch, then writes its output; starts the drainer when some of
   * it was parked. Trailing `received` frames are handled after the rest's
   * output is written, so a forwarded message does not wait for them. Behind
   * parked output they are applied at once, one by one, as the held path
   * applies any `received`: held, a confirmation would die with the
   * connection and its mail would be sent again (known issue 8). A
   * connection that began to close meanwhile still takes them (known issue 17).
   */
  private handle(frames: ReadonlyArray<string>): void {
    const router = this.router
    const peer = this.peer
    const end = outputEnd(frames)
    let parked = this.batch(frames, 0, end)
    if (end < frames.length) {
      if (!parked) parked = this.batch(frames, end, frames.length)
      else {
        for (let i = end; i < frames.length; i++) {
          router.seen(peer)
          router.handleFrame(peer, frames[i]!)
        }
      }
    }
    if (peer.state === "registered" || peer.state === "observing") this.permit.release()
    if (parked && !peer.isClosing) this.startDrainer()
  }

  /**
   * A batch that came while parked output waits: `health`, `list` (when no
   * held frame changes membership) and `received` are handled at once, the
   * rest held in order. Answered early, ahead of parked messages and acks,
   * but never ahead of an earlier such answer: while one is parked, or an
   * earlier `health`/`list` is held (`heldReads`, a count: no scan per
   * frame), they are held, until it leaves or is answered
   * (`answerHeldReads`) — also in the window between the last parked such
   * answer's leaving and that call, which the drainer makes after a yield.
   * Once the connection begins to close, only its `received` frames are
   * still taken (known issue 17).
   */
  private whileHeldBack(frames: ReadonlyArray<string>): void {
    const router = this.router
    const output = router.output
    const peer = this.peer
    const held = this.held ??= []
    // (No scan while a read is held: every read is held behind it anyway.)
    let ownParked = this.heldReads === 0 && output.drain.parksAnswerFor(peer)
    output.startBatch()
    try {
      for (const text of frames) {
        const type = frameType(text)
        if (type === "received") {
          // A confirmation (`received-v1`) answers nothing and only raises a count, so no order binds it;
          // held, it would die with the connection and its mail would be sent again (known issue 8).
          router.seen(peer)
          router.handleFrame(peer, text)
          continue
        }
        if (peer.isClosing) continue
        const read = type === "health" || type === "list"
        if (read && !ownParked && this.heldReads === 0 && (type === "health" || !this.heldChangesMembership)) {
          router.seen(peer) // C-HLT-4: a frame answered early is seen too
          router.handleFrame(peer, text)
          // An answer that met this connection's own full outbox was parked: the rest waits behind it.
          if (output.parkFor(peer)) ownParked = true
        } else {
          held.push(text)
          this.heldText += text.length
          if (read) this.heldReads++
          else if (type === "register" || type === "unregister" || type === "presence") this.heldChangesMembership = true
        }
      }
    } finally {
      output.endBatch()
    }
    if (this.heldText >= this.router.heldBack.limit && !this.readPaused) {
      this.readPaused = true
      this.router.heldBack.pauses++
      this.control?.pause()
    }
  }

  /**
   * The connection began to close before `frames[from]`: of the rest, only the
   * `received` frames are handled (see the module header).
   */
  private confirmRest(frames: ReadonlyArray<string>, from: number, to: number): void {
    for (let i = from; i < to; i++) {
      const text = frames[i]!
      if (frameType(text) === "received") this.router.handleFrame(this.peer, text)
    }
  }

  /**
   * The last parked answer to a read-only request left while other output
   * stays parked (the drainer, on a stack of its own): the held `health`
   * frames, and `list` frames, up to the first held frame that changes
   * membership (`register`, `unregister`, `presence`), are answered now and
   * leave the held frames — what `whileHeldBack` would have done with them
   * had that answer not been parked; the other held frames keep their
   * order; those behind a held membership change stay held, and so hold
   * later ones (`heldReads`), until the output fits. An answer that meets
   * the full outbox is parked, and the rest waits behind it again. The liveness probe (a `list`) held behind an
   * earlier probe's answer is thus answered once that answer went ahead of,
   * or before, sends to a session that does not read (ParkedDrain.offerParked),
   * not once that session reads. Slow path: a parse of the held frames.
   */
  private answerHeldReads(): void {
    const held = this.held
    const peer = this.peer
    if (held === undefined || held.length === 0 || this.stopping || peer.isClosing) return
    const router = this.router
    const output = router.output
    let kept = 0
    let i = 0
    this.depth++
    output.startBatch()
    try {
      for (; i < held.length; i++) {
        const text = held[i]!
        const type = frameType(text)
        if (type === "register" || type === "unregister" || type === "presence") break
        if (type !== "health" && type !== "list") {
          held[kept++] = text
          continue
        }
        this.heldText -= text.length
        this.heldReads--
        router.seen(peer) // C-HLT-4: a frame answered early is seen too
        router.handleFrame(peer, text)
        if (output.parkFor(peer) || peer.isClosing) {
          i++
          break
        }
      }
    } finally {
      // The frames answered leave; the rest, from `i` on untouched, closes up behind those kept.
      held.splice(kept, i - kept)
      output.endBatch()
      this.batchOver()
    }
    if (this.readPaused && !this.stopping && this.heldText < router.heldBack.limit) {
      this.readPaused = false
      this.control?.resume()
    }
  }

  /** Offers the parked output in a fiber; once it all fits, `drained` goes on, on a stack of its own. */
  private startDrainer(): void {
    const output = this.router.output
    this.drainer = this.fork(
      drainParked(output.drain, this.peer, () => this.answerHeldReads()).pipe(
        Effect.andThen(Effect.yieldNow),
        Effect.andThen(Effect.sync(() => this.drained()))
      )
    )
  }

  /** The parked output fits: what was held is handled now, and reading goes on. */
  private drained(): void {
    this.drainer = undefined
    if (this.stopping) return
    this.depth++
    try {
      // An early answer that met a full outbox joined the parked output after the drainer's last look.
      if (this.peer.parked.length > 0) this.startDrainer()
      else {
        const held = this.held
        if (held !== undefined && held.length > 0) {
          this.held = undefined
          this.heldText = 0
          this.heldChangesMembership = false
          this.heldReads = 0
          this.handle(held)
        }
      }
    } finally {
      this.batchOver()
    }
    if (this.readPaused && !this.stopping && this.heldText < this.router.heldBack.limit) {
      this.readPaused = false
      this.control?.resume()
    }
  }
}
