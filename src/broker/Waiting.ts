/**
 * A connection waiting for admission (AdmissionGate.ts), on both connection
 * paths: `AdoptedConnections` (Adopted.ts) and `admit` (below, for
 * `runConnection`) make one `Waiting` the connection's receiver while it
 * waits, so the two behave the same. It owns what the connection sent
 * meanwhile, until it hands it over to the connection's reader.
 *
 * While it waits, each `health` probe is answered at once (P20) and the first
 * other frame, and every frame after it, is held, in order, to be handled
 * once admitted. Reading goes on meanwhile, so that the connection's end is
 * seen while it waits: a connection that closes then is dropped — its held
 * frames with it, its place in the gate's queue withdrawn — and never
 * registers: no membership event, no list entry, no mailbox flushed to a
 * dead connection. Nothing it sent that was acknowledged is lost: a held
 * frame was never answered (a held `send` got no `delivered`), so a client
 * sends it again on its next connection. Reading stops only once the held
 * text reaches the reader's held limit (`heldLimit`, 1 MiB by default);
 * past that a close is seen only once the connection is admitted.
 *
 * Why keep reading, rather than pause and watch for the socket's `end`,
 * `close` or `error`: what Node v24 emits for a paused socket whose peer goes
 * away (measured on a Unix socket, the server reading in flowing mode and
 * pausing after a first chunk, `allowHalfOpen` off):
 * - nothing sent after the pause, then the peer's `end()`: `end`, then
 *   `finish` and `close` (Node ends our side);
 * - the same with the peer's `destroy()`, even with our answer unread in its
 *   receive buffer: the same `end`, not an ECONNRESET `error`;
 * - any bytes sent after the pause (four were enough), then the peer's
 *   `end()` or `destroy()`: no event at all — Node emits `end` only once its
 *   read buffer has been consumed, and does not close a socket that has not
 *   ended, so a paused socket never tells.
 * A client that probed `health` after its `register`, or sent anything else,
 * would therefore go unseen; and the transport keeps a paused receiver from
 * hearing of the end before what it still holds (SocketConnection.ts,
 * ReadPump.ts), as a reader needs. Reading on into a bounded hold sees every
 * close short of the held limit, on every transport.
 */
import { Effect, type Scope } from "effect"
import { decodeClientFrame, isFrameDecodeError, parseFrameText } from "../protocol/decode.ts"
import type { Connection, ConnectionError, FrameReceiver } from "../transport/Connection.ts"
import { type ReadControl, receiveFrames } from "../transport/receive.ts"
import { type AdmissionGate, MAX_WAITING, type Permit, TOO_MANY_WAITING } from "./AdmissionGate.ts"
import * as Encode from "./encode.ts"
import type { PeerReader } from "./PeerReader.ts"

/**
 * What a waiting connection's frame `text` gets: the `health_ok` text for a
 * health probe, `null` for a malformed one (the connection is dropped), or
 * `undefined` for any other frame (it is held until admission).
 */
export const answerWhileWaiting = (text: string): string | null | undefined => {
  const parsed = parseFrameText(text)
  if (isFrameDecodeError(parsed) || parsed.type !== "health") return undefined
  const frame = decodeClientFrame.health(parsed)
  return isFrameDecodeError(frame) ? null : Encode.healthOkFrame(frame.requestId)
}

/** What a `Waiting` needs from the path that made it. */
export interface WaitingOwner {
  /** Runs `effect` in a fiber of its own (the rest of a health answer the socket did not take at once). */
  readonly run: (effect: Effect.Effect<void>) => void
  /** The connection ended, or sent a malformed health probe, while it waited: it is to be destroyed. Called once. */
  readonly gone: (waiting: Waiting) => void
}

/** A connection waiting for admission: answers `health`, holds the rest and sees its end; see the module header. */
export class Waiting implements FrameReceiver {
  readonly connection: Connection
  private readonly owner: WaitingOwner
  private readonly heldLimit: number
  /** Frames held until admission (the first frame that is not a health probe, and all after it). */
  private readonly held: Array<string> = []
  private heldText = 0
  /** Once admitted: where frames go. */
  private reader: FrameReceiver | undefined = undefined
  /** How to pause the transport (known once it reads for this connection). */
  private control: ReadControl | undefined = undefined
  /** Reading was paused: the held limit of text is held. */
  private paused = false
  /** A health answer the socket has not taken yet: the next probe is held instead (answered after admission). */
  private answering = false
  /** It ended (or was dropped) while it waited. */
  gone = false
  /** Stops waiting in the gate's queue (set by the path that queued it). */
  cancel: () => void = () => {}

  /**
   * @param connection the waiting connection.
   * @param heldLimit the held text past which it is no longer read (`heldLimit`).
   * @param owner the path that made it (see `WaitingOwner`).
   */
  constructor(connection: Connection, heldLimit: number, owner: WaitingOwner) {
    this.connection = connection
    this.heldLimit = heldLimit
    this.owner = owner
  }

