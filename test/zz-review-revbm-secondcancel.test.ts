/**
 * Review revbm BM2 probe. The premise of review revbi BI2: after a restart the client reads an OLD message's cancel
 * again (kept for its instance, stamped 0) while the NEW message under the reused id is restored from the host's
 * journal — never read by this client, so `RecentControls.received` never forgets the old cancel. When the sender
 * then cancels the NEW message, `RecentControls.firstTime` finds the (sender, id, "cancel") triple seen and answers
 * false: IntercomClient.ts:178 drops the control, no session sees it, and `withdrawal(…, receivedAt)` still holds
 * only the old stamp, which does not count for the new message — so the new message its sender cancelled is handed
 * over live and its ask is never closed. The broker's stamps (kept since fixbi) tell the two cancels apart.
 */
import { assert, describe, it } from "@effect/vitest"
import { RecentControls } from "../src/client/RecentControls.ts"

const HOUR = 60 * 60 * 1000

describe("revbm BM2: a new message's cancel after an old cancel of its reused id was read again", () => {
  it("is passed on, and withdraws the restored new message", () => {
    const controls = new RecentControls()
    // Registration: the old m-1's cancel, given again (stamped when the broker made it).
    assert.isTrue(controls.firstTime("c", { messageId: "m-1", action: "cancel", timestamp: 0 }, 3 * HOUR))
    // The restored new m-1 (brokerReceivedAt 2 h) is not withdrawn by it: as fixbi intends.
    assert.isUndefined(controls.withdrawal("c", "m-1", 3 * HOUR, 2 * HOUR), "setup: the old cancel withdrew the new m-1")
    // The sender now cancels the NEW m-1: the broker stamps it at 3 h.
    const newCancel = { messageId: "m-1", action: "cancel" as const, timestamp: 3 * HOUR }
    assert.isTrue(
      controls.firstTime("c", newCancel, 3 * HOUR + 1),
      "the new message's cancel was dropped as a copy of the old one's (IntercomClient.ts:178)"
    )
    assert.strictEqual(controls.withdrawal("c", "m-1", 3 * HOUR + 1, 2 * HOUR), "cancel")
    // The same cancel given again (its stamp unchanged) is still a copy: passed on once.
    assert.isFalse(controls.firstTime("c", newCancel, 3 * HOUR + 2), "a control given again was passed on twice")
  })
})
