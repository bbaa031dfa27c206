/**
 * RecentMessages keeps at most `capacity` reopened (asker, id) pairs beyond those a cancel still awaiting its
 * answer holds. Cancels whose answer never comes (detached ones dropped past PendingCancels' bound, those a close
 * cut off) leave their pairs reopened and count towards that bound; they must not push out the pair of a cancel
 * the broker may still be carrying out, whose question it asks again ahead of the answer (review revaj AJ2:
 * before, that question was dropped as a repeat — a lost question).
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfirmBound } from "../../src/client/ConfirmationPolicy.ts"
import { RecentMessages } from "../../src/client/RecentMessages.ts"

const ALICE = "aaaaaaaa-5555-4000-8000-00000000000a"

// Every pair stays in `seen`: confirmations withheld, so nothing is forgotten but reopened pairs.
const withheld = (): ConfirmBound => "none"
const ask = (i: number) => `ask-${i}`
const reply = (i: number) => `reply-${i}`

/** Alice's question `i` is read and answered by `reply(i)`, then that reply's cancel is written. */
const answerAndCancel = (recent: RecentMessages, i: number): void => {
  assert.isTrue(recent.firstTime(ALICE, ask(i), withheld, true))
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
    assert.isTrue(recent.firstTime(ALICE, ask(0), withheld, true), "the question asked again was dropped as a repeat")
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
    assert.isFalse(recent.firstTime(ALICE, ask(1), withheld, true), "the oldest abandoned pair was kept past the bound")
    assert.isTrue(recent.firstTime(ALICE, ask(2), withheld, true), "an abandoned pair within the bound was trimmed")
    assert.isTrue(recent.firstTime(ALICE, ask(0), withheld, true), "the held pair was trimmed")
  })
})
