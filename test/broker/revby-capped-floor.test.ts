/**
 * Review revby by1 (second form): a store written under a far-future clock, restored by a run whose clock is a year
 * behind (which caps its stamps' floor and stores that lower highest stamp), then restored again. A restored ask is
 * due at the due time stored with its edge, on the clock of the run that received it (mailCodec.encodeEdge), not one
 * derived from the stamps, and no later than its own timeout after the restart (Router.restore; review revbz bz1).
 * With the clocks agreeing it closes at its timeout; with the first run's clock a year ahead, too — it no longer
 * waits for that clock's due time (a year), as the reviewer's probe asked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { askBob, askRestartWorld, lateReply } from "../support/restartWorld.ts"
import { advance } from "../support/memory.ts"

const START = 1_000_000_000
const YEAR = 365 * 24 * 60 * 60 * 1000

const replyAfterTwoRestarts = (ahead: number) =>
  Effect.gen(function*() {
    const { run } = yield* askRestartWorld("10 seconds")
    yield* TestClock.setTime(START + ahead)
    const first = yield* run
    const q = yield* askBob(first.alice, first.bob)
    yield* advance(1_000) // committed: q's edge is stored, its mail written
    yield* first.broker.crash

    yield* TestClock.setTime(START)
    const second = yield* run
    const m1 = message("m1")
    assertDelivered(yield* send(second.alice.client, "bob", m1)) // a commit: the capped highest stamp is stored
    yield* messageFor(second.bob.client, m1.id)
    yield* advance(1_000)
    yield* second.broker.crash

    const third = yield* run
    yield* advance(20_000) // 22 s of run time since q, a 10 s ask
    return yield* lateReply(third.bob, q)
  })

describe("review revby by1: an ask from a far-future store, restored twice", () => {
  it.effect("clocks agreeing: the reply 22 s after a 10 s ask is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyAfterTwoRestarts(0), "delivery_failed")
    }))

  // The stored due time is on the first run's clock, a year ahead of this one; the restore bounds it by the ask's own
  // timeout from the restart (the ask_edges paragraph of docs/store.md).
  it.effect("the first run's clock a year ahead, then set back: the reply 22 s after a 10 s ask is refused all the same", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyAfterTwoRestarts(YEAR), "delivery_failed")
    }))
})
