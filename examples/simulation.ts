/**
 * Simulating your own agents with `effect-intercom/testing`.
 *
 *   node examples/simulation.ts            # 50 seeds, a summary
 *   node examples/simulation.ts --seed 7   # one seed, with its trace
 *
 * A small workflow engine: a planner asks two reviewers, one after the other
 * (a session holds one blocking ask at a time), and retries a reviewer once
 * when its ask fails. The reviewers are *your* agents: a behaviour that thinks
 * for a while (simulated time) and answers. While the workflow runs, the
 * world misbehaves — a reviewer is killed and comes back, the broker crashes
 * and restarts — at moments chosen by the seed.
 *
 * The real broker, client and session code run unchanged over an in-memory
 * network, all under TestClock: minutes of simulated time take milliseconds,
 * and a seed replays exactly. Two kinds of check run on every seed:
 * - the harness's own invariants (no silent loss, no duplicate, FIFO per
 *   sender and recipient, asks settle once, scopes, registry, no leaked
 *   fiber) — `report.ok`;
 * - the workflow's: every stage ends with an answer or a typed failure, and
 *   an answer comes from the reviewer that was asked.
 * (Inside this repository the import is ../src/testing/index.ts; a user of
 * the package imports "effect-intercom/testing".)
 */
import { Effect, Exit } from "effect"
import {
  type AgentBehaviour,
  describeFailure,
  Prng,
  runSimulation,
  Simulation,
  type SimReport
} from "../src/testing/index.ts"

/** A reviewer: thinks 1–9 s, then answers the ask it was handed (plain messages it only reads). */
const reviewer: AgentBehaviour = (inbound, agent) =>
  Effect.gen(function*() {
    if (!inbound.expectsReply) return
    yield* agent.session.setStatus("thinking")
    yield* Effect.sleep(agent.random.int(1_000, 9_000))
    yield* agent.session.setStatus("idle")
    yield* agent.session.reply({ message: `LGTM (${agent.name})`, replyTo: inbound.message.id })
  })

interface StageResult {
  readonly reviewer: string
  readonly outcome: string
}

/** The workflow under test, written against simulated sessions; faults land at seeded moments. */
const workflow = (seed: number, results: Array<StageResult>) =>
  Effect.gen(function*() {
    const sim = yield* Simulation
    const planner = sim.session("planner")
    const chaos = Prng.derive(seed, "chaos")
    const killAt = chaos.int(0, 12_000)
    const crashAt = chaos.int(0, 20_000)
    let now = 0
    /** Lets simulated time pass until `at`, injecting the faults that fall due on the way. */
    const until = (at: number) =>
      Effect.gen(function*() {
        for (const [when, fault] of [
          [killAt, Effect.andThen(sim.session("reviewer-2").kill, sim.session("reviewer-2").start)],
          [crashAt, sim.broker.crashFor("2 seconds")]
        ] as const) {
          if (when >= now && when < at) {
            yield* sim.advance(when - now)
            now = when
            yield* fault
          }
        }
        yield* sim.advance(at - now)
        now = at
      })

    for (const name of ["reviewer-1", "reviewer-2"]) {
      let outcome = "not asked"
      for (let attempt = 1; attempt <= 2 && outcome !== "answered"; attempt++) {
        const ask = yield* planner.ask(name, `Please review stage ${name} (attempt ${attempt})`, { timeout: "15 seconds" })
        if (ask === undefined) break
        // Wait for the outcome in 1 s steps, so the faults still land on time.
        while (ask.fiber.pollUnsafe() === undefined) yield* until(now + 1_000)
        const exit = yield* ask.result()
        if (Exit.isSuccess(exit) && exit.value._tag === "Replied") {
          outcome = exit.value.from.name === name ? "answered" : `answered by ${exit.value.from.name ?? "?"}!`
        } else {
          outcome = Exit.isSuccess(exit) ? exit.value.text : describeFailure(exit.cause)
        }
      }
      results.push({ reviewer: name, outcome })
    }
  })

const runSeed = (seed: number) =>
  Effect.gen(function*() {
    const results: Array<StageResult> = []
    const report: SimReport = yield* runSimulation(
      {
        seed,
        sessions: [
          { name: "planner", agent: { mode: "manual" } },
          { name: "reviewer-1", agent: { mode: "custom", behaviour: reviewer } },
          { name: "reviewer-2", agent: { mode: "custom", behaviour: reviewer } }
        ]
      },
      workflow(seed, results)
    )
    // The workflow's own invariant: two stages, each answered by its reviewer or ended by a typed failure.
    const workflowOk = results.length === 2 && results.every((stage) => !stage.outcome.startsWith("answered by"))
    return { report, results, workflowOk }
  })

const main = Effect.gen(function*() {
  const args = process.argv.slice(2)
  const seedIndex = args.indexOf("--seed")
  if (seedIndex >= 0) {
    const { report, results, workflowOk } = yield* runSeed(Number(args[seedIndex + 1] ?? 1))
    console.log(report.trace.join("\n"))
    for (const stage of results) console.log(`${stage.reviewer}: ${stage.outcome}`)
    console.log(`invariants ${report.ok ? "hold" : "BROKEN"}; workflow ${workflowOk ? "ok" : "BROKEN"}`)
    return report.ok && workflowOk
  }
  let failed = 0
  let answered = 0
  let stages = 0
  const started = performance.now()
  for (let seed = 1; seed <= 50; seed++) {
    const { report, results, workflowOk } = yield* runSeed(seed)
    stages += results.length
    answered += results.filter((stage) => stage.outcome === "answered").length
    if (!report.ok || !workflowOk) {
      failed++
      console.log(`seed ${seed}: ${report.violations.map((v) => `${v.kind}: ${v.message}`).join("; ")} ${JSON.stringify(results)}`)
    }
  }
  console.log(
    `50 seeds in ${((performance.now() - started) / 1000).toFixed(1)} s: ${failed} failed; ${answered}/${stages} stages answered, the rest ended with a typed failure`
  )
  return failed === 0
})

Effect.runPromise(main).then((ok) => process.exit(ok ? 0 : 1))
