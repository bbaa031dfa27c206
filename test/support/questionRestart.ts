/**
 * The durable question restart set-up on the in-memory network: a durable broker over one simulated mail disk and one
 * memory question store that outlive it, at START on the TestClock; the supervisor authorized over the child
 * `worker` (group run-1, or the supervisor's namespace: `questionAskedIn`), the child asking q-1 and the supervisor
 * notified; then the question's edge stored, a crash, and the supervisor back on the next broker. Shared by
 * question-settled-two-edges, question-settled-restored-edge, question-reply-base-saved, question-reply-queued-saved,
 * question-reply-without-notice and question-id-after-restart tests; `askedAgainAfterRestart` and `readQuestion` by
 * the two question-reply-*-saved tests.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { messageFor } from "./broker.ts"
import { durableBroker } from "./durable.ts"
import { advance, memoryNetwork } from "./memory.ts"
import { FEATURES, questionAsk, START, SUP, TOKEN } from "./questionWorld.ts"
import type { WireClient } from "./wire.ts"

/**
 * The first broker up, the supervisor authorized and the child (`childFrame`: in `group`, or in the supervisor's own
 * namespace when undefined; bound to the supervisor) asking q-1; `asked` is the broker's answer to the ask, and the
 * supervisor has been sent q-1. `start` starts a broker on the same disk and question store; `first` is the running
 * one (to crash).
 */
export const questionAskedIn = (group: string | undefined) => Effect.gen(function*() {
  yield* TestClock.setTime(START)
  const net = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const questions = makeMemoryState()
  const start = () => Effect.provideService(durableBroker(net, disk), QuestionStore, makeMemory(questions))
  const first = yield* start()
  const supervisor = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
  yield* supervisor.client.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
  const { capability } = yield* supervisor.client.next("supervisor_authorized")
  const childFrame = { features: FEATURES, ...(group === undefined ? {} : { group }), capability, supervisorSessionId: SUP }
  const child = yield* net.session({ sessionId: "child-worker", name: "worker", frame: childFrame })
  yield* child.client.send(questionAsk)
  const asked = yield* child.client.next(["question_result", "question_failed"], (frame) => frame.requestId === questionAsk.requestId)
  yield* messageFor(supervisor.client, "q-1")
  return { net, disk, questions, start, first, supervisor, capability, childFrame, child, asked }
})

/** `questionAskedIn` with the child in group run-1. */
export const questionAsked = questionAskedIn("run-1")

/** What `questionAsked` gives. */
export type QuestionAsked = Effect.Success<typeof questionAsked>

/** The store writer's lazy flush passes, so q-1's edge is stored (checked), and the first broker crashes. */
export const storeEdgeAndCrash = (world: QuestionAsked) =>
  Effect.gen(function*() {
    yield* advance(LAZY_FLUSH)
    assert.strictEqual(world.disk.edges.size, 1, "setup: the question's edge is not stored")
    yield* world.first.crash
  })

/** The supervisor registers again (on the broker now up) and its authorization over the child is restored. */
export const supervisorBack = (world: QuestionAsked) =>
  Effect.gen(function*() {
    const back = yield* world.net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })
    yield* back.client.send({ type: "authorize_supervisor", requestId: "restore", childName: "worker", capability: world.capability })
    yield* back.client.next("supervisor_authorized")
    return back
  })

/**
 * The broker started again, the supervisor back (`back`, `supervisorBack`) and the child registered again (`again`)
 * asking q-1 again (C-DQ-6, request r-2), its answer a `question_result` (checked): an answered question is pushed to
 * it, one still waiting is notified to `back`.
 */
export const askedAgainAfterRestart = (world: QuestionAsked) =>
  Effect.gen(function*() {
    yield* world.start()
    const back = (yield* supervisorBack(world)).client
    const again = (yield* world.net.session({ sessionId: "child-worker", name: "worker", frame: world.childFrame })).client
    yield* again.send({ ...questionAsk, requestId: "r-2" })
    const answer = yield* again.next(["question_result", "question_failed"], (frame) => frame.requestId === "r-2")
    assert.strictEqual(answer.type, "question_result")
    return { back, again }
  })

/** The state and answer of `q-1` as `client`'s `question_get` (request `requestId`) reads it, through the question fiber. */
export const readQuestion = (client: WireClient, requestId: string) =>
  Effect.gen(function*() {
    yield* client.send({ type: "question_get", requestId, questionId: "q-1" })
    const frame = yield* client.next(["question_result", "question_failed"], (f) => f.requestId === requestId)
    assert.strictEqual(frame.type, "question_result", `question_get ${requestId} failed`)
    const question = frame.type === "question_result" ? frame.question : undefined
    return { state: question?.state, answer: question?.answer }
  })
