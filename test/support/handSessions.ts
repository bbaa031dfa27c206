/**
 * Sessions on a hand-driven Router (handRouter.ts) for the given-back restart tests: one registered over a
 * connection that notes nothing, one over a connection noting what it is written, what a session is flushed when it
 * registers, and a Router on a settable clock whose journal commits to a memory store a restarted Router restores
 * from. Shared by given-back-restart-queue-place.test.ts, given-back-one-mark-order.test.ts,
 * given-back-mark-seq-reuse.test.ts and mailbox-cancel-reused-id-tie-restart.test.ts.
 */
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { registerFrame } from "./broker.ts"
import { features, noting, textsOf } from "./custodyHold.ts"
import { fakeConnection } from "./fakeConnection.ts"
import { type HandRouter, handRouter } from "./handRouter.ts"

/** A day: how far back a journal keeps replay records and a restarted Router loads the store. */
const DAY = 24 * 60 * 60_000

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

/** `sessionId` (custody features, instance `<sessionId>-1`) registered on `hand` over a connection noting into `written`. */
export const notingSession = (hand: HandRouter, id: number, sessionId: string, written: Array<string>): Peer => {
  const peer = hand.attach(noting(id, written))
  hand.batch(peer, [registerFrame({ sessionId, frame: { features, instanceId: `${sessionId}-1` } })])
  return peer
}

/**
 * A Router `first` with `options` on `clock` (set `clock.t`; it starts at `t0`) over a journal; `commit` commits the
 * journal's batch to a memory store; `restarted` is a new Router with `options`, restored from that store.
 */
export const storedHandWorld = (options: BrokerCoreOptions, t0: number) =>
  Effect.gen(function*() {
    const store = makeMemory(makeMemoryMailState())
    const clock = { t: t0 }
    const journal = new StoreJournal(() => {}, DAY)
    const first = yield* handRouter(options, () => clock.t, {}, false, journal)
    const commit = Effect.gen(function*() {
      const taken = journal.take(clock.t)
      if (taken !== undefined) {
        yield* store.commit(taken.batch)
        journal.committed(taken)
      }
    })
    const restarted = Effect.gen(function*() {
      const second = yield* handRouter(options, () => clock.t, {}, false, new StoreJournal(() => {}, DAY))
      second.router.restore(yield* store.load(clock.t - DAY))
      return second
    })
    return { clock, first, commit, restarted }
  })
