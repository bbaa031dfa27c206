/**
 * `intercom watch` across a broker restart: the new broker's feed tells the
 * watch only of changes after it registered again, so the watch's client
 * reconciles with a session list once the rejoin grace (10 s) is over
 * (client/MembershipView.ts) and the watch prints what it missed, marked
 * `(while disconnected)`.
 *
 * Deterministic: the watch is stopped (SIGSTOP) while the first broker stops
 * and the second one starts with its sessions, so those registered before
 * the watch could reconnect; it reads its socket's end only once continued.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { withBroker } from "../support/broker.ts"
import { makeAgent, startWatch } from "./support.ts"

describe("intercom watch across a broker restart", () => {
  it.live("a session that ended while no broker ran gets [left], one that registered first with the new broker [joined]; one that came back neither", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const firstScope = yield* Scope.make()
      const first = yield* withBroker({}, agent.agentDir).pipe(Scope.provide(firstScope))
      // bee comes back to the new broker as the same process (same startedAt); sea does not come back.
      const bee = { sessionId: "bee-session", name: "bee", session: { startedAt: 1_000 } }
      yield* first.session(bee).pipe(Scope.provide(firstScope))
      yield* first.session({ sessionId: "sea-session", name: "sea" }).pipe(Scope.provide(firstScope))
      const watch = yield* startWatch(agent, "planner")
      assert.match(watch.stdout(), /Other sessions: .*bee/)
      assert.match(watch.stdout(), /Other sessions: .*sea/)

      yield* watch.kill("SIGSTOP")
      yield* Scope.close(firstScope, Exit.void) // the broker stops; bee's and sea's connections go with it
      const second = yield* withBroker({}, agent.agentDir)
      yield* second.session(bee)
      yield* second.session({ sessionId: "dee-session", name: "dee" })
      yield* watch.kill("SIGCONT")

      // The reconnect (about 1 s), then the 10 s grace, then the list.
      yield* watch.waitStdout(/\[joined\] dee .*\(while disconnected\)/, "40 seconds")
      yield* watch.endStdin
      const outcome = yield* watch.waitExit("30 seconds")
      // Read once the child closed: both pipes are drained.
      const stdout = watch.stdout()
      assert.strictEqual(outcome.code, 0, watch.stderr())
      const membership = stdout.split("\n").filter((line) => /^\[(left|joined|rejoined)\]/.test(line))
      assert.strictEqual(membership.length, 2, stdout)
      assert.match(membership[0] ?? "", /^\[left\] sea \(sea-sess\) \(while disconnected\)$/, stdout)
      assert.match(membership[1] ?? "", /^\[joined\] dee \(dee-sess\) · .* \(while disconnected\)$/, stdout)
    }), 90_000)
})
