/**
 * Hostile sessions in the simulation (src/testing/simulation/hostile.ts):
 * scripted attacks on a healthy pair, and hostile attacks mixed into random
 * workloads (`runWorkload(…, { hostile: true })`, `npm run sim -- --hostile`).
 *
 * The promise is the invariants: nothing a hostile session does may cost
 * the healthy sessions a message, an ask, or their connection. The scripted
 * attacks broke it before the fixes of issue "Hostile and oversized input
 * cannot hurt other sessions" (findings 1, 4 and 6); the random sweep
 * tolerates no violation but the known issues (`KNOWN_ISSUES`, which its
 * workloads with pressure reach too).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { type HostileAttack, Simulation, type SimReport } from "../../src/testing/Simulation.ts"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { type Op, runSimulation, runWorkload } from "../../src/testing/Workload.ts"
import { blockBudget, blocksOf } from "./sweep.ts"

const manual = { mode: "manual" } as const


/** Simulated ms from the first trace line that includes `from` to the first after it that includes `to`. */
const waitedMs = (trace: ReadonlyArray<string>, from: string, to: string): number | undefined => {
  const at = (line: string | undefined) => line === undefined ? undefined : Number(/^\s*(\d+\.\d+)s/.exec(line)?.[1]) * 1000
  const start = trace.findIndex((line) => line.includes(from))
  const startAt = at(trace[start])
  const endAt = at(trace.slice(start + 1).find((line) => line.includes(to)))
  return startAt === undefined || endAt === undefined ? undefined : Math.round(endAt - startAt)
}

const assertClean = (report: SimReport) => assert.isTrue(report.ok, `invariants broke:\n${report.trace.join("\n")}`)

/** A asks B (who answers only when told); `attacks` run while the ask is open; then B replies. */
const askUnderAttack = (seed: number, attacks: ReadonlyArray<HostileAttack>) =>
  Effect.gen(function*() {
    let replied = false
    const report = yield* runSimulation(
      { seed, sessions: ["A", { name: "B", agent: manual }], hostile: 2 },
      Effect.gen(function*() {
        const sim = yield* Simulation
        const question = yield* sim.session("A").ask("B", "Ship it?")
        yield* sim.advance("1 second")
        for (const attack of attacks) yield* sim.hostiles[0]?.attack(attack) ?? Effect.void
        yield* sim.advance("1 second")
        yield* sim.session("B").reply("Yes.")
        const exit = yield* question!.result()
        replied = Exit.isSuccess(exit) && exit.value._tag === "Replied"
      })
    )
    return { report, replied }
  })

