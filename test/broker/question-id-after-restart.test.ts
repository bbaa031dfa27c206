/**
 * After a durable broker's restart a child's saved question keeps its edge (restored from the store, Router.restore)
 * while `waiters` and `asking` start empty until the child asks again (C-DQ-6); an ordinary ask under the question's
 * id is refused E_MESSAGE_ID_REUSE all the same (review revcf, item R4, probe 4): Questions.ts's stage reads the
 * questions' open edges too. Before the fix it was delivered and its edge replaced the question's. On a durable
 * broker (memory disk) with a memory question store, crashed and started again over both. Time passes on the
 * TestClock only as modelled: the store's lazy flush (`LAZY_FLUSH`), so the question's edge is stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1 } from "../../src/protocol/features.ts"
import { message, send } from "../support/broker.ts"
import { questionAsked, storeEdgeAndCrash, supervisorBack } from "../support/questionRestart.ts"

describe("a saved question's id after a broker restart, before the child asks again", () => {
  it.effect("the child's ordinary ask under it is refused E_MESSAGE_ID_REUSE", () =>
    Effect.gen(function*() {
      const world = yield* questionAsked
      assert.strictEqual(world.asked.type, "question_result")
      yield* storeEdgeAndCrash(world) // the question's edge is stored

      const second = yield* world.start()
      assert.strictEqual((yield* second.core.stats).asks, 1, "setup: the question's edge was not restored")
      yield* supervisorBack(world)
      const { childFrame, net } = world
      const again = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
      const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [GROUPS_V1], group: "run-1" } })

      const ask = { ...message("left or right?", { expectsReply: true }), id: "q-1" }
      const verdict = yield* send(again.client, "bob", ask)
      yield* bob.client.roundTrip
      assert.strictEqual(
        verdict.type === "delivery_failed" ? verdict.code : verdict.type,
        "E_MESSAGE_ID_REUSE",
        "the ask under the saved question's id was delivered (its edge replaced the restored question's)"
      )
    }))
})
