/**
 * Review revag AG2 (probe; fails on main): with only `brokerReceivedAt` on
 * an ask (no `brokerDeliveredAt`), askExpiresAt still compares that stamp,
 * the broker's clock, with the session's receive (`min(receivedAt + T + 1,
 * brokerReceivedAt + T)`): a broker clock minutes behind the session's
 * makes an ask that never waited expire before it was even received — the
 * very clock mixing fixaf (revaf AF1) took out of the two-stamp case.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Message } from "../src/protocol/frames.ts"
import { askExpiresAt } from "../src/session/ReplyTracker.ts"

const from = { id: "sess-a", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const TIMEOUT = 10_000

describe("revag AG2: an ask stamped only with brokerReceivedAt", () => {
  it("a broker clock 5 min behind the session's does not expire the ask before its receive", () => {
    const receivedAt = 1_300_000
    const message: Message = { id: "ask-1", timestamp: 0, expectsReply: true, content: { text: "q" }, brokerReceivedAt: 1_000_000 }
    const expiresAt = askExpiresAt({ from, message, receivedAt, askTimeoutMs: TIMEOUT }, TIMEOUT)
    assert.isAbove(expiresAt, receivedAt, "the ask expired before the session received it")
  })
})
