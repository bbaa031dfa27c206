/**
 * Review revbu bu1, through a durable restart (the case bq1's floor is for): a broker whose last run's clock read an
 * hour ahead of this host's stores that hour in `stamp_high`; the restart floors its stamps there (Router.restoreStamps),
 * and every ask sent in the next hour gets a deadline an hour out (Asks.ts:427, a stamp) that fires on the clock — so a
 * one-second ask still takes a reply two seconds later. The same run with the clocks agreeing refuses it; the stepped
 * one fails on main.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { makeMemoryMailState } from "../src/store/MailStore.ts"
import { assertDelivered } from "./support/assertions.ts"
import { message, messageFor, send } from "./support/broker.ts"
import { durableBroker } from "./support/durable.ts"
import { advance, memoryNetwork } from "./support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000

const replyTwoSecondsIn = (ahead: number) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    yield* TestClock.setTime(START + ahead)
    const first = yield* durableBroker(world, disk, { askTimeout: "1 second" })
    const alice0 = yield* world.session({ sessionId: "alice", name: "alice" })
    yield* world.session({ sessionId: "bob", name: "bob" })
    assertDelivered(yield* send(alice0.client, "bob", message("m0")))
    yield* advance(1_000) // committed, with the highest stamp
    yield* first.crash

    yield* TestClock.setTime(START)
    yield* durableBroker(world, disk, { askTimeout: "1 second" })
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const q = message("q", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", q))
    yield* messageFor(bob.client, q.id)
    yield* advance(2_000) // twice q's timeout
    const answer = yield* send(bob.client, "alice", message("late", { replyTo: q.id }))
    return answer.type
  })

describe("review revbu bu1 (restart): after a durable restart on a clock an hour behind, a 1 s ask is closed 2 s in", () => {
  it.effect("clocks agreeing: the late reply is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyTwoSecondsIn(0), "delivery_failed")
    }))

  it.effect("the last run's clock an hour ahead: the late reply is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyTwoSecondsIn(HOUR), "delivery_failed")
    }))
})
