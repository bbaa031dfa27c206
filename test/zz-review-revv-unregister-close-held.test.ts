/**
 * Review revv probe (V2): IntercomClient's orderly close is `unregister`,
 * then the connection's close (IntercomClient.ts: closing the client runs
 * `disconnect`), and a client given no `instanceId` makes a random one per
 * client (ConnectionLifetime.ts): that instance never registers again. A
 * control kept for it at its `unregister` (helper unregctl) can reach
 * nobody, yet holds a memory broker's idle exit for the mailbox retention
 * (a day by default). Before unregctl nothing was kept there.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

describe("review revv: a control kept at an orderly close (unregister, then the connection closes)", () => {
  it.effect("nothing is held for an instance that unregistered and closed its connection", () =>
    Effect.gen(function*() {
      const w = yield* world(custodyFeatures, { mailboxRetention: 86_400_000 })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
      assert.strictEqual(w.b1.custody?.size, 0, "b-1 did not confirm m0: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b1), [`cancel ${m0.id}`], "b-1 was not written the control")
      assert.strictEqual(w.router.heldMail(), undefined, "something is held already: the test sets up nothing")
      w.batch(w.b1, [{ type: "unregister" }])
      w.closeAbandoned(w.b1)
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0)
    }))
})
