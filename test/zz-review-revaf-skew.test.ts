/**
 * Review revaf AF1 (probe, fails on main 60eb96e4): `askExpiresAt` compares the
 * broker's `brokerReceivedAt` (the broker's clock) with this session's Clock.
 * A broker clock behind the session's (another process, a stepped wall clock,
 * a durable broker restarted across a clock step) makes a freshly delivered
 * ask — delivered the same millisecond the broker received it
 * (`brokerDeliveredAt === brokerReceivedAt`) — expire before it arrives: it is
 * never pending and `reply` naming it fails, while the broker's edge is open
 * for the whole timeout. The broker's two stamps measure the mailbox wait on
 * one clock (as src/session/oldMail.ts `queuedFor` does).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Message } from "../src/protocol/frames.ts"
import { makeReplyTracker } from "../src/session/ReplyTracker.ts"

const from = { id: "sess-a", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
const TIMEOUT = 60_000

describe("review revaf AF1: askExpiresAt against a broker clock behind the session's", () => {
  it("an ask delivered the instant the broker took it is pending at its receipt", () => {
    const tracker = makeReplyTracker(TIMEOUT)
    // The broker's clock is 5 minutes behind this session's; the ask did not wait at all.
    const message: Message = {
      id: "ask-1",
      timestamp: 0,
      expectsReply: true,
      content: { text: "q" },
      brokerReceivedAt: 1_000_000,
      brokerDeliveredAt: 1_000_000
    }
    const receivedAt = 1_300_000
    tracker.record({ from, message, receivedAt, askTimeoutMs: TIMEOUT })
    expect(tracker.pending(receivedAt).map((context) => context.message.id)).toEqual(["ask-1"])
    expect(tracker.nextExpiry(receivedAt)).toBeGreaterThanOrEqual(receivedAt + TIMEOUT)
  })
})
