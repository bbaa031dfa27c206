/**
 * Review revat probe AT4 (merge turnc, cb0aa372; ReplyTracker `closedFrom`):
 * `to` alone naming an asker none of whose asks is pending answers with the
 * refusal of that asker's newest CLOSED ask, though a newer ask of the same
 * asker is not closed at all:
 *
 * - lapsed (past this session's own timeout, the asker's wait unknown: the
 *   broker decides, it may still be waited on) — the answer is then the older
 *   withdrawn ask's "withdrew", where without that older ask it is "No pending
 *   ask from B" (replyTrackerAskers.test.ts);
 * - answered — "B withdrew q-old" right after this session answered q-new.
 *
 * FAILS on main at cb0aa372.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Message, SessionInfo } from "../src/protocol/frames.ts"
import { AskNoLongerOpen } from "../src/session/errors.ts"
import { type InboundContext, makeReplyTracker } from "../src/session/ReplyTracker.ts"

const B: SessionInfo = {
  id: "b0b0-1111",
  name: "B",
  cwd: "/work",
  model: "m",
  pid: 1,
  startedAt: 0,
  lastActivity: 0,
  endpointEpoch: "epoch-b"
}

const ask = (id: string, receivedAt = 0): InboundContext => {
  const message: Message = { id, timestamp: 0, content: { text: "B asks" }, expectsReply: true }
  return { from: B, message, receivedAt }
}

describe("review revat: closedFrom answers with an older closed ask", () => {
  it("AT4a: B's newer ask lapsed (may still be waited on): `to: B` is not refused as B's older ask withdrawn", () => {
    const tracker = makeReplyTracker(10_000)
    tracker.record(ask("q-old"))
    tracker.askWithdrawn(B.id, "q-old")
    tracker.record(ask("q-new", 1))
    const later = 3 * 10_000
    assert.deepStrictEqual(tracker.pending(later), [], "q-new left pending (lapsed)")
    const target = tracker.resolve({ to: "B" }, later)
    assert.notInstanceOf(target, AskNoLongerOpen, target instanceof Error ? target.message : "found")
  })

  it("AT4b: B's newer ask was just answered: `to: B` is not refused as B's older ask withdrawn", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask("q-old"))
    tracker.askWithdrawn(B.id, "q-old")
    tracker.record(ask("q-new", 1))
    tracker.markReplied(B.id, "q-new")
    const target = tracker.resolve({ to: "B" }, 2)
    assert.notInstanceOf(target, AskNoLongerOpen, target instanceof Error ? target.message : "found")
  })
})
