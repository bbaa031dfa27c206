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
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const YEAR = 365 * 24 * 60 * 60 * 1000

const replyAfterTwoRestarts = (ahead: number) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    yield* TestClock.setTime(START + ahead)
    const first = yield* durableBroker(world, disk, { askTimeout: "10 seconds" })
    const alice0 = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob0 = yield* world.session({ sessionId: "bob", name: "bob" })
    const q = message("q", { expectsReply: true })
    assertDelivered(yield* send(alice0.client, "bob", q))
    yield* messageFor(bob0.client, q.id)
    yield* advance(1_000) // committed: q's edge is stored, its mail written
    yield* first.crash

    yield* TestClock.setTime(START)
    const second = yield* durableBroker(world, disk, { askTimeout: "10 seconds" })
    const alice1 = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob1 = yield* world.session({ sessionId: "bob", name: "bob" })
    const m1 = message("m1")
    assertDelivered(yield* send(alice1.client, "bob", m1)) // a commit: the capped highest stamp is stored
    yield* messageFor(bob1.client, m1.id)
    yield* advance(1_000)
    yield* second.crash

    yield* durableBroker(world, disk, { askTimeout: "10 seconds" })
    yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    yield* advance(20_000) // 22 s of run time since q, a 10 s ask
    const answer = yield* send(bob.client, "alice", message("late", { replyTo: q.id }))
    return answer.type
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
