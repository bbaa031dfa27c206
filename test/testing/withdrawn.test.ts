/**
 * The ledger's `withdrawn` excuse for a question whose ask ended unanswered
 * (ledger/fates.ts, `wentBack`): it holds only when a connection the question
 * was queued to ended with the question still in it — not because some
 * connection of its target happened to end later.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Duration, Effect, Exit } from "effect"
import { Simulation, type SimReport } from "../../src/testing/Simulation.ts"
import type { BrokerOutputFault } from "../../src/testing/SimLink.ts"
import { runSimulation } from "../../src/testing/Workload.ts"

const manual = { mode: "manual" } as const

const trace = (report: SimReport): string => report.trace.join("\n")

/** A broken broker: never writes the `message` frame whose text includes `text` (the asker was told it was delivered). */
const dropMessageSaying = (text: string) => (): BrokerOutputFault => (_link, frames) =>
  frames.filter((frame) => !(frame.startsWith(`{"type":"message"`) && frame.includes(text)))

/**
 * A asks B; 2 s later the person cancels it (its client withdraws the question, `cancel_ask`, long before the
 * ask's own deadline), and A sends B a plain message; B's connection drops `endAfter` later.
 */
const askCancelSend = (endAfter: Duration.Input) =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    const a = sim.session("A")
    const b = sim.session("B")
    const question = yield* a.ask("B", "which schema?", { timeout: "10 minutes" })
    yield* sim.advance("2 seconds")
    yield* a.cancelAsks
    const exit = yield* question!.result("1 second")
    assert.isTrue(Exit.isFailure(exit), "the ask was answered")
    yield* a.send("B", "never mind")
    yield* sim.advance(endAfter)
    yield* b.drop("client")
  })

describe("a withdrawn question is excused only where it went back", () => {
  it.effect("a broker that loses a question on a live connection is caught, though that connection ends 30 s later", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", { name: "B", agent: manual }], durability: "memory", brokerFault: dropMessageSaying("which schema?") },
        askCancelSend("30 seconds")
      )
      const kinds = report.violations.map((violation) => violation.kind)
      assert.deepStrictEqual(kinds, ["silent-loss"], trace(report))
      assert.include(report.violations[0]?.message ?? "", "ask A → B", trace(report))
      assert.strictEqual(report.messages.withdrawn, 0, trace(report))
    }))

  it.effect("a question that sat in a non-reading client's outbox, its connection ending after the ask ended, is withdrawn", () =>
    Effect.gen(function*() {
      // One frame per direction: with B's client not reading, its reader holds "first", "second" fills the link
      // and "third" waits to get in; the question waits behind them in the broker's output, unwritten (the
      // ledger saw it handed to no connection), and A's later message behind it.
      // The drop 5 s after the ask was withdrawn takes them back: the question is dropped (its ask is over),
      // the rest go to B's next connection.
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", { name: "B", agent: manual }], durability: "memory", linkCapacity: 1 },
        Effect.gen(function*() {
          const sim = yield* Simulation
          yield* sim.session("B").stall("client")
          yield* sim.session("A").send("B", "first")
          yield* sim.session("A").send("B", "second")
          yield* sim.session("A").send("B", "third")
          yield* askCancelSend("5 seconds")
        })
      )
      assert.deepStrictEqual(report.violations, [], trace(report))
      assert.strictEqual(report.messages.withdrawn, 1, trace(report))
      assert.strictEqual(report.messages.acknowledged, 5, trace(report))
    }))
})
