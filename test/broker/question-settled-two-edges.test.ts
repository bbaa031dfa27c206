/**
 * A question with two open edges under its id, settled by id, closes both (`Questions.close`, `edgeKeys`: every
 * edge's key under the question id; review rrsq probe 2). A durable question's edge is restored at a restart under its
 * child's session key (group run-1); the child registers again in another group (run-2: another session key) and
 * asks the question again, so it is notified again on a second edge under the new key. The supervisor answers by id
 * (or stops it): both edges close, and neither stays stored. With the run-2 child gone and the child back in run-1 (the restored
 * edge's key), the supervisor's reply to it along that edge gets what a reply to a question settled while its child
 * waited gets, `E_CROSS_GROUP` (test/broker/question-settled-restored-edge.test.ts). Before, only the waiter's edge
 * closed: the restored one stayed stored for its 30 days, and the reply along it was refused `E_DELIVERY_FAILED`,
 * retryable, told the question still waits.
 * On brokers over the in-memory network with a memory question store; time passes on the TestClock only as
 * modelled: the store writer's lazy flush (`LAZY_FLUSH`), so the edges' opening and closing are stored.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance } from "../support/memory.ts"
import { questionAsked, storeEdgeAndCrash, supervisorBack } from "../support/questionRestart.ts"
import { questionAsk } from "../support/questionWorld.ts"
import type { WireClient } from "../support/wire.ts"

const answerTo = (client: WireClient, requestId: string) =>
  client.next(["question_result", "question_failed"], (frame) => frame.requestId === requestId)

/** Codes a send's acknowledgement: its code when it failed, else its type. */
const codeOf = (ack: { readonly type: string; readonly code?: string }) => ack.type === "delivery_failed" ? ack.code : ack.type

/** The frame that settles q-1 by id: `question_answer`, or `question_stop`. */
const settle = (settled: "answered" | "stopped") =>
  settled === "stopped"
    ? { type: "question_stop", requestId: "a-1", questionId: "q-1" }
    : { type: "question_answer", requestId: "a-1", questionId: "q-1", text: "go left" }

/**
 * The question q-1 asked by the child in group run-1, its edge stored, the broker crashed and started again, the
 * child back in group run-2 asking again and notified on a second edge, then settled by id (`settled`); the run-2
 * child leaves when `leave` (its session's Scope closes). The disk, the supervisor's connection and the network.
 */
const answeredWithTwoEdges = (leave: boolean, settled: "answered" | "stopped" = "answered") =>
  Effect.gen(function*() {
    const world = yield* questionAsked
    yield* storeEdgeAndCrash(world)
    yield* world.start()
    const back = yield* supervisorBack(world)
    const { childFrame, disk, net } = world
    const inRun2 = Effect.gen(function*() {
      const again = yield* net.session({ sessionId: "child-worker", name: "worker", frame: { ...childFrame, group: "run-2" } })
      yield* again.client.send({ ...questionAsk, requestId: "r-2" })
      const asked = yield* answerTo(again.client, "r-2")
      assert.strictEqual(asked.type, "question_result", `setup: the ask again was refused: ${JSON.stringify(asked)}`)
      yield* messageFor(back.client, "q-1")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.edges.size, 2, "setup: not two edges under q-1")
      yield* back.client.send(settle(settled))
      assert.strictEqual((yield* answerTo(back.client, "a-1")).type, "question_result", `setup: the question was not ${settled}`)
      yield* back.client.roundTrip
      return again
    })
    if (leave) yield* Effect.scoped(inRun2)
    else yield* inRun2
    yield* advance(LAZY_FLUSH)
    return { disk, back, net, childFrame }
  })

describe("a question settled by id with two edges under its id", () => {
  it.effect("no edge of the question stays stored once it is answered", () =>
    Effect.gen(function*() {
      const { disk } = yield* answeredWithTwoEdges(false)
      assert.deepStrictEqual([...disk.edges.keys()], [], "an edge of the answered question is still stored")
    }))

  it.effect("no edge of the question stays stored once it is stopped", () =>
    Effect.gen(function*() {
      const { disk } = yield* answeredWithTwoEdges(false, "stopped")
      assert.deepStrictEqual([...disk.edges.keys()], [], "an edge of the stopped question is still stored")
    }))

  it.effect("the supervisor's reply to the child back in run-1 gets the late reply's E_CROSS_GROUP, not a retryable refusal", () =>
    Effect.gen(function*() {
      const { back, net, childFrame } = yield* answeredWithTwoEdges(true)
      const home = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
      yield* home.client.roundTrip
      const ack = yield* send(back.client, "child-worker", message("go left", { replyTo: "q-1" }))
      assert.strictEqual(codeOf(ack), "E_CROSS_GROUP", ack.type === "delivery_failed" ? String(ack.reason) : "")
    }))
})
