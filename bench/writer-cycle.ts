/**
 * CPU per cycle of the broker's store writer (src/broker/StoreWriter.ts), its
 * fibers and the journal around it, without sockets or a Router:
 *
 *   npx node bench/writer-cycle.ts [--cycles N] [--per-cycle K] [--store sqlite|none] [--via lazy|wake] [--reps N] [--bare]
 *
 * Each cycle puts K messages into a real StoreJournal (a replay record and
 * mail each; five in six read before the commit, as w64's reader confirms
 * them, the rest read in the next cycle), then wakes the writer the way the
 * broker does: `lazy` through the `LAZY_FLUSH` fiber (a 10 ms sleep on the
 * Clock, as every w64 commit was woken, docs/performance.md "CPU per message,
 * seventieth stop"), `wake` straight on the writer's queue. The driver then
 * waits on a queue the store offers to when its commit ends; it resumes
 * through Effect's scheduler, after the writer's fiber has finished the
 * cycle (`committed`) and is waiting again, so each cycle covers the
 * writer's whole path.
 *
 * `--store none` commits into a store that does nothing, so what is left is
 * the journal's and Effect's own work per commit; `sqlite` (default) is the
 * broker's MailStore on a database file in a temp dir. Printed: the median
 * over reps of main-thread CPU (user + system) per cycle, and of the part of
 * it spent feeding the journal and inside `MailStore.commit` (each measured
 * around it: four `process.cpuUsage` calls a cycle, about 3 µs each here,
 * which the total then includes; `--bare` leaves them out and prints the
 * total alone), and how many statements SQLite prepared during the measured
 * cycles (the statement cache's misses).
 */
import { Clock, Effect, Layer, Queue } from "effect"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { StoreJournal } from "../src/broker/StoreJournal.ts"
import { runStoreWriter } from "../src/broker/StoreWriter.ts"
import * as Database from "../src/store/Database.ts"
import { MailStore, type MailStoreService } from "../src/store/MailStore.ts"
import { SqliteBatch } from "../src/store/SqliteBatch.ts"
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"
import { mailOf, recordOf, session } from "./storeShapes.ts"

const USAGE =
  "usage: node bench/writer-cycle.ts [--cycles N] [--per-cycle K] [--store sqlite|none] [--via lazy|wake] [--reps N] [--bare]"
let CYCLES = 300
let PER_CYCLE = 200
let STORE: "sqlite" | "none" = "sqlite"
let VIA: "lazy" | "wake" = "lazy"
let REPS = 3
let BARE = false
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--cycles") CYCLES = arg.int(21, 1_000_000)
  else if (arg.key === "--per-cycle") PER_CYCLE = arg.int(1, 100_000)
  else if (arg.key === "--reps") REPS = arg.int(1, 100)
  else if (arg.key === "--store") STORE = arg.value() === "none" ? "none" : "sqlite"
  else if (arg.key === "--bare") BARE = true
  else if (arg.key === "--via") VIA = arg.value() === "wake" ? "wake" : "lazy"
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

const cpuNow = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}

interface Measured {
  readonly perCycle: number
  readonly inCommit: number
  readonly inJournal: number
  /** Statements SQLite compiled during the measured cycles (0: every one came from the cache). */
  readonly prepares: number
}

