/**
 * What the broker promises every session, whatever other local processes
 * send it — the bounds the fuzzer and the hostile-input regression tests
 * check (docs/security.md, "Limits"). Each value comes from the broker's own
 * constants or defaults, so a promise changes only with the code it holds
 * the broker to.
 */
import { MAX_ASKS_PER_SESSION } from "../broker/AskAdmission.ts"
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"

/** The bounds a hostile-input check holds the broker to. */
export interface BrokerPromises {
  /** No frame the broker writes, to anyone, is larger than this (P02: a strict client refuses it). */
  readonly maxFrameBytes: number
  /** A fresh connection's `health` is answered within this, whatever else is going on. */
  readonly healthDeadlineMs: number
  /**
   * A connection that has sent part of a frame and stalls is closed within
   * this (slowloris): two stall checks 2.5 s apart (Broker.ts).
   */
  readonly partialFrameBoundMs: number
  /**
   * After hostile connections have gone (and two forced GCs), the broker's
   * heap (`heapUsed + external`) is at most this much above what it was
   * before them, for any one kind of record they leave (departed sessions
   * and their scopes, mail, replay records: each about 64 MiB at most; a
   * departed session also leaves its client instance in ClientInstances,
   * about 24 MiB at most, so that kind's bound is 88 MiB: 50,000 sessions
   * churned through fresh scopes leave about 64 MiB).
   */
  readonly retainedBytes: number
  /**
   * What a whole campaign may leave behind (heap after the attackers left and
   * two forced GCs), all kinds of records together, however long it runs: the
   * sum of their budgets — departed sessions (with their client instances)
   * about 88 MiB, mail and replay records about 64 MiB each, receipt routes
   * and ask edges bounded in count — rounded up.
   * The regression tests check `retainedBytes` per kind.
   */
  readonly retainedTotalBytes: number
  /**
   * What a campaign of any size may leave behind: with `retainedPerFrameBytes`,
   * the bound a campaign checks (`retainedBound`). Measured (docs/testing.md,
   * "Memory"): 5–21 MiB for 5,000–60,000 frames.
   */
  readonly retainedFloorBytes: number
  /**
   * What each attack frame may add to that: records grow with the frames until
   * their budgets fill, about 300 bytes a frame with light floods and 550 with
   * full ones in the measurements — so a broker that keeps a few KiB of each
   * frame fails a 20,000-frame campaign, where `retainedTotalBytes` alone let
   * it leave 100 MiB.
   */
  readonly retainedPerFrameBytes: number
  /**
   * What the broker may hold at once for sessions that do not read (their
   * outboxes: 32 Mi characters together) or that are away (the mailbox:
   * about 64 MiB), measured as RSS growth.
   */
  readonly heldBytes: number
  /** Asks one session may have open at once (more are refused, `E_TOO_MANY_ASKS`). */
  readonly openAsksPerSession: number
}

/** The promises as they stand. */
export const PROMISES: BrokerPromises = {
  maxFrameBytes: MAX_FRAME_BYTES,
  healthDeadlineMs: 1_000,
  partialFrameBoundMs: 5_000,
  retainedBytes: 88 * 1024 * 1024,
  retainedTotalBytes: 256 * 1024 * 1024,
  retainedFloorBytes: 32 * 1024 * 1024,
  retainedPerFrameBytes: 1024,
  heldBytes: 128 * 1024 * 1024,
  openAsksPerSession: MAX_ASKS_PER_SESSION
}

/**
 * What a campaign whose attackers sent `frames` frames may leave behind: the
 * floor plus `retainedPerFrameBytes` a frame, at most `retainedTotalBytes`
 * (what every kind of record together is bounded by).
 */
export const retainedBound = (promises: BrokerPromises, frames: number): number =>
  Math.min(promises.retainedTotalBytes, promises.retainedFloorBytes + promises.retainedPerFrameBytes * frames)
