/**
 * Feeding a `Ledger` by hand, as the simulation's taps do: a batch the
 * broker reads and handles at once (its reader was not held back behind
 * parked output) is one read tap and one `ReaderObserver.handled` call.
 */
import type { Ledger } from "../../src/testing/Ledger.ts"

/** The broker read `frames` on link `linkId` and handled them at once, as one batch. */
export const brokerTook = (ledger: Ledger, linkId: number, frames: ReadonlyArray<string>): void => {
  ledger.brokerRead(linkId, frames)
  ledger.brokerHandled(linkId, frames, 0, frames.length)
}
