/**
 * ReplyTracker: asks told apart by asker and id, and the asks that left
 * `pending` without closing.
 *
 * - Two askers using one message id: a turn begun with one's ask is that
 *   asker's (named by asker and id), whichever came later; answering one
 *   leaves the other's ask pending and the turn's context as it is; `replyTo` naming both prefers
 *   the turn's asker, else asks for `to`; `to` naming the turn's asker
 *   answers the turn's ask.
 * - A withdrawn ask answered by a staged answer stays closed when the broker
 *   later drops that answer (`replyDropped`).
 * - An ask without its asker's wait (`askTimeoutMs`) past this session's own
 *   timeout: named by `replyTo` it is still answered (the broker decides);
 *   `to` alone does not find it.
 * - In the turn of an ask its asker replaced, `to` that asker answers its one
 *   open ask; with none open, `to` alone is refused with what closed its
 *   newest ask (expired, withdrawn), the turn's or not.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Message, SessionInfo } from "../../src/protocol/frames.ts"
import { AskNoLongerOpen, NoReplyContext } from "../../src/session/errors.ts"
import { type InboundContext, makeReplyTracker } from "../../src/session/ReplyTracker.ts"

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

/** The asker of what `resolve` found, or the error's message. */
const who = (target: InboundContext | Error): string => target instanceof Error ? target.message : target.from.id

describe("ReplyTracker: two askers using one message id", () => {
  it("answering B's ask in B's turn leaves C's ask of the same id pending", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.beginTurn({ from: B.id, messageId: "q-1" }, 0)
    tracker.record(ask(C, "q-1"))
    assert.strictEqual(who(tracker.resolve({}, 1)), B.id, "the turn's own ask (B's) is answered")
    tracker.markReplied(B.id, "q-1")
    assert.deepStrictEqual(tracker.pending(2).map((p) => p.from.id), [C.id])
  })

  it("answering C's ask of B's id keeps B's turn: a reply without `to` then answers B, not D's single ask", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.beginTurn({ from: B.id, messageId: "q-1" }, 0)
    tracker.record(ask(C, "q-1"))
    tracker.record(ask(D, "q-d"))
    assert.strictEqual(who(tracker.resolve({ to: "C", replyTo: "q-1" }, 1)), C.id)
    tracker.markReplied(C.id, "q-1")
    assert.strictEqual(who(tracker.resolve({}, 2)), B.id)
  })

  it("`to` naming the turn's asker answers the turn's ask", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.beginTurn({ from: B.id, messageId: "q-1" }, 0)
    tracker.record(ask(C, "q-1"))
    assert.strictEqual(who(tracker.resolve({ to: "B" }, 1)), B.id)
  })

  it("`replyTo` naming both: the turn's asker's in its turn; outside a turn refused, asking for `to`", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.record(ask(C, "q-1"))
    const unsure = tracker.resolve({ replyTo: "q-1" }, 1)
    assert.instanceOf(unsure, NoReplyContext)
    assert.strictEqual(unsure.reason, "Several asks are named \"q-1\" (from B, C) — specify `to`")
    assert.strictEqual(who(tracker.resolve({ replyTo: "q-1", to: "C" }, 1)), C.id)
    tracker.beginTurn({ from: C.id, messageId: "q-1" }, 1)
    assert.strictEqual(tracker.currentTurn()?.from.id, C.id)
    assert.strictEqual(who(tracker.resolve({ replyTo: "q-1" }, 2)), C.id)
  })

  it("a turn named by asker and id is that asker's, though another asker's ask of the same id came later", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-1"))
    tracker.record(ask(C, "q-1", 1))
    assert.strictEqual(tracker.beginTurn({ from: B.id, messageId: "q-1" }, 2)?.from.id, B.id)
    assert.strictEqual(who(tracker.resolve({}, 2)), B.id, "a reply without `to` answers B")
    assert.strictEqual(who(tracker.resolve({ replyTo: "q-1" }, 2)), B.id, "`replyTo` naming both prefers the turn's asker")
    // A turn of a message this session never received (or forgot) has no context.
    assert.isUndefined(tracker.beginTurn({ from: D.id, messageId: "q-1" }, 3))
  })
})

describe("ReplyTracker: closed and lapsed asks", () => {
  it("a withdrawn ask stays closed when its staged answer is dropped later (replyDropped)", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-b"))
    // Answered with a `replace` reply the broker staged as r-1; then B withdraws the ask.
    tracker.markReplied(B.id, "q-b", "r-1")
    tracker.askWithdrawn(B.id, "q-b")
    // A later message of the thread replaces r-1 before delivery: `superseded` for r-1.
    assert.strictEqual(tracker.replyDropped("r-1"), false, "not owed again")
    assert.deepStrictEqual(tracker.pending(1), [])
    const refused = tracker.resolve({ replyTo: "q-b" }, 1)
    assert.instanceOf(refused, AskNoLongerOpen)
    assert.strictEqual(refused.withdrawn, true)
  })

  it("an ask without askTimeoutMs past this session's timeout: `replyTo` still answers it; `to` alone does not find it", () => {
    const tracker = makeReplyTracker(10_000)
    tracker.record(ask(B, "q-long"))
    const later = 3 * 10_000
    assert.deepStrictEqual(tracker.pending(later), [], "it left pending")
    assert.strictEqual(who(tracker.resolve({ replyTo: "q-long" }, later)), B.id)
    assert.strictEqual(who(tracker.resolve({ replyTo: "q-long", to: "B" }, later)), B.id)
    const byName = tracker.resolve({ to: "B" }, later)
    assert.instanceOf(byName, NoReplyContext)
    assert.strictEqual(byName.reason, "No pending ask from \"B\"")
    tracker.markReplied(B.id, "q-long")
    assert.instanceOf(tracker.resolve({ replyTo: "q-long" }, later), NoReplyContext, "answered: forgotten")
  })

  it("in the turn of B's replaced ask, `to: B` answers B's one open ask (the new one)", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-old"))
    tracker.beginTurn({ from: B.id, messageId: "q-old" }, 0)
    tracker.askWithdrawn(B.id, "q-old")
    tracker.record(ask(B, "q-new", 1))
    const target = tracker.resolve({ to: "B" }, 2)
    assert.ok(!(target instanceof Error) && target.message.id === "q-new", who(target))
  })

  it("B's only ask expired here (its wait known), no turn: `to: B` is refused as expired, not \"No pending ask\"", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record({ ...ask(B, "q-b"), askTimeoutMs: 1_000 })
    tracker.record(ask(C, "q-c"))
    const refused = tracker.resolve({ to: "B" }, 3_001)
    assert.instanceOf(refused, AskNoLongerOpen)
    assert.deepStrictEqual([refused.askId, refused.expiredMs, refused.withdrawn], ["q-b", 2_000, undefined])
  })

  it("in the turn of B's replaced ask with no other ask of B, `to: B` is refused as withdrawn", () => {
    const tracker = makeReplyTracker(600_000)
    tracker.record(ask(B, "q-old"))
    tracker.beginTurn({ from: B.id, messageId: "q-old" }, 0)
    tracker.askWithdrawn(B.id, "q-old")
    const refused = tracker.resolve({ to: "B" }, 2)
    assert.instanceOf(refused, AskNoLongerOpen)
    assert.strictEqual(refused.askId, "q-old")
  })
})
