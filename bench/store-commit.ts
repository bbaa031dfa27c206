/**
 * CPU per commit of the broker's own `MailStore.sqlite`, on a database file,
 * for the commit shapes its workloads make (docs/store.md, "What a write costs"):
 *
 *   npx node bench/store-commit.ts [--round-trips N] [--ticks N] [--per-tick K] [--reps N]
 *
 * - `ask`: a question and its reply, two commits per round trip. The first
 *   stores the ask's replay record, its mail and its edge (and deletes the
 *   last reply's mail); the second the reply's record and mail, closing the
 *   edge and deleting the ask's mail, as StoreJournal.ts takes them when each
 *   message is delivered at once and confirmed before the next commit.
 * - `tick`: K messages per commit (64 in flight makes ticks of several), each
 *   a replay record and mail, with the previous tick's mail deleted.
 * - `read`: R replay records per commit and mail for one message in six,
 *   the previous commit's mail deleted: the lazy commit of traffic between
 *   `received-v1` clients, most of whose mail is read before its commit
 *   (w64 counted 152 records, 24 mail puts and 24 deletes per commit).
 *
 * Message ids are random UUIDs, as real clients make them. Each rep opens a
 * fresh file in a temp dir. Printed: the median over reps of main-thread CPU
 * (user + system, `process.cpuUsage`) per commit and per message, and the
 * WAL bytes written per message (the `-wal` file's growth; checkpoints are
 * kept out of the measured range). CPU time, unlike wall time, stays
 * comparable on a loaded machine, which is why this measures the store alone.
 */
import { Effect, Layer } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import * as Database from "../src/store/Database.ts"
import { type MailCommit, MailStore } from "../src/store/MailStore.ts"
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"
import { askCommits, readCommits, tickCommits } from "./storeShapes.ts"

const USAGE =
  "usage: node bench/store-commit.ts [--round-trips N] [--ticks N] [--per-tick K] [--reads N] [--per-read R] [--reps N]"
let ROUND_TRIPS = 3_000
let TICKS = 1_500
let PER_TICK = 8
let READS = 200
let PER_READ = 150
let REPS = 5
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--round-trips") ROUND_TRIPS = arg.int(21, 1_000_000)
  else if (arg.key === "--ticks") TICKS = arg.int(21, 1_000_000)
  else if (arg.key === "--per-tick") PER_TICK = arg.int(1, 10_000)
  else if (arg.key === "--reads") READS = arg.int(21, 1_000_000)
  else if (arg.key === "--per-read") PER_READ = arg.int(6, 10_000)
  else if (arg.key === "--reps") REPS = arg.int(1, 100)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

interface Measured {
  readonly cpuPerCommit: number
  readonly walBytes: number
}

const measure = (commits: ReadonlyArray<MailCommit>): Effect.Effect<Measured, unknown> =>
  Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ei-store-commit-"))
    const file = path.join(dir, "intercom.db")
    try {
      return yield* Effect.gen(function*() {
        const store = yield* MailStore
        // Warm the statements and the tables' first pages outside the measured range.
        for (const commit of commits.slice(0, 20)) yield* store.commit(commit)
        const walBefore = fs.statSync(`${file}-wal`).size
        const cpu = process.cpuUsage()
        for (const commit of commits.slice(20)) yield* store.commit(commit)
        const used = process.cpuUsage(cpu)
        const walAfter = fs.statSync(`${file}-wal`).size
        return { cpuPerCommit: (used.user + used.system) / (commits.length - 20), walBytes: walAfter - walBefore }
      }).pipe(Effect.provide(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

const run = Effect.gen(function*() {
  const rows: Array<[string, string, string, string]> = []
  for (const [name, make, messagesPerCommit] of [
    ["ask (2 commits per round trip)", () => askCommits(ROUND_TRIPS), 1],
    [`tick (${PER_TICK} messages per commit)`, () => tickCommits(TICKS, PER_TICK), PER_TICK],
    [`read (${PER_READ} records, a sixth of the mail, per commit)`, () => readCommits(READS, PER_READ), PER_READ]
  ] as const) {
    const cpu: Array<number> = []
    const wal: Array<number> = []
    for (let rep = 0; rep < REPS; rep++) {
      const commits = make()
      const measured = yield* measure(commits)
      cpu.push(measured.cpuPerCommit)
      wal.push(measured.walBytes / ((commits.length - 20) * messagesPerCommit))
    }
    const perCommit = median(cpu)
    rows.push([name, perCommit.toFixed(1), (perCommit / messagesPerCommit).toFixed(1), median(wal).toFixed(0)])
  }
  const header = ["commits", "CPU µs/commit", "CPU µs/message", "WAL bytes/message"]
  console.log(`| ${header.join(" | ")} |\n|---|---:|---:|---:|`)
  for (const row of rows) console.log(`| ${row.join(" | ")} |`)
  console.log(`\n${REPS} reps (median); load ${os.loadavg().map((l) => l.toFixed(2)).join(" / ")}; Node ${process.version}`)
})

Effect.runPromise(run).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
