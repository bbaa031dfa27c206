/**
 * What the broker promises every session, whatever other local processes
 * send it — the bounds the fuzzer and the hostile-input regression tests
 * check (docs/security.md). The frame limit and the health deadline are
 * decided; the values marked "TBD by the lead" are placeholders the lead
 * sets as the fixes land, here and in docs/security.md together.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"

/** The bounds a hostile-input check holds the broker to. */
export interface BrokerPromises {
  /** No frame the broker writes, to anyone, is larger than this (P02: a strict client refuses it). */
  readonly maxFrameBytes: number
  /** A fresh connection's `health` is answered within this, whatever else is going on. */
  readonly healthDeadlineMs: number
  /**
   * A connection that has sent part of a frame and stalls is closed within
   * this (slowloris). TBD by the lead: the placeholder is 5 s.
   */
  readonly partialFrameBoundMs: number
  /**
   * After hostile connections have gone (and two forced GCs), the broker's
   * heap (`heapUsed + external`) is at most this much above what it was
   * before them. TBD by the lead: the placeholder is 64 MiB.
   */
  readonly retainedBytes: number
  /**
   * What the broker may hold at once for sessions that do not read (their
   * outboxes), for sessions that are away (the mailbox), in total, measured
   * as RSS growth. TBD by the lead: the placeholder is 128 MiB.
   */
  readonly heldBytes: number
  /**
   * Asks one session may have open at once (each is an edge the broker keeps
   * for up to 30 days, ask-timeout-v1). TBD by the lead: the placeholder is
   * 1,024.
   */
  readonly openAsksPerSession: number
}

/** The promises as they stand (see the header for which are placeholders). */
export const PROMISES: BrokerPromises = {
  maxFrameBytes: MAX_FRAME_BYTES,
  healthDeadlineMs: 1_000,
  partialFrameBoundMs: 5_000,
  retainedBytes: 64 * 1024 * 1024,
  heldBytes: 128 * 1024 * 1024,
  openAsksPerSession: 1_024
}
