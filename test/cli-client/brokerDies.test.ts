/**
 * `intercom ask` when its broker stops mid-wait and the asked session goes
 * with it (C-ASK-2, C-ASK-9): the client reconnects to a broker it spawns
 * afresh, which never knew the target, so no `session_left` comes. The ask
 * ends once the rejoin grace (10 s) is over, not at its timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Scope } from "effect"
import { withBroker } from "../support/broker.ts"
import { makeAgent, spawnCli } from "./support.ts"

/** The ask's timeout: far past the reconnect (about a second, plus a broker spawn) and the 10 s grace. */
const ASK_TIMEOUT_S = 45
/** Ending before this is ending on the reconnect check, with a generous margin for a loaded machine. */
const WELL_BEFORE_MS = 35_000

describe("cli ask vs a dying broker (C-ASK-2, C-ASK-9)", () => {
  it.live("an ask whose broker and target are gone ends after the rejoin grace, not at its timeout", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const brokerScope = yield* Scope.make()
      const broker = yield* withBroker({}, agent.agentDir).pipe(Scope.provide(brokerScope))
      const planner = yield* broker.session({ sessionId: "planner-id", name: "planner" }).pipe(
        Scope.provide(brokerScope)
      )
      const ask = yield* spawnCli(agent, ["ask", "planner", "are", "you", "there", "--timeout", `${ASK_TIMEOUT_S}s`])
      yield* planner.client.next("message", undefined, "20 seconds")
      const stoppedAt = yield* Clock.currentTimeMillis
      yield* Scope.close(brokerScope, Exit.void) // the broker stops; planner is gone with it
      const outcome = yield* ask.waitExit("60 seconds")
      const elapsed = (yield* Clock.currentTimeMillis) - stoppedAt
      // Read once the child closed: both pipes are drained.
      const stderr = ask.stderr()
      assert.strictEqual(outcome.code, 1, stderr)
      assert.include(stderr, "Reply peer disconnected before answering: planner-id (not on the broker after a reconnect)")
      assert.isBelow(elapsed, WELL_BEFORE_MS, `ended ${elapsed} ms after the broker stopped: ${stderr}`)
    }), 90_000)
})
