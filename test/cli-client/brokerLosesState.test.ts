/**
 * `intercom ask` across a broker restart that loses the broker's state
 * (`state-epoch-v1`), with real processes and sockets: the asked session
 * registers again with the new broker within the rejoin grace, so only the
 * broker's state epoch tells the two apart.
 *
 * - A memory-mode broker restarted has a new epoch: it never heard of the
 *   question (a reply would be refused, no ask pending), and the ask ends
 *   promptly with "The broker restarted without its saved state; …", well
 *   before the grace is over, let alone its timeout.
 * - A durable broker restarted over the same database keeps its epoch and
 *   its ask edge: the ask keeps waiting and takes the reply.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Scope } from "effect"
import type { TestBrokerOptions } from "../support/broker.ts"
import { message, send, withBroker } from "../support/broker.ts"
import { type Agent, makeAgent, spawnCli } from "./support.ts"

/** The ask's timeout: far past the reconnect (about a second) and the 10 s grace. */
const ASK_TIMEOUT_S = 40
/** Ending before this is ending on the state loss, not on the grace's check (10 s) or the timeout. */
const BEFORE_GRACE_MS = 8_000

/** A broker at `agent`'s socket with `planner` registered, in a Scope of its own (closing it stops both). */
const brokerWithPlanner = (agent: Agent, options: TestBrokerOptions) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const broker = yield* withBroker({ idleExit: null, ...options }, agent.agentDir).pipe(Scope.provide(scope))
    const planner = yield* broker.session({ sessionId: "planner-id", name: "planner" }).pipe(Scope.provide(scope))
    return { scope, planner }
  })

/** `intercom ask planner …`, once planner has the question: the ask, the planner and the question's id. */
const askPlanner = (agent: Agent, options: TestBrokerOptions) =>
  Effect.gen(function*() {
    const first = yield* brokerWithPlanner(agent, options)
    const ask = yield* spawnCli(agent, ["ask", "planner", "which", "port?", "--timeout", `${ASK_TIMEOUT_S}s`])
    const question = yield* first.planner.client.next("message", undefined, "20 seconds")
    return { ask, first, questionId: question.message.id }
  })

describe("cli ask vs a broker restart that loses its state (state-epoch-v1)", () => {
  it.live("memory mode: the ask ends promptly with the state loss, though its target is back", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const { ask, first } = yield* askPlanner(agent, { durability: "memory" })
      const stoppedAt = yield* Clock.currentTimeMillis
      yield* Scope.close(first.scope, Exit.void)
      // A new memory-mode broker, and planner back on it before the asker reconnects (its backoff is 1 s).
      const second = yield* brokerWithPlanner(agent, { durability: "memory" })
      yield* Effect.addFinalizer(() => Scope.close(second.scope, Exit.void))
      const outcome = yield* ask.waitExit("30 seconds")
      const elapsed = (yield* Clock.currentTimeMillis) - stoppedAt
      const stderr = ask.stderr()
      assert.strictEqual(outcome.code, 1, stderr)
      assert.include(stderr, "The broker restarted without its saved state; the question to planner (planner-id) was lost. Ask again.")
      assert.isBelow(elapsed, BEFORE_GRACE_MS, `ended ${elapsed} ms after the broker stopped: ${stderr}`)
    }), 60_000)

  it.live("durable mode: the restarted broker keeps its state; the ask keeps waiting and takes the reply", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const { ask, first, questionId } = yield* askPlanner(agent, {})
      yield* Scope.close(first.scope, Exit.void)
      const second = yield* brokerWithPlanner(agent, {})
      yield* Effect.addFinalizer(() => Scope.close(second.scope, Exit.void))
      // The asker is back (planner sees it join): its ask is the restored one, and planner answers it.
      const asker = yield* second.planner.client.next("session_joined", undefined, "20 seconds")
      const ack = yield* send(second.planner.client, asker.session.id, message("port 8080", { replyTo: questionId }))
      assert.strictEqual(ack.type, "delivered", JSON.stringify(ack))
      const outcome = yield* ask.waitExit("30 seconds")
      const stdout = ask.stdout()
      assert.strictEqual(outcome.code, 0, ask.stderr())
      assert.include(stdout, "port 8080")
    }), 60_000)
})
