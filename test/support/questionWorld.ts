/**
 * A supervisor, its bound child (`worker`) and a peer `bob` in the child's group, on a durable broker over the
 * in-memory network with a memory question store (its question fiber running), at START on the TestClock: the world
 * of the one-id-per-message tests (question-id-*.test.ts) and, its supervisor granted more, of the question size
 * check (question-size-check.test.ts).
 */
import { Deferred, Effect, Ref } from "effect"
import { TestClock } from "effect/testing"
import { GROUPS_V1, QUESTIONS_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore, type QuestionStoreService } from "../../src/store/QuestionStore.ts"
import { durableBroker } from "./durable.ts"
import { memoryNetwork, settle } from "./memory.ts"

/** Where the TestClock starts. */
export const START = 1_000_000_000
/** What each session of the world is granted (the supervisor's unless told otherwise). */
export const FEATURES = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1]
/** The supervisor's session id: the owner of the child's questions. */
export const SUP = "sup-0001"
/** The supervisor's owner token: a new connection of it registers with it. */
export const TOKEN = "owner-token-of-the-supervisor"

/** The child's `question_ask` of question `q-1` (request `r-1`). */
export const questionAsk = { type: "question_ask", requestId: "r-1", questionId: "q-1", reason: "need_decision", text: "Which way?" }

/**
 * The world, its supervisor granted `supervisorFeatures` (the child and bob as ever); the child registers with
 * `childCwd` when given (a long one makes its notification, which carries its session, longer than the frames that
 * carry the question and its answer back); the broker's question store is `store` of the memory one when given (one
 * whose operations the test holds, say).
 */
export const questionWorldOf = (
  supervisorFeatures: ReadonlyArray<string> = FEATURES,
  childCwd?: string,
  store: (memory: QuestionStoreService) => QuestionStoreService = (memory) => memory
) => Effect.gen(function*() {
  yield* TestClock.setTime(START)
  const net = yield* memoryNetwork()
  const questions = makeMemoryState()
  const broker = yield* Effect.provideService(durableBroker(net, makeMemoryMailState()), QuestionStore, store(makeMemory(questions)))
  const supervisor = yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: supervisorFeatures, ownerToken: TOKEN } })
  yield* supervisor.client.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
  const { capability } = yield* supervisor.client.next("supervisor_authorized")
  const child = yield* net.session({
    sessionId: "child-worker",
    name: "worker",
    ...(childCwd === undefined ? {} : { cwd: childCwd }),
    frame: { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
  })
  const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [GROUPS_V1], group: "run-1" } })
  return { net, broker, questions, capability, supervisor: supervisor.client, child: child.client, bob: bob.client }
})

/** The world: the network, the broker, the question store's state, the child's capability, and the three clients. */
export const questionWorld = questionWorldOf()

/**
 * A question store (`wrap` of the memory one, for `questionWorldOf`) whose first `list` waits until `release`: a
 * `question_list` then holds the question fiber there, so what a test does next is handled by the Router alone, and
 * the fiber takes its items in order once released.
 */
export const holdFirstList = Effect.gen(function*() {
  const gate = yield* Deferred.make<void>()
  const armed = yield* Ref.make(true)
  const wrap = (memory: QuestionStoreService): QuestionStoreService => ({
    ...memory,
    list: (ownerId, page) =>
      Ref.getAndSet(armed, false).pipe(
        Effect.flatMap((hold) => hold ? Deferred.await(gate) : Effect.void),
        Effect.andThen(memory.list(ownerId, page))
      )
  })
  return { wrap, release: settle(Deferred.succeed(gate, undefined), "the held question_list's release") }
})
