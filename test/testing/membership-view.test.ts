/**
 * The simulation's `membership-view` check (simulation/membershipViews.ts):
 * the fold of a client's presence events over its first list, compared with
 * what a list shows at the end of a run; and a scripted run in which a
 * client's view is right only because its reconciliation after a reconnect
 * told it what the feed could not.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { MembershipFold } from "../../src/testing/simulation/membershipViews.ts"
import { Simulation } from "../../src/testing/Simulation.ts"
import { runSimulation } from "../../src/testing/Workload.ts"

const session = (id: string, startedAt = 1): SessionInfo => ({
  id,
  cwd: `/sim/${id}`,
  model: "sim-model",
  pid: 1,
  startedAt,
  lastActivity: startedAt,
  name: id,
  status: "idle"
})

const name = (id: string) => id.toUpperCase()

describe("MembershipFold", () => {
  it("folds joins and departures over the first list; a dropped Left would leave a session it names", () => {
    const fold = new MembershipFold()
    fold.read({ _tag: "Joined", session: session("b") }, 1)
    fold.listing()
    // c left while the list was in flight: the (older) answer still names it; the event wins.
    fold.read({ _tag: "Left", sessionId: "c" }, 2)
    fold.seed([session("self"), session("a"), session("c")], "self", 3)
    fold.read({ _tag: "Left", sessionId: "a" }, 4)
    fold.read({ _tag: "Joined", session: session("d") }, 5)
    assert.isTrue(fold.listed)
    assert.isUndefined(fold.compare([session("b"), session("d")], name))
    assert.strictEqual(
      fold.compare([session("a"), session("b")], name),
      "believes present D (last read: Joined at 5 ms); does not know of A (last read: Left at 4 ms)"
    )
  })

  it("a session registered again (a new startedAt) that the fold still holds as before is stale", () => {
    const fold = new MembershipFold()
    fold.listing()
    fold.seed([session("b", 1)], "self", 1)
    assert.strictEqual(
      fold.compare([session("b", 7)], name),
      "holds B (last read: listed at 1 ms) as started 1, name b, status idle, listed started 7, name b, status idle"
    )
    fold.read({ _tag: "Left", sessionId: "b", resync: true }, 8)
    fold.read({ _tag: "Joined", session: session("b", 7), resync: true }, 8)
    assert.isUndefined(fold.compare([session("b", 7)], name))
  })
})

describe("membership-view in a run", () => {
  it.effect("A is away while B restarts: only A's reconciliation after the grace tells it B is another registration, and the final check finds A's view right", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        // A dropped connection comes back after 4–6 s (jittered): long enough for B to stop and start meanwhile.
        { seed: 3, sessions: ["A", "B", "C"], client: { reconnectBaseMs: 5_000, reconnectMaxMs: 5_000 } },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const b = sim.session("B")
          yield* sim.advance("3 seconds")
          yield* a.drop("broker")
          yield* b.stop
          yield* b.start
          yield* sim.advance("30 seconds")
        })
      )
      const trace = report.trace.join("\n")
      assert.isTrue(report.ok, `invariants broke:\n${trace}`)
      // A was away for B's departure and return: it reconnected after B's new client did.
      const bBack = trace.indexOf("B connected: link", trace.indexOf("B client B/c2 started"))
      assert.isAbove(bBack, trace.indexOf("A's connection drops"))
      assert.isAbove(trace.indexOf("A connected: link", bBack), bBack)
    }))
})
