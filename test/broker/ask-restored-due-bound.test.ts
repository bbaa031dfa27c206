/**
 * A restored ask's remaining time is bounded (review revbz bz1). Router.restore took the edge's stored `dueAt` (a
 * reading of the last run's clock) as it was; when the new run's clock is behind the last run's (a host clock
 * corrected backwards across the restart), a 10 s ask stayed open for the whole step — past its own timeout from
 * the restart, and for a step over 30 days past MAX_ASK_TIMEOUT_MS, the bound withdrawn_asks and the answered asks'
 * window assume no ask outlives. A restored ask is due no later than the restart's clock plus its own timeout
 * (`deadline - openedAt`): never sooner than its timeout from receipt in real time, never longer than its timeout
 * after the restart (which is at most MAX_ASK_TIMEOUT_MS; the reviewer's 40-day case took 12–18 s of real time
 * and tests the same line, so it is not kept).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { boundedAsk } from "../../src/broker/AskEdges.ts"
import type { Mail } from "../../src/store/records.ts"
import { askBob, askRestartWorld, lateReply } from "../support/restartWorld.ts"
import { advance } from "../support/memory.ts"

const START = 1_000_000_000
/** A 10 s ask received under a clock `ahead` ms ahead, the broker restarted on the corrected clock, `after` ms pass. */
const replyAfterRestart = (ahead: number, after: number) =>
  Effect.gen(function*() {
    const { run } = yield* askRestartWorld("10 seconds")
    yield* TestClock.setTime(START + ahead)
    const first = yield* run
    const q = yield* askBob(first.alice, first.bob)
    yield* advance(1_000) // committed: q's edge is stored with its due time on this clock
    yield* first.broker.crash

    yield* TestClock.setTime(START)
    const { bob } = yield* run
    yield* advance(after)
    return yield* lateReply(bob, q)
  })

describe("a restored ask does not outlive its own timeout after the restart (review revbz bz1)", () => {
  it.effect("clock an hour ahead, set back across the restart: the reply 20 s after the restart to a 10 s ask is refused", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* replyAfterRestart(60 * 60 * 1000, 20_000), "delivery_failed")
    }))
})

describe("a restored ask's mail is due no later than its own timeout from the restart (AskEdges.boundedAsk)", () => {
  const ask = (askDueAt: number | undefined, askTimeoutMs: number | undefined): Mail => ({
    recordKey: "alice/q",
    senderKey: "alice",
    senderId: "alice",
    senderIdentity: undefined,
    fromJson: "{}",
    message: { id: "q", timestamp: 0, content: { text: "?" }, expectsReply: true },
    brokerReceivedAt: 0,
    spaceKey: "",
    targetKey: "bob",
    targetId: "bob",
    targetIdentity: undefined,
    queuedAt: 0,
    askTimeoutMs,
    askDueAt
  })

  it("a stored due time past now plus the timeout is brought down to it; one within it, and a plain message, are left as they are", () => {
    const now = START
    assert.strictEqual(boundedAsk(ask(now + 3_600_000, 10_000), now).askDueAt, now + 10_000)
    const within = ask(now + 4_000, 10_000)
    assert.strictEqual(boundedAsk(within, now), within)
    const plain = ask(undefined, undefined)
    assert.strictEqual(boundedAsk(plain, now), plain)
  })
})