  /** The transport reads for this connection now; a pause asked for before is passed on. */
  reading(control: ReadControl): void {
    this.control = control
    if (this.paused) control.pause()
  }

  frames(frames: ReadonlyArray<string>): void {
    const reader = this.reader
    if (reader !== undefined) return reader.frames(frames)
    if (this.gone) return
    for (const text of frames) {
      if (this.held.length === 0 && !this.answering) {
        const answer = answerWhileWaiting(text)
        if (answer === null) return this.drop()
        if (answer !== undefined) {
          const rest = this.connection.write([answer])
          if (rest !== undefined) {
            this.answering = true
            this.owner.run(Effect.ensuring(Effect.ignore(rest), Effect.sync(() => this.answering = false)))
          }
          continue
        }
      }
      this.held.push(text)
      this.heldText += text.length
    }
    if (this.heldText >= this.heldLimit && !this.paused) {
      this.paused = true
      this.control?.pause()
    }
  }

  ended(error: ConnectionError): void {
    const reader = this.reader
    if (reader !== undefined) return reader.ended(error)
    this.drop()
  }

  /** Stops waiting; its held frames are dropped and its owner destroys it. A no-op once admitted. */
  drop(): void {
    if (this.gone || this.reader !== undefined) return
    this.gone = true
    this.held.length = 0
    this.heldText = 0
    this.cancel()
    this.owner.gone(this)
  }

  /**
   * Admitted: `reader` gets the frames held, then those to come (this stays
   * the transport's receiver and passes them on), and reading goes on if it
   * was paused — unless handling the held frames stopped the reader.
   */
  handOver(reader: PeerReader): void {
    this.reader = reader
    if (this.held.length > 0) {
      this.heldText = 0
      reader.frames(this.held.splice(0))
    }
    const control = this.control
    if (reader.isStopping || control === undefined) return
    reader.reading(control)
    if (this.paused) {
      this.paused = false
      control.resume()
    }
  }
}

/**
 * An admitted connection (`admit`): its permit, and the `Waiting` that read
 * it meanwhile, if it had to wait — its reader then takes over from it
 * (`Waiting.handOver`); otherwise nothing has read it yet.
 */
export interface Admission {
  readonly permit: Permit
  readonly waiting: Waiting | undefined
}

/**
 * Admission for a connection with a fiber and a Scope of its own
 * (`runConnection`): a place now, or a wait in the gate's queue with a
 * `Waiting` as its receiver (`receiveFrames`: from the socket's events, or a
 * fiber in the current Scope pulling for it). `undefined` when it is refused
 * (past MAX_WAITING: an `error` frame, then its end), or it ended or was
 * dropped while it waited — its wait withdrawn; the caller then just lets it
 * close. The permit is the current Scope's to release if nothing did before.
 * Once admitted after a wait it goes on after a yield: a stack of its own
 * (AdmissionGate.ts).
 */
export const admit = (
  gate: AdmissionGate,
  connection: Connection,
  heldLimit: number
): Effect.Effect<Admission | undefined, never, Scope.Scope> =>
  Effect.gen(function*() {
    if (gate.waiting >= MAX_WAITING) {
      yield* connection.writeAll([Encode.errorFrame(TOO_MANY_WAITING)]).pipe(Effect.ignore)
      yield* connection.end
      return undefined
    }
    const now = gate.tryEnter()
    if (now !== undefined) {
      yield* Effect.addFinalizer(() => Effect.sync(() => now.release()))
      return { permit: now, waiting: undefined }
    }
    const fork = Effect.runForkWith(yield* Effect.context<never>())
    let gone: () => void = () => {}
    const waiting = new Waiting(connection, heldLimit, {
      run: (effect) => {
        fork(effect)
      },
      gone: () => gone()
    })
    waiting.reading(yield* receiveFrames(connection, waiting))
    // Whichever comes first: a place, or the connection's end — which withdraws its wait at once
    // (`Waiting.drop` cancels it), so the next waiter gets the place. Once it has a place, the
    // permit is the Scope's to release, with no interruption in between.
    const permit = yield* Effect.uninterruptibleMask((restore) =>
      restore(Effect.callback<Permit | undefined>((resume) => {
        if (waiting.gone) return resume(Effect.succeed(undefined))
        gone = () => resume(Effect.succeed(undefined))
        waiting.cancel = gate.wait((permit) => resume(Effect.succeed(permit)))
        return Effect.sync(() => waiting.cancel())
      })).pipe(
        Effect.tap((permit) => permit === undefined ? Effect.void : Effect.addFinalizer(() => Effect.sync(() => permit.release())))
      )
    )
    if (permit === undefined) return undefined
    // A stack of its own (see AdmissionGate.ts); the permit is already the Scope's to release.
    yield* Effect.yieldNow
    return waiting.gone ? undefined : { permit, waiting }
  })
