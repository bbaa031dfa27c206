/**
 * What the clients' liveness probes (P96) cost at scale (docs/performance.md,
 * "Liveness probes at scale, twenty-eighth stop"): the broker (from source)
 * on the in-memory transport, N sessions
 * registered with `list-page-v1`, each reading all it is sent; then rounds in
 * which every session probes once, 64 at a time — alternately as the client
 * probed before (the whole list, page by page) and as it probes now (one
 * session, `limit: 1`). Prints the wall time and this process's CPU per
 * round; the sessions' own reading and `JSON.parse` run in the same process,
 * so the CPU is the broker's and the clients' together.
 *
 *   node bench/probe-scale.ts --sessions 2000
 */
import { Effect, Queue, References } from "effect"
import { Broker } from "../src/broker/index.ts"
import type { Connection } from "../src/transport/Connection.ts"
import { makeInMemoryNetwork } from "../src/transport/InMemoryNetwork.ts"

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
}
const sessions = Number(arg("sessions", "2000"))

const program = Effect.gen(function*() {
  const network = yield* makeInMemoryNetwork({ capacity: 64 })
  const broker = yield* Broker.make({ idleExit: null, maxSessions: sessions + 10 })
  yield* network.listen("mem://probes", broker.accept)
  const clients: Array<{ readonly connection: Connection; readonly answers: Queue.Queue<string> }> = []
  for (let i = 0; i < sessions; i++) {
    const connection = yield* network.dial("mem://probes")
    yield* connection.writeAll([JSON.stringify({
      type: "register",
      sessionId: `s-${i}`,
      features: ["list-page-v1"],
      session: { cwd: "/tmp", model: "bench", pid: 10_000 + i, startedAt: 0, lastActivity: 0, name: `s-${i}` }
    })])
    const answers = yield* Queue.unbounded<string>()
    yield* Effect.forkDetach(Effect.forever(Effect.flatMap(connection.read, (frames) =>
      Effect.forEach(frames, (frame) => frame.includes(`"sessions"`) ? Queue.offer(answers, frame) : Effect.void)
    )))
    clients.push({ connection, answers })
  }
  yield* Effect.sleep(500)
  for (const limit of [undefined, 1, undefined, 1]) {
    const cpu = process.cpuUsage()
    const t0 = performance.now()
    yield* Effect.forEach(clients, ({ answers, connection }, i) =>
      Effect.gen(function*() {
        let cursor: string | undefined
        do {
          yield* connection.writeAll([JSON.stringify({
            type: "list",
            requestId: `r${i}`,
            ...(cursor === undefined ? {} : { cursor }),
            ...(limit === undefined ? {} : { limit })
          })])
          const answer: { readonly nextCursor?: string } = JSON.parse(yield* Queue.take(answers))
          cursor = limit === undefined ? answer.nextCursor : undefined
        } while (cursor !== undefined)
      }), { concurrency: 64, discard: true })
    const used = process.cpuUsage(cpu)
    console.log(JSON.stringify({
      sessions,
      probe: limit === undefined ? "whole list" : "limit 1",
      wallMs: Math.round(performance.now() - t0),
      cpuMs: Math.round((used.user + used.system) / 1000)
    }))
  }
}).pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))

await Effect.runPromise(Effect.scoped(program))
process.exit(0)
