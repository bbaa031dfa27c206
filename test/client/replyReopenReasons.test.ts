/**
 * RecentMessages keeps why a question's pair is reopened per pair, not per cancel (review revam AM1-AM3): a lost
 * reply or a cancel let go unanswered keeps it open when another cancel of it is withdrawn unwritten; once every
 * cancel ended and nothing else keeps it open, the question is a repeat again.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfirmBound } from "../../src/client/ConfirmationPolicy.ts"
import { RecentMessages } from "../../src/client/RecentMessages.ts"

const ALICE = "aaaaaaaa-5555-4000-8000-00000000000a"
const withheld = (): ConfirmBound => "none"

describe("RecentMessages: why a reopened question stays open", () => {
  it("a reply lost while its cancel is queued keeps the question open after the cancel is withdrawn unwritten", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    recent.replied("r", "q", ALICE, ALICE)
    // The cancel of r is announced as its frame is queued: it reopens the pair.
    recent.cancelWritten("r")
    // Meanwhile r's `expired` receipt is read: the reply was lost, the broker will ask q again.
    recent.replyLost("r", ALICE)
    // The caller gives up while the frame is still queued: the outbox takes it back, the cancel reached no broker.
    recent.cancelWithdrawn("r")
    // The broker asks q again (after the receipt): it must pass.
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "again", "the question asked again after the reply's loss was dropped")
  })

  it("another reply's loss while a cancel is queued keeps the question open after the withdrawal", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    recent.cancelWritten("r1")
    // r2's `expired` receipt is read: the broker will ask q again.
    recent.replyLost("r2", ALICE)
    recent.cancelWithdrawn("r1")
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "again", "the question asked again after r2's loss was dropped")
  })

  it("once one reply's cancel is answered and the other's withdrawn unwritten, the question is a repeat again", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    recent.cancelWritten("r1")
    recent.cancelWritten("r2")
    // r1's cancel is answered (the broker refused it: r1 stands, q is not asked again); r2's still holds the pair.
    recent.cancelEnded("r1", false)
    // r2's cancel reached no broker: nothing can ask q again now.
    recent.cancelWithdrawn("r2")
    // A redelivered copy of q (a reconnect before it was confirmed) must be dropped: q was answered.
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy of the answered question passed: a duplicate")
  })
  it("a cancel of another reply let go unanswered keeps the question open after a withdrawal", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    recent.cancelWritten("r1")
    recent.cancelWritten("r2")
    // r2's cancel is let go with no answer read (dropped detached): the broker may have carried it out.
    recent.cancelAbandoned("r2")
    // r1's cancel is taken back unwritten.
    recent.cancelWithdrawn("r1")
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "again", "the question r2's cancel may have reopened was dropped")
  })
  it("two cancels of one reply id held at once release the pair they hold, even if the reply's asker was re-recorded between", () => {
    const recent = new RecentMessages()
    const CAROL = "cccccccc-5555-4000-8000-00000000000c"
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    assert.strictEqual(recent.firstTime(CAROL, "q", withheld, true), "new")
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
  it("a reply lost while its cancel waits keeps the question open after the cancel's answer", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    recent.cancelWritten("r1")
    // r2's `expired` receipt is read: the broker may ask q again, and nothing says it came ahead of r1's answer.
    recent.replyLost("r2", ALICE)
    recent.cancelEnded("r1", false)
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "again", "the question asked again after r2's loss was dropped")
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy behind it passed too")
  })
  it("a lost reply's question, once passed, is closed by a later cancel's answer", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
    recent.replied("r1", "q", ALICE, ALICE)
    recent.replied("r2", "q", ALICE, ALICE)
    recent.replyLost("r1", ALICE)
    assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "again", "the question asked again after r1's loss was dropped")
    // The copy that passed took the loss's reason with it: r2's cancel reopens q only until its answer.
    recent.cancelWritten("r2")
    recent.cancelEnded("r2", false)
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy after the refused cancel's answer passed")
  })
})
