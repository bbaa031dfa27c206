/**
 * Review revaj AJ2 (probe, fails on main 4981d72c): RecentMessages keeps at most `capacity` (1,024) reopened
 * pairs and trims the oldest — also the pair of a cancel still waiting for its answer. Cancels whose answer
 * never comes (detached ones dropped past PendingCancels' bound of 256, those a close cut off) leave their
 * pairs reopened for good, so they pile up and push out the pair of a cancel the broker is still carrying
 * out: the question it asks again ahead of that cancel's answer is dropped as a repeat — a lost question.
 * The 256 bound on detached cancels bounds nothing here.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfirmBound } from "../src/client/ConfirmationPolicy.ts"
import { RecentMessages } from "../src/client/RecentMessages.ts"

const ALICE = "aaaaaaaa-5555-4000-8000-00000000000a"

describe("review revaj AJ2", () => {
  it("a cancel's reopened pair is not trimmed while its answer is awaited", () => {
    const recent = new RecentMessages()
    const capacity = 1024
    // Every pair stays in `seen`: confirmations withheld, so nothing is forgotten.
    const withheld = (): ConfirmBound => "none"
    const ask = (i: number) => `ask-${i}`
    const reply = (i: number) => `reply-${i}`
    // Alice's question 0 is read and answered; bob cancels the reply: the cancel is written, its answer awaited.
    assert.isTrue(recent.firstTime(ALICE, ask(0), withheld, true))
    recent.replied(reply(0), ask(0), ALICE, undefined)
    recent.cancelWritten(reply(0))
    // Meanwhile 1,024 other answered questions have their replies cancelled, answers never read (dropped
    // detached cancels, or a close): each leaves its pair reopened.
    for (let i = 1; i <= capacity; i++) {
      assert.isTrue(recent.firstTime(ALICE, ask(i), withheld, true))
      recent.replied(reply(i), ask(i), ALICE, undefined)
      recent.cancelWritten(reply(i))
    }
    // The broker carries the first cancel out: it asks question 0 again, ahead of the cancel's answer.
    assert.isTrue(recent.firstTime(ALICE, ask(0), withheld, true), "the question asked again was dropped as a repeat")
    recent.cancelEnded(reply(0), true)
  })
})