describe("hostile sessions in the simulation", () => {
  it.effect("forged replies, foreign cancels, ask cancels and receipts change nothing for the healthy pair", () =>
    Effect.gen(function*() {
      const { replied, report } = yield* askUnderAttack(1, ["forged-reply", "foreign-control", "foreign-control", "foreign-control", "forged-reply"])
      assertClean(report)
      assert.isTrue(replied, "A's ask was not answered")
    }))

  it.effect("an ask under the id of a healthy session's open question does not take that question's ask (finding 4)", () =>
    Effect.gen(function*() {
      const { replied, report } = yield* askUnderAttack(2, ["collide-ask"])
      assertClean(report)
      assert.isTrue(replied, "A's ask was not answered")
    }))

  it.effect("presence that adds up past 1 MiB reaches nobody as an oversized frame (finding 1)", () =>
    Effect.gen(function*() {
      const { replied, report } = yield* askUnderAttack(3, ["oversized-presence"])
      assertClean(report)
      assert.isTrue(replied)
    }))

  it.effect("a registration that grows past 1 MiB on its way out reaches nobody (finding 1)", () =>
    Effect.gen(function*() {
      const { report } = yield* askUnderAttack(4, ["oversized-register"])
      assertClean(report)
    }))

  it.effect("a health request id that grows past 1 MiB is not echoed back whole (finding 6)", () =>
    Effect.gen(function*() {
      const { report } = yield* askUnderAttack(5, ["big-echo"])
      assertClean(report)
    }))

  it.effect("a hostile run replays exactly: the same trace for the same seed", () =>
    Effect.gen(function*() {
      const first = yield* runWorkload({ seed: 79 }, undefined, { hostile: true })
      const second = yield* runWorkload({ seed: 79 }, undefined, { hostile: true })
      assert.deepStrictEqual(second.trace, first.trace)
    }))

  it.effect("a session that sends its asker two messages at once makes both replies: the second, refused, is no ask-hijacked (seed 32, shrunk)", () =>
    Effect.gen(function*() {
      // C and B stop; A asks D; A's broker-side writes slow down and D floods A. D's session makes its
      // first two sends replies to A's ask: the broker takes the first (acknowledged only once A has read
      // it) and refuses the second (E_REPLY_TARGET), which the session sends again as a plain message.
      const ops: ReadonlyArray<Op> = [
        { _tag: "Stop", after: 0, session: 2 },
        { _tag: "Stop", after: 0, session: 1 },
        { _tag: "Ask", after: 0, from: 0, to: 3, timeoutMs: 19_000 },
        { _tag: "Flood", after: 887, from: 3, to: 1, count: 13, size: 3443, delayMs: 722 }
      ]
      const report = yield* runWorkload({ seed: 32 }, ops, { hostile: true })
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      assert.strictEqual(report.asks.replied, 1)
    }))

  it.effect("a reply the broker reads after its ask's edge expired (the replier's reader stalled) is no ask-hijacked: the asker ended at the same deadline (seed 4882, shrunk)", () =>
    Effect.gen(function*() {
      // D's broker-side reader stalls ~10 s just before A asks D with a 10 s timeout: D's reply reaches
      // the broker a few ms after the edge expired (brokerReceivedAt + askTimeoutMs) and is refused. Before
      // ask-expiry-v1 A still waited then, on its own timer from the acknowledgement; now A's wait ends at
      // the broker's deadline (the notice, or its round trip at its own deadline, the same millisecond here).
      const ops: ReadonlyArray<Op> = [
        { _tag: "Send", after: 476, from: 2, to: 0 },
        { _tag: "Ask", after: 1150, from: 0, to: 3, timeoutMs: 6000 },
        { _tag: "Ask", after: 1781, from: 3, to: 1, timeoutMs: 10000 },
        { _tag: "Ask", after: 1040, from: 2, to: 1, timeoutMs: 19000 },
        { _tag: "Send", after: 1773, from: 2, to: 1 },
        { _tag: "Ask", after: 1620, from: 2, to: 3, timeoutMs: 13000 },
        { _tag: "Send", after: 2358, from: 2, to: 1 },
        { _tag: "Stall", after: 0, session: 3, side: "broker", ms: 10074 },
        { _tag: "Ask", after: 68, from: 0, to: 3, timeoutMs: 10000 },
        { _tag: "Send", after: 582, from: 2, to: 0 },
        { _tag: "Send", after: 1863, from: 3, to: 0 },
        { _tag: "Send", after: 2212, from: 3, to: 0 },
        { _tag: "Storm", after: 496, connections: 2, holdMs: 2756, drops: [1] },
        { _tag: "Send", after: 1502, from: 3, to: 1 },
        { _tag: "Status", after: 483, session: 2, busy: true },
        { _tag: "List", after: 531, from: 0 },
        { _tag: "Send", after: 2339, from: 2, to: 3 }
      ]
      const report = yield* runWorkload({ seed: 4882 }, ops, { hostile: true })
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      // A's ask of D ends exactly its 10 s after it was sent, and D's reply, sent in time, was held up past it.
      assert.strictEqual(waitedMs(report.trace, "A ask D \"question 9 A→D\"", "A ask5 ended: ReplyTimeout"), 10_000, report.trace.join("\n"))
      assert.isTrue(report.trace.some((line) => line.includes("D reply to m9")), report.trace.join("\n"))
    }))

  it.effect("a reply accepted in time but unread when the broker crashed: its asker, with no connection at its own deadline, does not time out then: that reply answers it within a second past the deadline (seed 5053)", () =>
    Effect.gen(function*() {
      // A's ask3 to D (6 s), with A's client stalled 5.3 s meanwhile: the broker accepts D's reply m8 (D is
      // told delivered) and writes it to A, then crashes 50 ms before A's deadline. A has no connection at
      // its deadline while its client reconnects, so its settling round trip waits for the next one, up to
      // its rejoin grace (src/client/SettleRoundTrip.ts): m8, read when the stall ends half a second later
      // (at 11.0 s in the trace, from what the stalled reader held — the new broker starts only at 15.3 s),
      // answers the ask during that wait. It used to end at the deadline with ReplyTimeout, and m8 reached
      // A's session late.
      const ops: ReadonlyArray<Op> = [
        { _tag: "Send", after: 769, from: 3, to: 0 },
        { _tag: "Send", after: 837, from: 1, to: 0 },
        { _tag: "CancelAsk", after: 989, session: 3 },
        { _tag: "Send", after: 10, from: 1, to: 3 },
        { _tag: "Ask", after: 2, from: 2, to: 3, timeoutMs: 3000 },
        { _tag: "Ask", after: 303, from: 2, to: 0, timeoutMs: 15000 },
        { _tag: "Drop", after: 12, session: 3, side: "broker" },
        { _tag: "Send", after: 14, from: 0, to: 3 },
        { _tag: "Ask", after: 1546, from: 0, to: 3, timeoutMs: 6000 },
        { _tag: "Stop", after: 150, session: 1 },
        { _tag: "Stall", after: 1070, session: 0, side: "client", ms: 5282 },
        { _tag: "Status", after: 20, session: 2, busy: false },
        { _tag: "CancelAsk", after: 16, session: 2 },
        { _tag: "Send", after: 2466, from: 1, to: 3 },
        { _tag: "Ask", after: 18, from: 0, to: 3, timeoutMs: 18000 },
        { _tag: "ReplaceGeneration", after: 1154, session: 2 },
        { _tag: "CrashBroker", after: 1047, downMs: 4891 },
        { _tag: "Send", after: 1335, from: 2, to: 0 },
        { _tag: "Ask", after: 2240, from: 3, to: 1, timeoutMs: 20000 },
        { _tag: "DelayWrites", after: 1040, session: 2, side: "client", delayMs: 195, forMs: 9998 },
        { _tag: "Stop", after: 17, session: 3 },
        { _tag: "Send", after: 692, from: 3, to: 0 },
        { _tag: "Send", after: 658, from: 2, to: 3 },
        { _tag: "Send", after: 493, from: 1, to: 0 },
        { _tag: "Ask", after: 385, from: 3, to: 0, timeoutMs: 6000 },
        { _tag: "Status", after: 1069, session: 3, busy: false },
        { _tag: "Send", after: 71, from: 2, to: 3 },
        { _tag: "Send", after: 2466, from: 2, to: 1 },
        { _tag: "Ask", after: 2, from: 2, to: 3, timeoutMs: 6000 },
        { _tag: "Send", after: 1314, from: 1, to: 0 },
        { _tag: "Reply", after: 15, from: 0 },
        { _tag: "List", after: 1859, from: 0 },
        { _tag: "Send", after: 12, from: 1, to: 2 },
        { _tag: "Ask", after: 18, from: 2, to: 1, timeoutMs: 10000 },
        { _tag: "Send", after: 1244, from: 3, to: 3 },
        { _tag: "CancelAsk", after: 1343, session: 0 },
        { _tag: "ReplaceGeneration", after: 17, session: 0 },
        { _tag: "Send", after: 59, from: 3, to: 2 },
        { _tag: "Send", after: 360, from: 1, to: 3 },
        { _tag: "ClockJump", after: 9, ms: 68106 }
      ]
      const report = yield* runWorkload(
        { seed: 5053, tolerate: ["crash-redelivery", "unconfirmed-redelivery", "takeover-late-write"] },
        ops,
        { hostile: true }
      )
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      const waited = waitedMs(report.trace, "A ask D \"question 9 A→D\"", "A ask3 (m7) replied by m8 from D")
      assert.isTrue(waited !== undefined && waited > 6_000 && waited <= 7_000, `waited ${waited} ms for a 6 s timeout`)
      assert.isFalse(report.trace.some((line) => line.includes("A ask3 ended: ReplyTimeout")), report.trace.join("\n"))
    }))

  // In blocks of SWEEP_BLOCK seeds, each with a limit proportional to its seeds (sweep.ts: a loaded machine still ends each in time).
  for (const [first, count] of blocksOf(1, 100)) {
    it.effect(`random workloads with hostile sessions, seeds ${first}–${first + count - 1}: no violation`, () =>
      Effect.gen(function*() {
        const unexpected: Array<string> = []
        for (let seed = first; seed < first + count; seed++) {
          const report = yield* runWorkload({ seed }, undefined, { hostile: true })
          for (const violation of report.violations) {
            if (KNOWN_ISSUES.includes(violation.kind)) continue
            unexpected.push(`seed ${seed}: ${violation.kind}: ${violation.message} (npm run sim -- --seed ${seed} --hostile)`)
          }
        }
        assert.deepStrictEqual(unexpected, [])
      }), blockBudget(count))
  }
})
