/**
 * The client's rule for confirming what it read (src/client/ConfirmationPolicy.ts):
 * held while no session takes its messages; with `confirmWhenHandled`, only once
 * nothing read is unhandled.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfirmationPolicy } from "../../src/client/ConfirmationPolicy.ts"

describe("ConfirmationPolicy", () => {
  it("by default what was read is confirmed, handled or not, unless held", () => {
    const policy = new ConfirmationPolicy()
    assert.isTrue(policy.confirming(3))
    assert.isFalse(policy.drained(0), "nothing waits for a hand-off to confirm")
    policy.hold()
    assert.isFalse(policy.confirming(0))
    policy.resume()
    assert.isTrue(policy.confirming(0))
  })

  it("confirming what was handled: not while a message read is unhandled; the last one handled drains it", () => {
    const policy = new ConfirmationPolicy(true)
    assert.isFalse(policy.confirming(1))
    assert.isTrue(policy.confirming(0))
    assert.isTrue(policy.drained(0))
    policy.hold()
    assert.isFalse(policy.drained(0), "held: handling the last one confirms nothing")
  })

  it("confirmWhenHandled turns the mode on later", () => {
    const policy = new ConfirmationPolicy()
    policy.confirmWhenHandled()
    assert.isFalse(policy.confirming(2))
    assert.isTrue(policy.drained(0))
  })
})
