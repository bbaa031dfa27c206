/**
 * Scripted scenarios with the `Simulation` DSL: the real broker, clients and
 * session runtimes in one process, under TestClock, each read like the
 * scenario it checks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { Simulation, type SimReport } from "../../src/testing/Simulation.ts"
import { runSimulation } from "../../src/testing/Workload.ts"

const manual = { mode: "manual" } as const

/** Fails the test with the run's trace when an invariant broke. */
const assertClean = (report: SimReport) => {
  assert.isTrue(report.ok, `invariants broke:\n${report.trace.join("\n")}`)
}

const errorTag = <A, E>(exit: Exit.Exit<A, E>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  const error: unknown = exit.cause.reasons[0]?._tag === "Fail" ? exit.cause.reasons[0].error : undefined
  return typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
    ? error._tag
    : "not a typed failure"
}

describe("Simulation scenarios", () => {
  it.effect("A asks B; B answers after 2 s; A's ask returns the answer", () =>
    Effect.gen(function*() {
      let replied = ""
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", { name: "B", agent: manual }] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const b = sim.session("B")
          const question = yield* a.ask("B", "Retry POST too?")
          yield* sim.advance("2 seconds")
          const inbox = yield* b.inbox
          assert.deepStrictEqual(inbox.map((inbound) => [inbound.intent, inbound.expectsReply]), [["trigger", true]])
          yield* b.reply("Only GET/PUT/DELETE — never POST.")
          const exit = yield* question!.result()
          assert.isTrue(Exit.isSuccess(exit))
          if (Exit.isSuccess(exit) && exit.value._tag === "Replied") replied = exit.value.reply.content.text
        })
      )
      assertClean(report)
      assert.strictEqual(replied, "Only GET/PUT/DELETE — never POST.")
      assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 })
      assert.strictEqual(report.messages.delivered, 2)
    }))

  it.effect("A asks B; B's agent answers with a failure reply: A's ask ends as ReplyFailed and the ledger counts it as answered", () =>
    Effect.gen(function*() {
      let failure = ""
      const report = yield* runSimulation(
        {
          seed: 5,
          sessions: ["A", { name: "B", agent: { mode: "auto", replyProbability: 1, replyErrorProbability: 1, replyDelayMs: [0, 1000] } }]
        },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const question = yield* sim.session("A").ask("B", "migrate the schema")
          yield* sim.advance("2 seconds")
          const exit = yield* question!.result()
          assert.strictEqual(errorTag(exit), "ReplyFailed")
          if (Exit.isFailure(exit) && exit.cause.reasons[0]?._tag === "Fail") failure = String(exit.cause.reasons[0].error)
        })
      )
      assertClean(report)
      assert.include(failure, "cannot do migrate the schema")
      assert.deepStrictEqual(report.asks, { started: 1, replied: 1, timedOut: 0, failed: 0, answeredElsewhere: 0, interrupted: 0 })
    }))

  it.effect("memory mode: A asks B; B is busy for 3 s; the broker restarts: A's ask ends at the reconnect (the broker's state epoch changed), and the new broker refuses B's orphaned reply", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 2, sessions: ["A", { name: "B", agent: manual }], session: { askTimeoutMs: 30_000 }, durability: "memory" },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const b = sim.session("B")
          const question = yield* a.ask("B", "Retry POST too?")
          yield* b.busyFor("3 seconds")
          yield* sim.broker.restart
          yield* sim.advance("2 seconds") // both clients reconnect to the new broker
          // The new broker's state epoch differs (state-epoch-v1): A's wait ended at its reconnect, before any timeout.
          const exit = yield* question!.result()
          assert.strictEqual(errorTag(exit), "BrokerStateLost")
          const reply = yield* b.reply("Only GET")
          // The restarted broker has no ask edge for the question (its state was in memory): it refuses the reply
          // as answering no open ask, which the session reports as the ask no longer open (helper turnexp).
          assert.strictEqual(errorTag(yield* reply!.result()), "AskNoLongerOpen")
        })
      )
      assertClean(report)
      assert.isTrue(report.trace.some((line) => line.includes("broker #2 started")))
      assert.isTrue(report.trace.some((line) => /3\.\d+s +A ask1 ended: BrokerStateLost/.test(line)))
      assert.deepStrictEqual([report.asks.started, report.asks.timedOut], [1, 0])
    }))

  it.effect("a message to a stopped session is queued, and delivered once it starts again", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 3, sessions: ["A", "B"] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const b = sim.session("B")
          yield* b.stop
          const sent = yield* a.send("B", "for later")
          const exit = yield* sent!.result()
          assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Sent" && exit.value.delivery === "queued")
          yield* b.start
          yield* sim.advance("1 second")
          assert.deepStrictEqual((yield* b.inbox).map((inbound) => inbound.message.content.text), ["for later"])
        })
      )
      assertClean(report)
      assert.strictEqual(report.messages.delivered, 1)
    }))

  it.effect("a receiver that stops reading and then drops gets what was in flight on its next connection (received-v1)", () =>
    Effect.gen(function*() {
      const script = Effect.gen(function*() {
        const sim = yield* Simulation
        const a = sim.session("A")
        const b = sim.session("B")
        yield* b.stall("client")
        const sent = yield* a.send("B", "into the void?")
        const exit = yield* sent!.result()
        // The broker wrote it to B's connection: that is all `socket_delivered` promises.
        assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Sent" && exit.value.delivery === "socket_delivered")
        yield* b.drop("client")
        yield* sim.advance("5 seconds")
      })
      // B's client never confirmed reading it, so the broker sent it again on B's next connection.
      const config = { seed: 4, sessions: ["A", "B"], strictInFlight: true }
      const report = yield* runSimulation(config, script)
      assertClean(report)
      assert.deepStrictEqual(
        [report.messages.acknowledged, report.messages.delivered, report.messages.lostInFlight],
        [1, 1, 0]
      )
    }))

  it.effect("pi scopes are isolation boundaries: a session cannot reach or list another scope's", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 5, sessions: [{ name: "A", scopeId: "alpha" }, { name: "B", scopeId: "beta" }, { name: "C", scopeId: "alpha" }] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const across = yield* a.send("B", "hello, other scope")
          assert.strictEqual(errorTag(yield* across!.result()), "NotDelivered")
          const list = yield* a.list
          const exit = yield* list!.result()
          assert.isTrue(Exit.isSuccess(exit))
          if (Exit.isSuccess(exit)) assert.deepStrictEqual(exit.value.sessions.map((session) => session.name).sort(), ["A", "C"])
          const within = yield* a.send("C", "hello, same scope")
          assert.isTrue(Exit.isSuccess(yield* within!.result()))
        })
      )
      assertClean(report)
      assert.strictEqual(report.messages.delivered, 1)
    }))

  it.effect("replacing B's generation during A's ask: the new generation gets the question, the old one never answers", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 6, sessions: ["A", { name: "B", agent: manual }] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const b = sim.session("B")
          yield* b.stall("client")
          const question = yield* a.ask("B", "still there?", { timeout: "10 seconds" })
          yield* b.replaceGeneration
          yield* b.resume("client")
          yield* sim.advance("1 second")
          assert.deepStrictEqual((yield* b.inbox).map((inbound) => inbound.message.content.text), ["still there?"])
          yield* b.reply("yes")
          const exit = yield* question!.result()
          assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Replied")
        })
      )
      assertClean(report)
    }))

  it.effect("a killed session comes back with the same id; mail queued meanwhile reaches it, nothing leaks", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 7, sessions: ["A", "B", "C"] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const b = sim.session("B")
          yield* b.kill
          yield* sim.session("A").send("B", "one")
          yield* sim.session("C").send("B", "two")
          yield* sim.advance("1 second")
          yield* b.start
          yield* sim.advance("1 second")
          assert.deepStrictEqual((yield* b.inbox).map((inbound) => inbound.message.content.text), ["one", "two"])
        })
      )
      assertClean(report)
      assert.isFalse(report.violations.some((violation) => violation.kind === "fiber-leak"))
    }))

  it.effect("a slow consumer backpressures its senders instead of losing their messages", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 8, sessions: ["A", "B", "C"], broker: { outboxCapacity: 2 }, linkCapacity: 1 },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const b = sim.session("B")
          // Shorter than the send timeout and the liveness probe's window: only backpressure.
          yield* b.stall("client", "4 seconds")
          const sends = []
          for (let i = 1; i <= 8; i++) sends.push(yield* a.send("B", `burst ${i}`))
          yield* sim.advance("10 seconds")
          for (const send of sends) assert.isTrue(Exit.isSuccess(yield* send!.result()))
          assert.deepStrictEqual(
            (yield* b.inbox).map((inbound) => inbound.message.content.text),
            Array.from({ length: 8 }, (_, i) => `burst ${i + 1}`)
          )
        })
      )
      assertClean(report)
      assert.strictEqual(report.messages.delivered, 8)
    }))
})
