/**
 * Replay records one row each against one block per commit, in one process,
 * alternating (docs/performance.md, "Replay records in blocks, sixth stop"):
 *
 *   npx node bench/replay-blocks.ts [--commits N] [--reps N]
 *
 * Two database files in a temp dir, both migrated: `rows` commits through
 * `SqliteBatch.transact` with the records inserted as before migration 0007
 * (`replay_log`, one row per record as JSON, 16 rows per statement run),
 * `block` with `MailStore.commitSteps` as it is (one `replay_blocks` row per
 * commit). The rest of each commit (mail puts and deletes) is the same.
 * Both run the same commits in turns of ten, each side first in every other turn, so load from other work falls
 * on both alike. Printed: main-thread CPU (user + system) per message of
 * each, per shape, the median over reps, and WAL bytes per message.
 */
import { Context, Effect } from "effect"
import { SqlClient } from "effect/sql"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import * as Database from "../src/store/Database.ts"
import { commitSteps, type MailCommit, ROWS_PER_INSERT } from "../src/store/MailStore.ts"
import { encodeFingerprint, encodeOutcome } from "../src/store/mailCodec.ts"
import { type BatchStep, SqliteBatch } from "../src/store/SqliteClient.ts"
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"
import { readCommits } from "./storeShapes.ts"

const USAGE = "usage: node bench/replay-blocks.ts [--commits N] [--reps N]"
let COMMITS = 300
let REPS = 5
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--commits") COMMITS = arg.int(40, 1_000_000)
  else if (arg.key === "--reps") REPS = arg.int(1, 100)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

/** The records as one `replay_log` row each (the schema and statement before 0007). */
const rowSteps = (commit: MailCommit): ReadonlyArray<BatchStep> => [
  {
    sql: `INSERT INTO replay_log (record_key, sender_key, fingerprint, outcome, recorded_at) VALUES (?, ?, ?, ?, ?)`,
    rows: commit.records.map((r) => [r.key, r.sender, encodeFingerprint(r.fingerprint), encodeOutcome(r.outcome), r.at]),
    rowsPerInsert: ROWS_PER_INSERT
  },
  ...commitSteps({ ...commit, records: [] })
]

interface Side {
  readonly file: string
  readonly batch: typeof SqliteBatch.Service
  cpu: number
}

const open = (file: string, withLog: boolean) =>
  Effect.gen(function*() {
    const context = yield* Database.make({ file })
    const sql = Context.get(context, SqlClient.SqlClient)
    if (withLog) {
      yield* sql`CREATE TABLE replay_log (n INTEGER PRIMARY KEY, record_key TEXT NOT NULL, sender_key TEXT NOT NULL,
        fingerprint TEXT NOT NULL, outcome TEXT NOT NULL, recorded_at INTEGER NOT NULL)`
    }
    return { file, batch: Context.get(context, SqliteBatch), cpu: 0 } satisfies Side
  })

const walSize = (file: string): number => fs.statSync(`${file}-wal`).size

const measure = (perCommit: number) =>
  Effect.scoped(Effect.gen(function*() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ei-replay-blocks-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    const rows = yield* open(path.join(dir, "rows.db"), true)
    const block = yield* open(path.join(dir, "block.db"), false)
    const commits = readCommits(COMMITS, perCommit)
    // Warm both sides' statements and first pages outside the measured range.
    for (const commit of commits.slice(0, 20)) {
      yield* rows.batch.transact(rowSteps(commit))
      yield* block.batch.transact(commitSteps(commit))
    }
    const wal = { rows: walSize(rows.file), block: walSize(block.file) }
    for (let i = 20; i < commits.length; i += 10) {
      const turn = commits.slice(i, i + 10)
      // Each side first in every other turn, so neither always runs on caches the other warmed.
      const sides = [[rows, rowSteps], [block, commitSteps]] as const
      for (const [side, steps] of i % 20 === 0 ? sides : [sides[1], sides[0]]) {
        const start = process.cpuUsage()
        for (const commit of turn) yield* side.batch.transact(steps(commit))
        const used = process.cpuUsage(start)
        side.cpu += used.user + used.system
      }
    }
    const messages = (commits.length - 20) * perCommit
    return {
      rows: rows.cpu / messages,
      block: block.cpu / messages,
      rowsWal: (walSize(rows.file) - wal.rows) / messages,
      blockWal: (walSize(block.file) - wal.block) / messages
    }
  }))

const run = Effect.gen(function*() {
  console.log("| records per commit | rows µs/message | block µs/message | block/rows | rows WAL B/message | block WAL B/message |")
  console.log("|---:|---:|---:|---:|---:|---:|")
  for (const perCommit of [1, 8, 40, 150]) {
    const reps = []
    for (let rep = 0; rep < REPS; rep++) reps.push(yield* measure(perCommit))
    const r = median(reps.map((m) => m.rows)), b = median(reps.map((m) => m.block))
    console.log(
      `| ${perCommit} | ${r.toFixed(2)} | ${b.toFixed(2)} | ${(b / r).toFixed(2)} | ${median(reps.map((m) => m.rowsWal)).toFixed(0)} | ${
        median(reps.map((m) => m.blockWal)).toFixed(0)
      } |`
    )
  }
  console.log(`\n${REPS} reps (median), ${COMMITS} commits each; load ${os.loadavg().map((l) => l.toFixed(2)).join(" / ")}; Node ${process.version}`)
})

Effect.runPromise(run).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
