/**
 * Replace staging against a full outbox, on a Router driven by hand (no
 * fibers): a message falling due while its recipient's outbox is full stays
 * staged, out of the deadline order, so the broker's staging fiber — which
 * sleeps until `nextDeadline()`, or on its queue when there is none
 * (Broker.ts) — does not spin on it; the recipient's writer taking its
 * outbox delivers it. The same over the in-memory network, with other
 * readers, replacement, the caps and leaving: backpressure.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { resolveCoreOptions } from "../../src/broker/options.ts"
import { Peer } from "../../src/broker/Peer.ts"
import { PeerReader } from "../../src/broker/PeerReader.ts"
import { PeerWriter } from "../../src/broker/PeerWriter.ts"
import { makeRouterSignals, Router } from "../../src/broker/Router.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"

/** A connection whose writes complete at once, or (`stuck`) never: its writer stays busy and its outbox fills. */
const fakeConnection = (id: number, stuck: boolean): Connection => ({
  id,
  trustedLocal: true,
  read: Effect.never,
  writeAll: () => Effect.void,
  write: () => (stuck ? Effect.never : undefined),
  unfinishedWrite: () => undefined,
  readProgress: () => ({ frames: 0, pending: 0, reading: true }),
  readPending: () => 0,
  end: Effect.void,
  destroy: Effect.void
})

const WINDOW_MS = 1_500

/** A Router on a clock the test moves, with a recipient whose writer is stuck and a sender granted `delivery-v1`. */
const setUp = Effect.gen(function*() {
  const signals = yield* makeRouterSignals(false)
  const clock = { now: 1_000_000 }
  const router = new Router(
    resolveCoreOptions({ idleExit: null, outboxCapacity: 2, replaceWindow: WINDOW_MS }),
    () => clock.now,
    signals
  )
  const fork = () => Effect.runFork(Effect.void)
  const permit = { release: () => {} }
  /** Handles `frames` from `peer` as its reader does: one batch, what it parked taken before the flush. */
  const batch = (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>): boolean => {
    router.output.startBatch()
    router.handleBatch(peer, frames.map((frame) => JSON.stringify(frame)))
    const parked = router.output.parkFor(peer)
    router.output.endBatch()
    return parked
  }
  const session = (id: number, sessionId: string, stuck: boolean, features: ReadonlyArray<string> = []): Peer => {
    const peer = new Peer(
      fakeConnection(id, stuck),
      clock.now,
      (peer) => new PeerReader(router, peer, permit, fork),
      (peer) => new PeerWriter(router, peer, fork)
    )
    router.attach(peer)
    batch(peer, [registerFrame({ sessionId, frame: { features: [...features] } })])
    return peer
  }
  const recipient = session(1, "recipient", true)
  const sender = session(2, "sender", false, [DELIVERY_V1])
  // The recipient's writer is busy with its first write for good: two messages fill its outbox.
  assert.isFalse(batch(sender, [
    { type: "send", to: "recipient", message: message("one") },
    { type: "send", to: "recipient", message: message("two") }
  ]))
  assert.strictEqual(recipient.outbox.length, 2)
  return { router, clock, batch, recipient, sender }
})

describe("a replace-staged message falling due into a full outbox", () => {
  it.effect("stays staged with no deadline left, however often the staging fiber would flush, and goes when its recipient's writer makes room", () =>
    Effect.gen(function*() {
      const { batch, clock, recipient, router, sender } = yield* setUp
      const staged = message("staged")
      assert.isFalse(batch(sender, [{ type: "send", to: "recipient", message: staged, delivery: "queue", queueMode: "replace", threadId: "t" }]))
      assert.strictEqual(router.staging.nextDeadline(), clock.now + WINDOW_MS)

      clock.now += WINDOW_MS
      // The staging fiber's loop: flush when the deadline is reached, else sleep; no deadline, wait on the queue.
      let flushes = 0
      for (let turn = 0; turn < 100; turn++) {
        const due = router.staging.nextDeadline()
        if (due === undefined || due > clock.now) break
        router.staging.flushDue(clock.now)
        flushes++
      }
      assert.strictEqual(flushes, 1, "the staging fiber flushed again and again: it spins on the blocked message")
      assert.isUndefined(router.staging.nextDeadline())
      assert.strictEqual(router.staging.size, 1, "the due message is no longer staged")
      assert.strictEqual(router.staging.waiting, 1)
      assert.strictEqual(recipient.outbox.length, 2, "the due message went into the full outbox")
      assert.strictEqual(recipient.parked.length + sender.parked.length, 0, "the due message was parked")

      // The recipient's writer takes its outbox: the due message is queued in the room it made.
      router.output.takeForWrite(recipient)
      assert.strictEqual(router.staging.size, 0)
      assert.strictEqual(recipient.outbox.length, 1)
      const queued = recipient.outbox[0]
      assert.isTrue(typeof queued === "object" && "mail" in queued && queued.mail.message.id === staged.id)
    }))
})
