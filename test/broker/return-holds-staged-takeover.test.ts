/**
 * A withheld return (WithheldDepartures.ts) whose recipient also waits for a
 * replace-mode message of the sender's (ReplaceStaging.ts: due, waiting for
 * room, its sender's connection closed, so it holds the sender's
 * `session_left` back from that recipient), when the recipient is taken over
 * (P16) after the return's old output is out (review revr3, D2). The hold of
 * the staged message must move to the new connection with the return
 * (`WithheldDepartures.takenOver` asks ReplaceStaging to move its wait): the
 * new connection hears the sender's message before its `session_left`, as
 * the old connection would have (C-BRK-33), not after it. The same takeover
 * before the old output is out needs that output, forced at the old
 * connection by A's close, to follow the session (Output.forceEnqueue, D3).
 *
 * Hand-driven Router (no fibers): writes complete at once, or never on a
 * connection made stuck; closes run as `finish` runs them, with no grace.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import type { OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

const WINDOW_MS = 1_500

/** A connection whose writes complete at once, noting messages and membership frames (`orderLabel`) in `log`. */
const noting = (id: number, log: Array<string>): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => void log.push(...frames.flatMap(orderLabel))
})

/** The frames of `log` about the sender `x`: its messages and its `session_left`/`session_joined`. */
const ofSender = (log: ReadonlyArray<string>): Array<string> =>
  log.filter((f) => f === "old" || f === "staged" || f.endsWith(" x"))

/**
 * b (its old connection's writer stuck, its outbox full) withholds x's departure and return: x's `old`, sent
 * on A before it unregistered, is parked; x came back on C, staged a replace message for b that fell due
 * and waits for room, and C closed. `closeA` is A's registration timeout (it forces `old` into b's outbox);
 * `takeOver` registers b on a connection that reads, noting what it writes; `settle` lets it write.
 */
const setUp = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, close, router } = yield* handRouter({ outboxCapacity: 2, replaceWindow: WINDOW_MS }, () => clock.now)
  let connections = 0
  const session = (sessionId: string, features: ReadonlyArray<string> = []): Peer => {
    const peer = attach(fakeConnection(++connections, false))
    batch(peer, [registerFrame({ sessionId, frame: { features: [...features] } })])
    return peer
  }
  // b's old connection never completes a write: its first (`registered`) holds its writer for good.
  const old = attach(fakeConnection(++connections, true))
  batch(old, [registerFrame({ sessionId: "b" })])
  const y = session("y")
  assert.isFalse(batch(y, [0, 1].map((i) => ({ type: "send", to: "b", message: message(`y${i}`) }))))
  // x (on A) sends `old`, parked behind b's full outbox, and unregisters: its departure is held.
  const a = session("x")
  assert.isTrue(batch(a, [{ type: "send", to: "b", message: message("old") }, { type: "unregister" }]))
  // x is back on C: b withholds its departure and new join until A's output is out.
  const c = session("x", [DELIVERY_V1])
  assert.isTrue(old.withheldDepartures?.get("x")?.rejoined, "b does not withhold x's return: the test sets up nothing")
  // C stages a replace message for b; its window closes while b's outbox is full: it waits for room.
  assert.isFalse(batch(c, [
    { type: "send", to: "b", message: message("staged"), delivery: "queue", queueMode: "replace", threadId: "t" }
  ]))
  clock.now += WINDOW_MS
  router.staging.flushDue(clock.now)
  assert.strictEqual(router.staging.waiting, 1, "the staged message did not wait for room: the test sets up nothing")
  // C's connection closes: the staged message still waits, and holds x's session_left back from b too.
  close(c)
  assert.strictEqual(old.withheldDepartures?.get("x")?.holds, 2, "b's withheld entry for x lacks a hold")
  const closeA = (): void => close(a)
  const log: Array<string> = []
  const takeOver = (): Peer => {
    const fresh = attach(noting(++connections, log))
    batch(fresh, [registerFrame({ sessionId: "b" })])
    return fresh
  }
  const settle = (fresh: Peer): void => {
    for (let round = 0; round < 3; round++) {
      router.membership.notify()
      router.output.writes.takeForWrite(fresh)
    }
  }
  return { closeA, log, old, router, settle, takeOver }
})

describe("a withheld return's recipient taken over while a staged message of the sender's waits for room there", () => {
  it.effect("after the return's old output is out: the new connection hears the old mail, the staged message, then the sender leave", () =>
    Effect.gen(function*() {
      const { closeA, log, old, router, settle, takeOver } = yield* setUp
      // A's registration timeout forces `old` into b's outbox: the return's own hold is released.
      closeA()
      assert.strictEqual(old.withheldDepartures?.get("x")?.holds, 1, "only the staged message's hold is left")
      // b is taken over: the old outbox (y0, y1, old) is handed over; the staged message goes when the new
      // connection's writer makes room.
      const fresh = takeOver()
      settle(fresh)
      // Without the move: ["old", "left x", "staged"].
      assert.deepStrictEqual(
        { written: ofSender(log), waiting: router.staging.waiting, withheld: fresh.withheldDepartures },
        { written: ["old", "staged", "left x"], waiting: 0, withheld: undefined }
      )
    }))

  it.effect("before it: the same order once A's registration timeout forces the old output through", () =>
    Effect.gen(function*() {
      const { closeA, log, router, settle, takeOver } = yield* setUp
      const fresh = takeOver()
      settle(fresh)
      assert.deepStrictEqual(ofSender(log), [], "x's mail or departure reached the new connection before its old output")
      closeA()
      settle(fresh)
      // The staged message went behind `old`, parked with A's drainer (ForcedOutput.parkBehindReturn). Without the
      // forced path's check for a taken-over recipient (Output.forceEnqueue, review revr3 D3): ["staged",
      // "left x"], `old` left in the old outbox.
      assert.deepStrictEqual(
        { written: ofSender(log), waiting: router.staging.waiting, withheld: fresh.withheldDepartures },
        { written: ["old", "staged", "left x"], waiting: 0, withheld: undefined }
      )
    }))
})
