/**
 * The broker's ask expiry fiber (`ask-expiry-v1`, Broker.ts) steps
 * `nextAskExpiry() <= now → router.expireAsks(now)`. An edge can open
 * already past its deadline: a staged replace-mode ask that fell due while
 * its recipient's outbox was full is handed over later, with its deadline
 * counted from its staging. When it opens in a millisecond a send has
 * already pruned in, `Router.prune` (at most once per millisecond) would do
 * nothing and the fiber would spin until the clock moved — for ever under a
 * clock that moves only when fibers are idle (TestClock, the simulation).
 * `expireAsks` closes it whatever ran in that millisecond. Driven by hand:
 * the fiber's two calls, in its order (found by review revag).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, DELIVERY_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { typedSessions, written } from "../support/frameTypes.ts"
import { handRouter } from "../support/handRouter.ts"

const TIMEOUT_MS = 1_000
const WINDOW_MS = 100

describe("the ask expiry fiber and an edge that opens past its deadline", () => {
  it.effect("a late staged ask's edge, opened in a millisecond a send already pruned in, is closed by the fiber's step: nothing stays due at now", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { attach, batch, router } = yield* handRouter(
        { outboxCapacity: 2, replaceWindow: `${WINDOW_MS} millis` },
        () => clock.now
      )
      const session = typedSessions({ attach, batch })
      const asker = session("asker", [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1, DELIVERY_V1])
      const answerer = session("answerer", [DELIVERY_V1])
      const filler = session("filler", [])
      const other = session("other", [])
      written(router, asker)
      // The answerer does not read: its outbox fills.
      let parked = false
      for (let i = 0; i < 10 && !parked; i++) parked = batch(filler.peer, [{ type: "send", to: "answerer", message: message(`fill ${i}`) }])
      assert.isTrue(parked)
      batch(asker.peer, [{
        type: "send", to: "answerer", message: message("well?", { expectsReply: true }), askTimeoutMs: TIMEOUT_MS,
        delivery: "queue", queueMode: "replace", threadId: "t"
      }])
      assert.include(written(router, asker), "delivery_queued")
      clock.now += WINDOW_MS
      router.staging.flushDue(clock.now) // due, but no room: it stays staged
      clock.now += 2 * TIMEOUT_MS
      // A send in this millisecond prunes (Send.prune, once per ms)...
      batch(other.peer, [{ type: "send", to: "asker", message: message("hi") }])
      // ...then the answerer reads: room, and the staged ask is delivered, its edge past its deadline.
      const handed: Array<string> = []
      for (let got = written(router, answerer); got.length > 0; got = written(router, answerer)) handed.push(...got)
      assert.include(handed, "message")
      const due = router.nextAskExpiry()
      assert.isDefined(due, "no edge opened for the late staged ask")
      assert.isAtMost(due, clock.now, "the late edge is not due yet: the test sets up nothing")
      // The fiber: due <= now → expireAsks(now); then it asks again.
      router.expireAsks(clock.now)
      const next = router.nextAskExpiry()
      assert.isTrue(next === undefined || next > clock.now, `still due at ${next} <= now ${clock.now}: the fiber spins`)
    }))
})
