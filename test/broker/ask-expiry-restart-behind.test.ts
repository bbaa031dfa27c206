/**
 * A durable restart on a clock behind the last run's: the stamps are floored at the stored highest stamp
 * (Router.restoreStamps), and an ask sent then still closes at its own timeout on this run's clock, so a late
 * reply is refused (review revbu bu1, through a restart; the case with the clocks agreeing alongside).
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

describe("after a durable restart on a clock an hour behind, a 1 s ask is closed 2 s in", () => {
  it.effect("clocks agreeing: the late reply is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyTwoSecondsIn(0), "delivery_failed")
    }))

  it.effect("the last run's clock an hour ahead: the late reply is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyTwoSecondsIn(HOUR), "delivery_failed")
    }))
})
