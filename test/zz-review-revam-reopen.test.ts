/**
 * Review revam probes (fixaj, merge 30d51b6e): the repeat filter's reopened pairs around cancels. Each test
 * states what should hold and FAILS on main at 2076e35b.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfirmBound } from "../src/client/ConfirmationPolicy.ts"
import { RecentMessages } from "../src/client/RecentMessages.ts"

const ALICE = "aaaaaaaa-5555-4000-8000-00000000000a"
const withheld = (): ConfirmBound => "none"

describe("review revam: reopened pairs and cancels", () => {
  it("AM1: a reply lost while its cancel is queued keeps the question open after the cancel is withdrawn unwritten", () => {
    const recent = new RecentMessages()
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true))
    recent.replied("r", "q", ALICE, ALICE)
    // The cancel of r is announced as its frame is queued; it reopened the pair.
    const reopenedByIt = recent.cancelWritten("r")
    assert.isTrue(reopenedByIt)
    // Meanwhile r's `expired` receipt is read: the reply was lost, the broker will ask q again.
    recent.replyLost("r", ALICE)
    // The caller gives up while the frame is still queued: the outbox takes it back, the cancel reached no broker.
    recent.cancelWithdrawn("r", reopenedByIt)
    // The broker asks q again (after the receipt): it must pass.
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true), "the question asked again after the reply's loss was dropped")
  })

  it("AM1 (second reply): another reply's loss while a cancel is queued keeps the question open after the withdrawal", () => {
    const recent = new RecentMessages()
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true))
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    const reopenedByIt = recent.cancelWritten("r1")
    // r2's `expired` receipt is read: the broker will ask q again.
    recent.replyLost("r2", ALICE)
    recent.cancelWithdrawn("r1", reopenedByIt)
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true), "the question asked again after r2's loss was dropped")
  })

  it("AM2: once one reply's cancel is answered and the other's withdrawn unwritten, the question is a repeat again", () => {
    const recent = new RecentMessages()
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true))
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    const first = recent.cancelWritten("r1")
    const second = recent.cancelWritten("r2")
    assert.isTrue(first)
    assert.isFalse(second)
    // r1's cancel is answered (the broker refused it: r1 stands, q is not asked again); r2's still holds the pair.
    recent.cancelEnded("r1", false)
    // r2's cancel reached no broker: nothing can ask q again now.
    recent.cancelWithdrawn("r2", second)
    // A redelivered copy of q (a reconnect before it was confirmed) must be dropped: q was answered.
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy of the answered question passed: a duplicate")
  })
  it("AM1 (abandoned): a cancel of another reply let go unanswered keeps the question open after a withdrawal", () => {
    const recent = new RecentMessages()
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true))
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    const reopenedByIt = recent.cancelWritten("r1")
    recent.cancelWritten("r2")
    // r2's cancel is let go with no answer read (dropped detached): the broker may have carried it out.
    recent.cancelAbandoned("r2")
    // r1's cancel is taken back unwritten.
    recent.cancelWithdrawn("r1", reopenedByIt)
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true), "the question r2's cancel may have reopened was dropped")
  })
  it("AM3 (latent): two cancels of one reply id held at once release the pair they hold, even if the reply's asker was re-recorded between", () => {
    const recent = new RecentMessages()
    const CAROL = "cccccccc-5555-4000-8000-00000000000c"
    assert.isTrue(recent.firstTime(ALICE, "q", withheld, true))
    assert.isTrue(recent.firstTime(CAROL, "q", withheld, true))
    recent.replied("r", "q", ALICE, ALICE)
    recent.cancelWritten("r")
    // The reply is recorded again (a retried send), its asker now carol; a second cancel of r is written while
    // the first still holds.
    recent.replied("r", "q", CAROL, CAROL)
    recent.cancelWritten("r")
    recent.cancelEnded("r", false)
    recent.cancelEnded("r", false)
    // Both cancels were answered (refused: nothing asked again): neither question passes again.
    assert.isFalse(recent.firstTime(CAROL, "q", withheld, true), "carol's question stayed reopened: a hold never released")
  })
  it("gap: a question whose reopened pair the bound trimmed still passes once when asked again (a duplicate, not a loss)", () => {
    const capacity = 2
    const recent = new RecentMessages(capacity)
    for (let i = 0; i <= capacity; i++) {
      assert.isTrue(recent.firstTime(ALICE, `q${i}`, withheld, true))
      recent.replied(`r${i}`, `q${i}`, ALICE, ALICE)
      recent.cancelWritten(`r${i}`)
      // Each cancel is let go unanswered: the broker may have carried it out and ask its question again.
      recent.cancelAbandoned(`r${i}`)
    }
    assert.isTrue(recent.firstTime(ALICE, "q0", withheld, true), "the oldest question, asked again, was dropped: a loss")
    assert.isFalse(recent.firstTime(ALICE, "q0", withheld, true), "a copy behind it passed too")
  })
})
