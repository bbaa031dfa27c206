/**
 * `ReaderObserver`: an optional watcher of when the broker's readers
 * (PeerReader.ts) handle the frames they read, for the deterministic
 * simulation's ledger (src/testing/Ledger.ts).
 *
 * Why: a transport tap sees a frame when the broker *reads* it, but a reader
 * held back behind its parked output (backpressure) holds the connection's
 * further frames and handles them only once that output fits — or never, when
 * the connection closes or is taken over first (P16). An `unregister` held so
 * and dropped at a takeover ended no registration; a ledger that counted it at
 * the read reported a departure the broker never made (simulation seed 366,
 * `--held-return`). This service tells the watcher which frames were handled,
 * when, and which held ones were dropped.
 *
 * Cost: none when absent. `Broker.make` looks the service up once; the reader
 * then tests one field per batch (not per frame) and per close.
 */
import { Context } from "effect"

/** What a `ReaderObserver` is told; each call is synchronous, inside the broker's own step. */
export interface ReaderObserverService {
  /**
   * The broker handles `frames[from]` up to (not including) `frames[to]`, read
   * on connection `connectionId` (`Connection.id`), as one batch: a batch as
   * it was read, or frames held behind parked output, handed back once it fit.
   * Called just before the batch is handled: handling may end another
   * connection at once (a takeover's), and a watcher is told of that end as it
   * happens, so it must know of the `register` first. A batch cut short by its
   * connection's close (a protocol error) is reported whole: the frames after
   * the close take no effect, and the connection's end follows. Frames answered at once while the reader is held back (`health`, `list`,
   * `received`) and the `received` frames of a closing connection are not
   * reported: they change no registration and carry no message.
   */
  readonly handled: (connectionId: number, frames: ReadonlyArray<string>, from: number, to: number) => void
  /**
   * Frames the reader on connection `connectionId` held behind parked output
   * were dropped unhandled: the connection began to close first. At a
   * takeover, the `send`s among them were answered `delivery_failed`
   * (`E_SENDER_NOT_FOUND`) first (PeerReader.refuseHeldSends).
   */
  readonly dropped: (connectionId: number, frames: ReadonlyArray<string>) => void
}

/**
 * The optional reader observer: provide it to `Broker.make` to be told when
 * frames are handled (the simulation's ledger does).
 *
 * @example
 * const broker = yield* Broker.make({ idleExit: null }).pipe(
 *   Effect.provideService(ReaderObserver, {
 *     handled: (connectionId, frames, from, to) => console.log(connectionId, frames.slice(from, to)),
 *     dropped: (connectionId, frames) => console.log(connectionId, "dropped", frames)
 *   })
 * )
 */
export class ReaderObserver extends Context.Service<ReaderObserver, ReaderObserverService>()(
  "effect-intercom/broker/ReaderObserver"
) {}
