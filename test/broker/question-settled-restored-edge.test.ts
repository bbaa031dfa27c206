/**
 * A durable question settled by id — `question_answer` or `question_stop` — after a durable broker's restart, while
 * its child has not asked again: its edge was restored at the start with no child waiting and no notice, and closes
 * by the question's id (`Questions.close`, `edgeKeys`; review revfixqs2 D2). A later reply along it gets what a reply
 * to a question settled while its child waited gets (the first case, for comparison): refused as a late reply, no
 * ask edge open, the supervisor's send to a child of another group is refused `E_CROSS_GROUP`. Before, the edge stayed open and the reply was refused `E_DELIVERY_FAILED`, retryable, told the question
 * still waits. On brokers over the in-memory network with a memory question store; time passes on the TestClock only
 * as modelled: the store writer's lazy flush (`LAZY_FLUSH`), so the question's edge is stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message, messageFor, send } from "../support/broker.ts"
import { patientClock } from "../support/memory.ts"
import { questionAsked, storeEdgeAndCrash, supervisorBack } from "../support/questionRestart.ts"
import { FEATURES, questionAsk, questionWorldOf } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** The code of a send's acknowledgement, or its type when it is not a failure. */
const codeOf = (ack: { readonly type: string; readonly code?: string }) => ack.type === "delivery_failed" ? ack.code : ack.type

/** What a reply along no open edge gets: the supervisor's send to its child, of another group, with no ask to answer. */
const LATE = "E_CROSS_GROUP"

const settle = (settled: "answered by id" | "stopped") =>
  settled === "stopped"
    ? { type: "question_stop", requestId: "a-1", questionId: "q-1" }
    : { type: "question_answer", requestId: "a-1", questionId: "q-1", text: "go left" }

describe("a reply to a durable question settled by id", () => {
  for (const settled of ["answered by id", "stopped"] as const) {
    it.effect(`${settled} while its child waited: refused ${LATE}, as a late reply (the comparison)`, () =>
      patientClock(Effect.gen(function*() {
        const { child, supervisor } = yield* questionWorldOf(FEATURES)
        yield* child.send(questionAsk)
        yield* answerTo(child, questionAsk.requestId)
        yield* messageFor(supervisor, "q-1")
        yield* supervisor.send(settle(settled))
        assert.strictEqual((yield* answerTo(supervisor, "a-1")).type, "question_result")
        const ack = yield* send(supervisor, "child-worker", message("go left", { replyTo: "q-1" }))
        assert.strictEqual(codeOf(ack), LATE)
      })))

    it.effect(`${settled} after a durable restart, before its child asks again: its restored edge closed, refused ${LATE} too`, () =>
      Effect.gen(function*() {
        const world = yield* questionAsked
        yield* storeEdgeAndCrash(world)
        yield* world.start()
        const back = yield* supervisorBack(world)
        const { childFrame, net } = world
        const again = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
        yield* again.client.roundTrip
        yield* back.client.send(settle(settled))
        assert.strictEqual((yield* answerTo(back.client, "a-1")).type, "question_result", `setup: the question was not ${settled}`)
        const ack = yield* send(back.client, "child-worker", message("go left", { replyTo: "q-1" }))
        assert.strictEqual(codeOf(ack), LATE, ack.type === "delivery_failed" ? ack.reason : "")
      }))
  }
})
