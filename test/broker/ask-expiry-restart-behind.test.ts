/**
 * A durable restart on a clock behind the last run's: the stamps are floored at the stored highest stamp
 * (Router.restoreStamps), and an ask sent then still closes at its own timeout on this run's clock, so a late
 * reply is refused (review revbu bu1, through a restart; the case with the clocks agreeing alongside).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { askBob, askRestartWorld, firstRunAhead, lateReply } from "../support/restartWorld.ts"
import { advance } from "../support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000

const replyTwoSecondsIn = (ahead: number) =>
  Effect.gen(function*() {
    const { run } = yield* askRestartWorld("1 second")
    yield* firstRunAhead(run, START, ahead)
    const { alice, bob } = yield* run
    const q = yield* askBob(alice, bob)
    yield* advance(2_000) // twice q's timeout
    return yield* lateReply(bob, q)
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
