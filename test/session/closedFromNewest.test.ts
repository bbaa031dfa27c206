/**
 * `reply` with `to` alone, naming an asker none of whose asks is pending,
 * is refused with that asker's newest closed ask (`AskNoLongerOpen`) only
 * when that closed ask is the asker's newest ask (by receive time):
 *
 * - the asker's newer ask lapsed (past this session's timeout, the asker's
 *   wait unknown: it may still wait): not refused as the older one withdrawn;
 * - the asker's newer ask was answered: not refused as the older one withdrawn;
 * - the closed ask is the newest: refused with it (withdrawn).
 *
 * ReplyTracker alone, with explicit times.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Message, SessionInfo } from "../../src/protocol/frames.ts"
import { AskNoLongerOpen } from "../../src/session/errors.ts"
import { type InboundContext, makeReplyTracker } from "../../src/session/ReplyTracker.ts"

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

describe("reply to an asker whose older ask closed", () => {
  it("B's newer ask lapsed: `to: B` is not refused as B's older ask withdrawn", () => {
    const tracker = makeReplyTracker(10_000)
    tracker.record(ask("q-old"))
    tracker.askWithdrawn(B.id, "q-old")
    tracker.record(ask("q-new", 1))
    const later = 3 * 10_000
    assert.deepStrictEqual(tracker.pending(later), [], "q-new left pending (lapsed)")
    const target = tracker.resolve({ to: "B" }, later)
    assert.notInstanceOf(target, AskNoLongerOpen, target instanceof Error ? target.message : "found")
  })

  it("B's newer ask was answered: `to: B` is not refused as B's older ask withdrawn", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask("q-old"))
    tracker.askWithdrawn(B.id, "q-old")
    tracker.record(ask("q-new", 1))
    tracker.markReplied(B.id, "q-new")
    const target = tracker.resolve({ to: "B" }, 2)
    assert.notInstanceOf(target, AskNoLongerOpen, target instanceof Error ? target.message : "found")
  })

  it("B's newest ask is the withdrawn one: `to: B` is refused with it", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask("q-old"))
    tracker.markReplied(B.id, "q-old")
    tracker.record(ask("q-new", 1))
    tracker.askWithdrawn(B.id, "q-new")
    const target = tracker.resolve({ to: "B" }, 2)
    assert.instanceOf(target, AskNoLongerOpen)
    assert.strictEqual(target instanceof AskNoLongerOpen ? target.askId : undefined, "q-new")
    assert.strictEqual(target instanceof AskNoLongerOpen ? target.withdrawn : undefined, true)
  })
})
