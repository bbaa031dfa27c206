/**
 * RecentMessages keeps at most `capacity` reopened (asker, id) pairs beyond those a cancel still awaiting its
 * answer holds. Cancels whose answer never comes (detached ones dropped past PendingCancels' bound, those a close
 * cut off) leave their pairs reopened and count towards that bound; they must not push out the pair of a cancel
 * the broker may still be carrying out, whose question it asks again ahead of the answer (review revaj AJ2:
 * before, that question was dropped as a repeat — a lost question). A pair the bound lets go is forgotten outright,
 * so its question asked again passes as new (review revam), and the confirmations' stop keeps its place.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfirmBound } from "../../src/client/ConfirmationPolicy.ts"
import type { InboundMessage } from "../../src/client/events.ts"
import { RecentMessages } from "../../src/client/RecentMessages.ts"

const ALICE = "aaaaaaaa-5555-4000-8000-00000000000a"

// Every pair stays in `seen`: confirmations withheld, so nothing is forgotten but reopened pairs.
const withheld = (): ConfirmBound => "none"
const ask = (i: number) => `ask-${i}`
const reply = (i: number) => `reply-${i}`

/** Alice's question `i` is read and answered by `reply(i)`, then that reply's cancel is written. */
const answerAndCancel = (recent: RecentMessages, i: number): void => {
  assert.strictEqual(recent.firstTime(ALICE, ask(i), withheld, true), "new")
  recent.replied(reply(i), ask(i), ALICE, undefined)
  recent.cancelWritten(reply(i))
}

describe("RecentMessages: the bound on reopened questions", () => {
  it("a cancel's reopened pair is not trimmed while its answer is awaited, however many newer ones are reopened", () => {
    const capacity = 16
    const recent = new RecentMessages(capacity)
    answerAndCancel(recent, 0)
    // Meanwhile more than `capacity` other questions have their replies' cancels written, answers never read.
    for (let i = 1; i <= capacity; i++) answerAndCancel(recent, i)
    // The broker carries the first cancel out: it asks question 0 again, ahead of the cancel's answer.
    assert.strictEqual(recent.firstTime(ALICE, ask(0), withheld, true), "again", "the question asked again was dropped as a repeat")
    recent.cancelEnded(reply(0), true)
  })

  it("pairs left reopened by abandoned cancels are trimmed past capacity, oldest first, and a held one is not", () => {
    const capacity = 16
    const recent = new RecentMessages(capacity)
    answerAndCancel(recent, 0)
    // Question 1's cancel is let go unanswered (dropped, or its connection closed): its pair, the oldest not held,
    // is the first the bound trims; question 0's cancel still awaits its answer.
    answerAndCancel(recent, 1)
    recent.cancelAbandoned(reply(1))
    // 17 reopened: one past the bound, the held pair among them.
    for (let i = 2; i <= capacity; i++) {
      answerAndCancel(recent, i)
      recent.cancelAbandoned(reply(i))
    }
    // Trimmed, the oldest abandoned pair was forgotten outright: asked again, its question passes as new, and a copy
    // behind it is a repeat (review revam: before, it stayed in `seen` and the question asked again was lost).
    assert.strictEqual(recent.firstTime(ALICE, ask(1), withheld, true), "new", "the trimmed pair's question, asked again, was dropped")
    assert.isFalse(recent.firstTime(ALICE, ask(1), withheld, true), "a copy behind the question asked again passed too")
    assert.strictEqual(recent.firstTime(ALICE, ask(2), withheld, true), "again", "an abandoned pair within the bound was trimmed")
    assert.strictEqual(recent.firstTime(ALICE, ask(0), withheld, true), "again", "the held pair was trimmed")
  })

  it("a question whose reopened pair the bound trimmed passes once when asked again, a copy behind it does not", () => {
    const capacity = 2
    const recent = new RecentMessages(capacity)
    for (let i = 0; i <= capacity; i++) {
      assert.strictEqual(recent.firstTime(ALICE, `q${i}`, withheld, true), "new")
      recent.replied(`r${i}`, `q${i}`, ALICE, ALICE)
      recent.cancelWritten(`r${i}`)
      // Each cancel is let go unanswered: the broker may have carried it out and ask its question again.
      recent.cancelAbandoned(`r${i}`)
    }
    assert.strictEqual(recent.firstTime(ALICE, "q0", withheld, true), "new", "the oldest question, asked again, was dropped: a loss")
    assert.isFalse(recent.firstTime(ALICE, "q0", withheld, true), "a copy behind it passed too")
  })
  it("a stop whose pair the bound trimmed keeps every pair: a redelivered message read after it is still a repeat", () => {
    const capacity = 2
    const recent = new RecentMessages(capacity)
    let bound: ConfirmBound = "none"
    const now = (): ConfirmBound => bound
    const abandon = (i: number) => {
      assert.strictEqual(recent.firstTime(ALICE, ask(i), now, true), "new")
      recent.replied(reply(i), ask(i), ALICE, ALICE)
      recent.cancelWritten(reply(i))
      recent.cancelAbandoned(reply(i))
    }
    abandon(0)
    assert.strictEqual(recent.firstTime(ALICE, "plain", now), "new")
    // Two more abandoned cancels: three reopened pairs, one past the bound, so question 0's is trimmed from `seen`.
    abandon(1)
    abandon(2)
    // Confirmations now stop at question 0, unhandled: it and everything read after it are unconfirmed.
    const stop: InboundMessage = {
      from: { id: ALICE, name: "alice", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
      message: { id: ask(0), timestamp: 0, content: { text: "q" } }
    }
    bound = stop
    assert.strictEqual(recent.firstTime(ALICE, "later", now), "new")
    // A reconnect redelivers what was read after the stop: the plain message is a repeat.
    assert.isFalse(recent.firstTime(ALICE, "plain", now), "a message after the stop was forgotten: a duplicate")
  })
})
