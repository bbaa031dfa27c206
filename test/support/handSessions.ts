/**
 * Sessions on a hand-driven Router (handRouter.ts) for the given-back restart tests: one registered over a
 * connection that notes nothing, and what a session is flushed when it registers. Shared by
 * given-back-restart-queue-place.test.ts, given-back-mark-seq-reuse.test.ts and
 * mailbox-cancel-reused-id-tie-restart.test.ts.
 */
import type { Peer } from "../../src/broker/Peer.ts"
import { registerFrame } from "./broker.ts"
import { noting, textsOf } from "./custodyHold.ts"
import { fakeConnection } from "./fakeConnection.ts"
import type { HandRouter } from "./handRouter.ts"

/** A session `sessionId` registered on `hand` over a connection that notes nothing. */
export const register = (hand: HandRouter, id: number, sessionId: string): Peer => {
  const peer = hand.attach(fakeConnection(id, false))
  hand.batch(peer, [registerFrame({ sessionId })])
  return peer
}

/** What `sessionId` is flushed when it registers on `hand`. */
export const flushedTo = (hand: HandRouter, id: number, sessionId: string): Array<string> => {
  const written: Array<string> = []
  const peer = hand.attach(noting(id, written))
  hand.batch(peer, [registerFrame({ sessionId })])
  written.push(...textsOf(hand.router.output.writes.takeForWrite(peer).frames))
  return written
}
