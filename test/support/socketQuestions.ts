/**
 * Durable questions over a real Unix socket across a broker restart: brokers run by `runBroker` (its default
 * durability, `intercom.db` in the intercom directory) on one temporary directory, each in a Scope of its own, and
 * the supervisor and its child `worker` (group run-1) registering on new connections. Shared by questions-restart
 * and question-reply-base-saved-restart tests.
 */
import { Effect, Scope } from "effect"
import { runBroker } from "../../src/broker/index.ts"
import { GROUPS_V1, QUESTIONS_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { brokerPaths, register, tempDir } from "./broker.ts"
import { connect, type WireClient } from "./wire.ts"

/** What the supervisor and the child are granted: groups, the supervisor channel and `questions-v1`. */
export const FEATURES = [GROUPS_V1, SUPERVISOR_V1, QUESTIONS_V1]
/** The supervisor's owner token: a new connection of it registers with it. */
export const TOKEN = "owner-token-of-the-supervisor"

/** `frame` sent on `client` as request `requestId`, and the broker's `question_result` or `question_failed` to it. */
export const request = (client: WireClient, requestId: string, frame: Readonly<Record<string, unknown>>) =>
  Effect.andThen(
    client.send({ ...frame, requestId }),
    client.next(["question_result", "question_failed"], (f) => f.requestId === requestId)
  )

/**
 * A temporary intercom directory: `start` runs a broker on it in a Scope of its own (close the Scope to stop it);
 * `supervisor` registers `sup-0001` with `features` on a new connection labelled `label`; `child` registers the
 * child bound to it with `capability`.
 */
export const socketQuestionWorld = Effect.gen(function*() {
  const root = yield* tempDir()
  const { intercomDir, socketPath } = brokerPaths(root)
  const start = Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* runBroker({ intercomDir, socketPath, idleExit: null }).pipe(Scope.provide(scope))
    return scope
  })
  const supervisor = (label: string, features: ReadonlyArray<string> = FEATURES) =>
    Effect.gen(function*() {
      const client = yield* connect(socketPath, label)
      yield* register(client, { sessionId: "sup-0001", name: "supervisor", frame: { features, ownerToken: TOKEN } })
      return client
    })
  const child = (label: string, capability: string) =>
    Effect.gen(function*() {
      const client = yield* connect(socketPath, label)
      yield* register(client, {
        sessionId: "child-worker",
        name: "worker",
        frame: { features: FEATURES, group: "run-1", capability, supervisorSessionId: "sup-0001" }
      })
      return client
    })
  return { intercomDir, start, supervisor, child }
})