const cycles = (inner: MailStoreService, prepares: Effect.Effect<number>): Effect.Effect<Measured> =>
  Effect.gen(function*() {
    const wake = yield* Queue.sliding<void>(1)
    const lazy = yield* Queue.sliding<void>(1)
    const done = yield* Queue.unbounded<void>()
    let inCommit = 0
    const store: MailStoreService = {
      ...inner,
      commit: (batch) =>
        BARE ? inner.commit(batch).pipe(Effect.ensuring(Effect.sync(() => Queue.offerUnsafe(done, undefined)))) : Effect.suspend(() => {
          const before = cpuNow()
          return inner.commit(batch).pipe(Effect.ensuring(Effect.sync(() => {
            inCommit += cpuNow() - before
            Queue.offerUnsafe(done, undefined)
          })))
        })
    }
    const journal = new StoreJournal(
      () => Queue.offerUnsafe(wake, undefined),
      3_600_000,
      () => Queue.offerUnsafe(lazy, undefined)
    )
    const clock = yield* Clock.Clock
    const now = () => clock.currentTimeMillisUnsafe()
    yield* Effect.forkChild(runStoreWriter(journal, store, wake, lazy, now, () => {}))
    const senders = Array.from({ length: 16 }, session), receiver = session()
    // The messages are made up front, so that only the journal's and the writer's work is measured.
    const at0 = now()
    const made = Array.from({ length: (CYCLES + 20) * PER_CYCLE }, (_, j) => {
      const { mail } = mailOf(senders[j % 16] ?? receiver, receiver, j + 1, at0, false)
      return { mail, record: recordOf(mail, at0) }
    })
    let next = 0
    let inJournal = 0
    let unread: Array<{ readonly sender: string; readonly id: string; readonly target: string }> = []
    const cycle = Effect.suspend(() => {
      const before = BARE ? 0 : cpuNow()
      for (const left of unread) journal.mailGone(left.sender, left.id, left.target)
      unread = []
      const at = now()
      for (let j = 0; j < PER_CYCLE; j++) {
        const { mail, record } = made[next++]!
        journal.record(record.sender, record.key, record.fingerprint, record.outcome, at)
        journal.putMail(mail)
        if (j % 6 === 5) unread.push({ sender: mail.senderKey, id: mail.message.id, target: mail.targetKey })
        else journal.mailGone(mail.senderKey, mail.message.id, mail.targetKey)
      }
      if (!BARE) inJournal += cpuNow() - before
      if (VIA === "wake") Queue.offerUnsafe(wake, undefined)
      return Queue.take(done)
    })
    for (let i = 0; i < 20; i++) yield* cycle
    inCommit = 0
    inJournal = 0
    const preparedBefore = yield* prepares
    const before = cpuNow()
    for (let i = 0; i < CYCLES; i++) yield* cycle
    const used = cpuNow() - before
    const prepared = (yield* prepares) - preparedBefore
    return { perCycle: used / CYCLES, inCommit: inCommit / CYCLES, inJournal: inJournal / CYCLES, prepares: prepared }
  }).pipe(Effect.scoped)

const none: MailStoreService = {
  durable: true,
  load: () => Effect.die("not used"),
  commit: () => Effect.void
}

const measure: Effect.Effect<Measured, unknown> = Effect.suspend(() => {
  if (STORE === "none") return cycles(none, Effect.succeed(0))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ei-writer-cycle-"))
  const file = path.join(dir, "intercom.db")
  return Effect.gen(function*() {
    const batch = yield* SqliteBatch
    return yield* cycles(yield* MailStore, Effect.map(batch.statementCache, (stats) => stats.prepares))
  }).pipe(
    Effect.provide(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))),
    Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
  )
})

const run = Effect.gen(function*() {
  const perCycle: Array<number> = []
  const inCommit: Array<number> = []
  const inJournal: Array<number> = []
  let prepares = 0
  for (let rep = 0; rep < REPS; rep++) {
    const m = yield* measure
    perCycle.push(m.perCycle)
    inCommit.push(m.inCommit)
    inJournal.push(m.inJournal)
    prepares += m.prepares
  }
  const cycle = median(perCycle), commit = median(inCommit), fed = median(inJournal)
  console.log(`| store | via | messages/cycle | CPU µs/cycle | – feeding the journal | – in MailStore.commit | – the rest |`)
  console.log(`|---|---|---:|---:|---:|---:|---:|`)
  console.log(
    `| ${STORE} | ${VIA} | ${PER_CYCLE} | ${cycle.toFixed(1)} | ${fed.toFixed(1)} | ${commit.toFixed(1)} | ${(cycle - fed - commit).toFixed(1)} |`
  )
  console.log(`\n${REPS} reps × ${CYCLES} cycles (median); per rep: ${perCycle.map((c) => c.toFixed(0)).join(", ")}; statements prepared while measured: ${prepares}; load ${os.loadavg().map((l) => l.toFixed(2)).join(" / ")}; Node ${process.version}`)
})

Effect.runPromise(run).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
