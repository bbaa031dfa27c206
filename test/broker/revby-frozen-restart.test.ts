/**
 * Review revby by1: a restored edge's due time is its deadline less how far the stored highest stamp leads
 * the new clock (Router.restore, BrokerStamps.restoredLead). While the stamps sit at a restart's floor ahead of
 * the clock, every ask gets the same (frozen) stamp, so that lead measures the floor against the restart's clock,
 * not the ask's own receipt: restored, the ask is due a full timeout after the restart again — the time the last
 * run saw pass is lost, and each quick restart while the floor leads reopens the whole timeout. Now the edge is
 * stored with its due time on the clock (mailCodec.encodeEdge) and restored at it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { askBob, askRestartWorld, firstRunAhead, lateReply } from "../support/restartWorld.ts"
import { advance } from "../support/memory.ts"

const START = 1_000_000_000
const HOUR = 60 * 60 * 1000

/** A 10 s ask sent in run 2, 8 s pass, crash, run 3 at once on the same clock, 4 s more: 12 s since the ask. */
const replyTwelveSecondsIn = (ahead: number) =>
  Effect.gen(function*() {
    const { run } = yield* askRestartWorld("10 seconds")
    yield* firstRunAhead(run, START, ahead)
    const second = yield* run
    const q = yield* askBob(second.alice, second.bob)
    yield* advance(8_000) // committed: q's edge is stored; 2 s of its timeout left
    yield* second.broker.crash

    const third = yield* run // at once, the clock where run 2 stopped
    yield* advance(4_000) // 12 s since q: 2 s past its timeout
    return yield* lateReply(third.bob, q)
  })

describe("review revby by1: an ask restored while the stamps sit at a floor ahead keeps its elapsed time", () => {
  it.effect("clocks agreeing: the reply 12 s after a 10 s ask is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyTwelveSecondsIn(0), "delivery_failed")
    }))

  it.effect("the first run's clock an hour ahead: the reply 12 s after a 10 s ask is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyTwelveSecondsIn(HOUR), "delivery_failed")
    }))
})
