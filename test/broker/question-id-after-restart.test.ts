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
import { TestClock } from "effect/testing"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { GROUPS_V1, QUESTIONS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const FEATURES = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1]
const SUP = "sup-0001"
const TOKEN = "owner-token-of-the-supervisor"

describe("a saved question's id after a broker restart, before the child asks again", () => {
  it.effect("the child's ordinary ask under it is refused E_MESSAGE_ID_REUSE", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const net = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const questions = makeMemoryState()
      const start = () => Effect.provideService(durableBroker(net, disk), QuestionStore, makeMemory(questions))
      const first = yield* start()
      const supervisor = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* supervisor.client.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
      const { capability } = yield* supervisor.client.next("supervisor_authorized")
      const childFrame = { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
      const child = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
      yield* child.client.send({ type: "question_ask", requestId: "r-1", questionId: "q-1", reason: "need_decision", text: "Which way?" })
      assert.strictEqual((yield* child.client.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor.client, "q-1")
      yield* advance(LAZY_FLUSH) // the question's edge is stored
      assert.strictEqual(disk.edges.size, 1, "setup: the question's edge is not stored")
      yield* first.crash

      const second = yield* start()
      assert.strictEqual((yield* second.core.stats).asks, 1, "setup: the question's edge was not restored")
      const back = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
      yield* back.client.send({ type: "authorize_supervisor", requestId: "restore", childName: "worker", capability })
      yield* back.client.next("supervisor_authorized")
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
