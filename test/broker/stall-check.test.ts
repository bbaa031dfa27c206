/**
 * The broker's stall check (`Registration.closeStalledFrames`) on connections
 * whose read progress the test sets: a frame begun and not finished while
 * reads wait, across two checks, closes the connection; an idle connection
 * costs the check no progress record (it runs every 2.5 s over every attached
 * connection). The same rule over real sockets: hostile.test.ts and
 * hostile-input.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { resolveCoreOptions } from "../../src/broker/options.ts"
import { Peer } from "../../src/broker/Peer.ts"
import { PeerReader } from "../../src/broker/PeerReader.ts"
import { PeerWriter } from "../../src/broker/PeerWriter.ts"
import { makeRouterSignals, Router } from "../../src/broker/Router.ts"
import type { Connection } from "../../src/transport/Connection.ts"

/** A connection whose read progress the test sets, counting the progress records asked for. */
const fakeConnection = (id: number) => {
  const state = { frames: 0, pending: 0, reading: true, records: 0 }
  const connection: Connection = {
    id,
    trustedLocal: true,
    read: Effect.never,
    writeAll: () => Effect.void,
    write: () => undefined,
    unfinishedWrite: () => undefined,
    readProgress: () => {
      state.records++
      return { frames: state.frames, pending: state.pending, reading: state.reading }
    },
    readPending: () => state.pending,
    end: Effect.void,
    destroy: Effect.void
  }
  return { connection, state }
}

const makeRouter = Effect.gen(function*() {
  const signals = yield* makeRouterSignals(false)
  const router = new Router(resolveCoreOptions({ idleExit: null }), () => 0, signals)
  const fork = () => Effect.runFork(Effect.void)
  const permit = { release: () => {} }
  const attach = (connection: Connection): Peer => {
    const peer = new Peer(
      connection,
      0,
      (peer) => new PeerReader(router, peer, permit, fork),
      (peer) => new PeerWriter(router, peer, fork)
    )
    router.attach(peer)
    return peer
  }
  return { router, attach }
})

const closed = (peer: Peer): boolean => Deferred.isDoneUnsafe(peer.closing)

describe("the stall check", () => {
  it.effect("an idle connection is never asked for a progress record, however many checks run", () =>
    Effect.gen(function*() {
      const { attach, router } = yield* makeRouter
      const idle = fakeConnection(1)
      const peer = attach(idle.connection)
      for (let i = 0; i < 5; i++) router.registration.closeStalledFrames(2_500)
      assert.strictEqual(idle.state.records, 0)
      assert.isFalse(closed(peer))
    }))

  it.effect("a frame begun and still incomplete at the next check, reads waiting throughout, closes the connection", () =>
    Effect.gen(function*() {
      const { attach, router } = yield* makeRouter
      const stalled = fakeConnection(1)
      const peer = attach(stalled.connection)
      stalled.state.pending = 3
      router.registration.closeStalledFrames(2_500)
      assert.isFalse(closed(peer), "one check only sees the frame begun")
      router.registration.closeStalledFrames(2_500)
      assert.isTrue(closed(peer))
    }))

  it.effect("a connection that finished a frame between checks, or was not read, or was idle at the last check, stays", () =>
    Effect.gen(function*() {
      const { attach, router } = yield* makeRouter
      const progressing = fakeConnection(1)
      const heldBack = fakeConnection(2)
      const late = fakeConnection(3)
      const peers = [attach(progressing.connection), attach(heldBack.connection), attach(late.connection)]
      progressing.state.pending = 3
      heldBack.state.pending = 3
      heldBack.state.reading = false
      router.registration.closeStalledFrames(2_500)
      progressing.state.frames = 1
      late.state.pending = 3
      router.registration.closeStalledFrames(2_500)
      assert.deepStrictEqual(peers.map(closed), [false, false, false])
      // The late one has now been mid-frame at two checks in a row; the other two are idle or still held back.
      progressing.state.pending = 0
      router.registration.closeStalledFrames(2_500)
      assert.deepStrictEqual(peers.map(closed), [false, false, true])
    }))
})
