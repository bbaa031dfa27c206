/**
 * RecentMessages reopens no question its sender withdrew (review revbf BF2): the broker asks a withdrawn ask
 * nothing again, neither for a lost reply (`replyLost`) nor for a cancelled one (`cancelWritten`), and a
 * withdrawal read while a pair is reopened closes it (`withdrawn`) — also while a cancel of the reply still holds
 * it, whose end then releases the hold without reopening anything. A copy of the question read after that is a
 * redelivery: a repeat (false), never "again". The withdrawal is what the client's RecentControls holds; here a
 * set stands for it.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ConfirmBound } from "../../src/client/ConfirmationPolicy.ts"
import { RecentMessages } from "../../src/client/RecentMessages.ts"

const ALICE = "aaaaaaaa-5555-4000-8000-00000000000a"
const withheld = (): ConfirmBound => "none"

/** A RecentMessages whose record of controls is `withdrawals` ("sender/id"); q read and answered by reply r. */
const answered = () => {
  const withdrawals = new Set<string>()
  const recent = new RecentMessages(1024, (sender, id) => withdrawals.has(`${sender}/${id}`))
  assert.strictEqual(recent.firstTime(ALICE, "q", withheld, true), "new")
  recent.replied("r", "q", ALICE, ALICE)
  /** Alice's cancel of q is read. */
  const cancelRead = () => {
    withdrawals.add(`${ALICE}/q`)
    recent.withdrawn(ALICE, "q")
  }
  return { cancelRead, recent }
}

describe("RecentMessages: a withdrawn question is not reopened", () => {
  it("a reply lost after the withdrawal does not reopen it", () => {
    const { cancelRead, recent } = answered()
    cancelRead()
    recent.replyLost("r", ALICE)
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy of the withdrawn question passed once more")
  })

  it("a cancel of the reply written after the withdrawal does not reopen it, and its answer closes nothing wrongly", () => {
    const { cancelRead, recent } = answered()
    cancelRead()
    recent.cancelWritten("r")
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy of the withdrawn question passed once more")
    recent.cancelEnded("r", true)
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true))
  })

  it("a withdrawal read while a cancel of the reply holds the pair closes it", () => {
    const { cancelRead, recent } = answered()
    recent.cancelWritten("r")
    cancelRead()
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy read behind the withdrawal passed once more")
    // The cancel was let go unanswered: its hold is released, nothing reopened.
    recent.cancelAbandoned("r")
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true))
  })

  it("a withdrawal read after a lost reply reopened the pair closes it", () => {
    const { cancelRead, recent } = answered()
    recent.replyLost("r", ALICE)
    cancelRead()
    assert.isFalse(recent.firstTime(ALICE, "q", withheld, true), "a copy read behind the withdrawal passed once more")
  })
})
