/**
 * Review revan (of merge fixal 5af570c9): probes on the ReplyTracker state
 * machine. Each test FAILS on main at 5af570c9; it states the behaviour the
 * tracker should have.
 *
 * - AN1: a withdrawn ask whose staged answer the broker later drops (a
 *   `superseded` receipt, `replyDropped`) is pending again: `askWithdrawn`
 *   returns early when the ask is no longer in `asks`/`current` — which is
 *   exactly the case when a staged answer exists — so its staging is kept.
 * - AN2: two askers with one message id (the known `asks`-by-id gap): a
 *   reply in B's turn drops C's pending ask; a reply to C's ask ends B's
 *   turn context, so a later reply in B's turn answers a third asker; and
 *   `reply to: B` in B's own turn is refused locally.
 * - AN3: an ask without its asker's wait (no `askTimeoutMs`) past this
 *   session's own timeout leaves `asks` and is not closed; docs/client.md
 *   says "a reply to it is sent (the broker decides)", but a reply naming it
 *   (`replyTo`, or `to`) outside its turn finds no context at all: refused
 *   locally as `No reply context` / `No pending ask`.
 * - AN4: B supersedes its ask q-old (the current turn's) with q-new: in that
 *   turn `reply to: B` is refused as "Multiple pending asks from B", though
 *   only q-new is open (q-old is closed, withdrawn).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Message, SessionInfo } from "../src/protocol/frames.ts"
import { AskNoLongerOpen } from "../src/session/errors.ts"
import { type InboundContext, makeReplyTracker } from "../src/session/ReplyTracker.ts"

const peer = (id: string, name: string): SessionInfo => ({
  id,
  name,
  cwd: "/work",
  model: "m",
  pid: 1,
  startedAt: 0,
  lastActivity: 0,
  endpointEpoch: `epoch-${id}`
})
const B = peer("b0b0-1111", "B")
const C = peer("c0c0-1111", "C")
const D = peer("d0d0-1111", "D")

const ask = (from: SessionInfo, id: string, receivedAt = 0): InboundContext => {
  const message: Message = { id, timestamp: 0, content: { text: `${from.name ?? ""} asks` }, expectsReply: true }
  return { from, message, receivedAt }
}

describe("review revan: ReplyTracker", () => {
  it("AN1: a withdrawn ask stays closed when its staged answer is dropped later (replyDropped)", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-b"))
    // Answered with a `replace` reply the broker staged as r-1.
    tracker.markReplied(B.id, "q-b", "r-1")
    // B cancels (or supersedes) its ask before the staged answer is delivered.
    tracker.askWithdrawn(B.id, "q-b")
    // A later message of the thread replaces r-1 before delivery: the broker says `superseded` for r-1.
    const reopened = tracker.replyDropped("r-1")
    assert.strictEqual(reopened, false, "B withdrew q-b: dropping its answer must not make it owed again")
    assert.deepStrictEqual(tracker.pending(1).map((p) => p.message.id), [], "q-b is not pending")
    const refused = tracker.resolve({ replyTo: "q-b" }, 1)
    assert.instanceOf(refused, AskNoLongerOpen, "a reply to q-b is refused as withdrawn")
  })

  it("AN2a: a reply in B's turn (same id as C's pending ask) leaves C's ask pending", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.beginTurn("q-1", 0)
    tracker.record(ask(C, "q-1"))
    const target = tracker.resolve({}, 1)
    assert.ok(!(target instanceof Error) && target.from.id === B.id, "the turn's own ask (B's) is answered")
    tracker.markReplied(B.id, "q-1")
    assert.deepStrictEqual(
      tracker.pending(2).map((p) => p.from.id),
      [C.id],
      "C's ask q-1 is still owed: answering B's must not drop it"
    )
  })

  it("AN2b: a reply to C's ask with B's id does not end B's turn, so a later reply there never answers D", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.beginTurn("q-1", 0)
    tracker.record(ask(C, "q-1"))
    tracker.record(ask(D, "q-d"))
    const toC = tracker.resolve({ to: "C", replyTo: "q-1" }, 1)
    assert.ok(!(toC instanceof Error) && toC.from.id === C.id)
    tracker.markReplied(C.id, "q-1")
    const inTurn = tracker.resolve({}, 2)
    assert.ok(
      !(inTurn instanceof Error) && inTurn.from.id === B.id,
      `a reply without \`to\` in B's turn answers B, got ${inTurn instanceof Error ? inTurn.message : inTurn.from.id}`
    )
  })

  it("AN2c: `reply to: B` in B's own turn is not refused when C has a pending ask with the same id", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.beginTurn("q-1", 0)
    tracker.record(ask(C, "q-1"))
    const target = tracker.resolve({ to: "B" }, 1)
    assert.ok(
      !(target instanceof Error) && target.from.id === B.id,
      `B's ask is the turn's: got ${target instanceof Error ? target.message : target.from.id}`
    )
  })

  it("AN3a: an ask without askTimeoutMs past the session's timeout, named by replyTo, is still answered (the broker decides)", () => {
    const tracker = makeReplyTracker(10_000)
    tracker.record(ask(B, "q-long"))
    const later = 3 * 10_000
    assert.deepStrictEqual(tracker.pending(later), [], "it left pending (documented)")
    const target = tracker.resolve({ replyTo: "q-long" }, later)
    assert.ok(
      !(target instanceof Error) && target.from.id === B.id,
      `a reply naming it goes to the broker: got ${target instanceof Error ? target.message : target.from.id}`
    )
  })

  it("AN3b: the same ask answered with `to: B` is not refused locally", () => {
    const tracker = makeReplyTracker(10_000)
    tracker.record(ask(B, "q-long"))
    const target = tracker.resolve({ to: "B" }, 3 * 10_000)
    assert.ok(
      !(target instanceof Error) && target.from.id === B.id,
      `a reply to B goes to the broker: got ${target instanceof Error ? target.message : target.from.id}`
    )
  })

  it("AN4: in the turn of B's superseded ask, `to: B` answers B's one open ask (the new one), not 'Multiple pending asks'", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-old"))
    tracker.beginTurn("q-old", 0)
    tracker.askWithdrawn(B.id, "q-old")
    tracker.record(ask(B, "q-new", 1))
    const target = tracker.resolve({ to: "B" }, 2)
    assert.ok(
      !(target instanceof Error) && target.message.id === "q-new",
      `B's only open ask is q-new: got ${target instanceof Error ? target.message : target.message.id}`
    )
  })
})
