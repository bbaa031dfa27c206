/**
 * Review revby by1 (second form): a store written under a far-future clock. The next run caps its floor a day
 * past its clock and stores that lower highest stamp over the far one (Router.restoreStamps); its restored edges
 * are due right (their lead is measured uncapped). But the run after it measures the lead from the capped row, a
 * day, while the first run's edges still carry their far-future deadlines: restored again, a 10 s ask is due
 * about a year later (Router.restore, `edge.deadline - lead`), and its target may reply all that time.
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

describe("review revby by1: an ask from a far-future store, restored twice, still closes at its timeout", () => {
  it.effect("clocks agreeing: the reply 22 s after a 10 s ask is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyAfterTwoRestarts(0), "delivery_failed")
    }))

  it.effect("the first run's clock a year ahead: the reply 22 s after a 10 s ask is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyAfterTwoRestarts(YEAR), "delivery_failed")
    }))
})
