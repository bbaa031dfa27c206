/**
 * The client's rule for how far it may confirm what it read
 * (src/client/ConfirmationPolicy.ts): with
 * `confirmWhenHandled` and while held, only what came before the oldest
 * unhandled message; while withheld, nothing, up to the withhold limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfirmationPolicy } from "../../src/client/ConfirmationPolicy.ts"
import type { InboundMessage } from "../../src/client/events.ts"

const oldest: InboundMessage = {
  from: { id: "sender", name: "sender", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
  message: { id: "m1", timestamp: 0, content: { text: "m1" } }
}

describe("ConfirmationPolicy", () => {
  it("by default what was read is confirmed, handled or not; held, only up to the oldest unhandled message", () => {
    const policy = new ConfirmationPolicy()
    assert.strictEqual(policy.bound(oldest), "all")
    assert.isFalse(policy.waitsForHandling, "handling a message confirms nothing more")
    policy.hold()
    assert.strictEqual(policy.bound(oldest), oldest, "held: what nobody handled stays unconfirmed")
    assert.strictEqual(policy.bound(undefined), "all", "held: what a retiring session still handled is confirmed")
    assert.isTrue(policy.waitsForHandling, "held: handling a message may confirm more")
    policy.resume()
    assert.strictEqual(policy.bound(oldest), "all")
  })

  it("confirming what was handled: up to the oldest unhandled message; everything once none is", () => {
    const policy = new ConfirmationPolicy(true)
    assert.strictEqual(policy.bound(oldest), oldest)
    assert.strictEqual(policy.bound(undefined), "all")
    assert.isTrue(policy.waitsForHandling)
    policy.hold()
    assert.strictEqual(policy.bound(oldest), oldest)
  })

  it("confirmWhenHandled turns the mode on later", () => {
    const policy = new ConfirmationPolicy()
    policy.confirmWhenHandled()
    assert.strictEqual(policy.bound(oldest), oldest)
    assert.isTrue(policy.waitsForHandling)
  })

  it("withheld: nothing is confirmed, handled or not, whatever else holds, until released", () => {
    const policy = new ConfirmationPolicy(true, true)
    assert.strictEqual(policy.bound(oldest), "none")
    assert.strictEqual(policy.bound(undefined), "none", "everything read was handled: still nothing")
    assert.isTrue(policy.waitsForHandling)
    policy.release()
    assert.strictEqual(policy.bound(oldest), oldest, "released: confirmWhenHandled's rule again")
    assert.strictEqual(policy.bound(undefined), "all")
    const plain = new ConfirmationPolicy(false, true)
    assert.strictEqual(plain.bound(undefined), "none")
    assert.isTrue(plain.waitsForHandling, "handling or a release may confirm more: the connections note frames")
    plain.release()
    assert.strictEqual(plain.bound(oldest), "all")
    assert.isFalse(plain.waitsForHandling)
  })

  it("withheld with a limit: counts what it withholds, and the first message past the limit releases; without the option nothing is counted", () => {
    const policy = new ConfirmationPolicy(true, true, 2)
    policy.read()
    policy.read()
    assert.deepStrictEqual(policy.state, { withholding: true, messages: 2, limitReleased: undefined })
    assert.strictEqual(policy.bound(undefined), "none", "at the limit: still withheld")
    policy.read()
    assert.deepStrictEqual(policy.state, { withholding: false, messages: 0, limitReleased: 3 })
    assert.strictEqual(policy.bound(undefined), "all", "past it: released")
    policy.read()
    assert.deepStrictEqual(policy.state, { withholding: false, messages: 0, limitReleased: 3 }, "released: nothing more is counted")

    const released = new ConfirmationPolicy(true, true, 2)
    released.read()
    released.release()
    assert.deepStrictEqual(released.state, { withholding: false, messages: 0, limitReleased: undefined }, "a release ends it, not the limit")

    const plain = new ConfirmationPolicy(true)
    plain.read()
    assert.deepStrictEqual(plain.state, { withholding: false, messages: 0, limitReleased: undefined })
  })
})
