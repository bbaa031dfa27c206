/**
 * Superseded mail waiting in the mailbox (found by helper cpcopy): c's m0,
 * taken by P49's other holder b-1 of c's identity, given back unconfirmed
 * when b-1 dropped, waits in the mailbox for c while its route names b-1, live
 * again (e holds the identity too, so b-1's return takes nothing). d sends m1
 * to b with `supersedes: m0`: b-1 is told m0 is superseded and gets m1 — and
 * the copy leaves the mailbox, so c's return is not given m0 live (it was,
 * with no control). The copy is told by the mark b-1's read left on that
 * very mail object (MailDelivery.superseded, WithdrawnCopies.readBy), never
 * by its key alone: taking it out by the key lost a later message under a
 * reused id (reviews revcc item 1, revcg CG1:
 * superseded-later-reused-id.test.ts, superseded-copy-reused-id.test.ts).
 * The world is test/support/withdrawnCopyLeft.ts's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { custodyFeatures, messagesAndControls } from "../support/controlWorld.ts"
import { copyLeftWorld } from "../support/withdrawnCopyLeft.ts"

describe("a message superseded while a copy of it waits in the mailbox for its session", () => {
  it.effect("b-1 gets the supersede and m1; c's return is given no m0", () =>
    Effect.gen(function*() {
      const w = yield* copyLeftWorld({})
      w.closeAbandoned(w.reg("c", {}))
      const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      const m0 = message("m0")
      w.send("c", m0)
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1)), [`message ${m0.id}`], "b-1 did not take m0")
      // e holds the identity (registered while b-1 is live: it takes nothing), so b-1's return takes nothing.
      w.reg("e", {})
      w.closeAbandoned(b1)
      const b1Back = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
      assert.deepStrictEqual(messagesAndControls(w.framesOf(b1Back)), [], "b-1's return took m0: the test sets up nothing")
      const m1 = message("m1", { supersedes: m0.id })
      w.send("b", m1)
      assert.deepStrictEqual(
        messagesAndControls(w.framesOf(b1Back)),
        [`supersede ${m0.id}`, `message ${m1.id}`],
        "b-1 was not told of the supersede before m1"
      )
      assert.notInclude(messagesAndControls(w.framesOf(w.reg("c", {}))), `message ${m0.id}`, "c's return was given the superseded m0")
    }))
})
