/**
 * One write taken from a connection's outbox (`OutputWrites.takeForWrite`): the
 * frames, the output among them that goes back if the write does not
 * complete, and whether the connection ends after it. Owned by `Output`,
 * which fills it and, once its write completed at once, empties it for the
 * next write (`OutputWrites.recycle`): a write allocates no batch and no arrays of
 * its own (docs/performance.md, "Garbage, fifth stop"). A batch whose write
 * goes on in the background belongs to its writer (`PeerWriter.inFlight`)
 * and is never reused.
 */
import type { OutFrame } from "../protocol/framing.ts"
import type { Written } from "./Peer.ts"

/**
 * Frames a write batch may have held and still be reused (`OutputWrites.recycle`); items an outbox taken by a
 * write may have held and still be the next one taken (`OutputWrites.takeForWrite`).
 */
export const KEEP_BATCH_SLOTS = 1_024

/**
 * Empties an array and keeps its backing store: `length = 0` lets V8 drop
 * the store, so the next push allocates one again (17 slots, 152 bytes, for
 * a one-frame write); popping keeps it. Also for the outbox a write took
 * (`OutputWrites.takeForWrite`).
 */
export const emptyKeepingSlots = (array: Array<unknown>): void => {
  while (array.length > 0) array.pop()
}

/** What a writer should do with one batch taken from its outbox; see the module header. */
export class WriteBatch {
  /** Frames to write, in order (texts, or frames in parts). */
  readonly frames: Array<OutFrame> = []
  /** The returnable output among them, in order: taken back if the write does not complete. */
  readonly returnable: Array<Written> = []
  /** The frame index of each `returnable` item (same position): two arrays, no pair per item. */
  readonly returnableAt: Array<number> = []
  /** END_OF_OUTPUT was among the items: end the connection after writing. */
  ending = false

  /**
   * Empties the batch for reuse, keeping its arrays' slots; false when it
   * held too many frames to be worth keeping (a membership wake of thousands).
   */
  empty(): boolean {
    if (this.frames.length > KEEP_BATCH_SLOTS) return false
    emptyKeepingSlots(this.frames)
    emptyKeepingSlots(this.returnable)
    emptyKeepingSlots(this.returnableAt)
    this.ending = false
    return true
  }
}
