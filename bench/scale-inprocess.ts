/**
 * Scale measurement in one process (issue 16, docs/performance.md "Scale"):
 * the broker of a built tree (`--dist`, default ./dist) on the in-memory
 * transport, N sessions registered on raw connections (512 at once) that
 * read their `registered` frame and nothing after (each link holds 4 frames
 * each way, so an idle session's writer blocks after a few membership frames,
 * as behind a full socket buffer). Prints the time at every tenth, the total,
 * and the JS heap per session after a full GC. No socket, so no descriptor
 * limit: this is how 50,000 sessions are measured on a machine whose
 * `ulimit -n` is lower (scale-sockets.ts measures real sockets).
 *
 *   node --expose-gc bench/scale-inprocess.ts --sessions 50000 --scope-size 100 [--dist dist]
 */
import path from "node:path"

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
}
const sessions = Number(arg("sessions", "50000"))
const scopeSize = Number(arg("scope-size", String(sessions)))
const dist = path.resolve(arg("dist", "dist"))

const { Effect, References } = await import(path.join(dist, "../node_modules/effect/dist/index.js"))
const { Broker } = await import(path.join(dist, "broker/index.js"))
const { makeInMemoryNetwork } = await import(path.join(dist, "transport/index.js"))

const gc = (): void => {
  const collect: unknown = Reflect.get(globalThis, "gc")
  if (typeof collect === "function") {
    collect()
    collect()
  }
}

const program = Effect.gen(function*() {
  const network = yield* makeInMemoryNetwork({ capacity: 4 })
  const broker = yield* Broker.make({ idleExit: null, maxSessions: sessions + 10 })
  yield* network.listen("mem://scale", broker.accept)
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  const rssBefore = process.memoryUsage().rss
  const t0 = performance.now()
  const marks: Array<string> = []
  const register = (i: number) =>
    Effect.gen(function*() {
      const connection = yield* network.dial("mem://scale")
      const scopeId = scopeSize < sessions ? `g${Math.floor(i / scopeSize)}` : undefined
      yield* connection.writeAll([JSON.stringify({
        type: "register",
        sessionId: `idle-${i}`,
        ...(scopeId === undefined ? {} : { scopeId }),
        session: { cwd: "/tmp", model: "bench", pid: 10_000 + i, startedAt: 0, lastActivity: 0, name: `idle-${i}` }
      })])
      const [first] = yield* connection.read
      if (first === undefined || !first.includes(`"registered"`)) throw new Error(`no registered frame: ${first}`)
    })
  const tenth = Math.max(1, Math.floor(sessions / 10))
  for (let start = 0; start < sessions; start += 512) {
    const batch = Array.from({ length: Math.min(512, sessions - start) }, (_, k) => start + k)
    yield* Effect.forEach(batch, register, { concurrency: "unbounded", discard: true })
    const done = start + batch.length
    if (Math.floor(done / tenth) > Math.floor(start / tenth)) marks.push(`${done}@${Math.round(performance.now() - t0)}ms`)
  }
  const registerMs = performance.now() - t0
  yield* Effect.sleep(200)
  gc()
  const memory = process.memoryUsage()
  console.log(JSON.stringify({
    dist,
    sessions,
    scopeSize,
    live: yield* broker.sessionCount,
    registerMs: Math.round(registerMs),
    marks: marks.join(" "),
    heapPerSessionKiB: +((memory.heapUsed - heapBefore) / sessions / 1024).toFixed(2),
    rssPerSessionKiB: +((memory.rss - rssBefore) / sessions / 1024).toFixed(2),
    peakRssMiB: +(process.resourceUsage().maxRSS / 1024).toFixed(1)
  }))
})

await Effect.runPromise(Effect.scoped(program).pipe(Effect.provideService(References.MinimumLogLevel, "Error")))
process.exit(0)
