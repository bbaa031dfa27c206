/**
 * CPU per message of durable mode's own work on w64's traffic, for two
 * builds' sources in one process, alternating (docs/performance.md, "Durable,
 * seventh stop"):
 *
 *   npx node bench/durable-path.ts [--a <src dir>] [--b <src dir>] [--messages N] [--per-commit R] [--reps N]
 *
 * Each message is what `Send` and the `received` after it do to the store
 * journal between two `received-v1` clients: its outbound record made and
 * set (`DeliveryRecords.set`, which tells the journal), its mail put, its
 * acknowledgement held until read; read 64 at a time (one `received`), one
 * message in fifteen only after the next commit (w64 counted about 28 mail
 * puts per 407-record commit); every R messages (407 by default, w64's
 * commits) the journal is taken and committed to a `MailStore.sqlite` on a
 * file. Printed: the median main-thread CPU (`process.cpuUsage`) per message
 * of each build, and its WAL bytes per message (the `-wal` file at the end). Both builds run in this process, their turns alternating and
 * each first every other turn, so the machine's load falls on both alike.
 * `--a` defaults to the base worktree's `src`, `--b` to this one's.
 */
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { pathToFileURL } from "node:url"
import type * as DeliveryRecordsModule from "../src/broker/DeliveryRecords.ts"
import type * as OutboundRecordsModule from "../src/broker/OutboundRecords.ts"
import type { Mail } from "../src/broker/Peer.ts"
import type * as StoreJournalModule from "../src/broker/StoreJournal.ts"
import type * as DatabaseModule from "../src/store/Database.ts"
import type * as MailStoreModule from "../src/store/MailStore.ts"
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"

const USAGE = "usage: node bench/durable-path.ts [--a <src dir>] [--b <src dir>] [--messages N] [--per-commit R] [--reps N]"
let srcA = "/work/wt-base/src"
let srcB = path.join(import.meta.dirname, "..", "src")
let MESSAGES = 40_000
let PER_COMMIT = 407
let REPS = 7
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--a") srcA = arg.value()
  else if (arg.key === "--b") srcB = arg.value()
  else if (arg.key === "--messages") MESSAGES = arg.int(1_000, 10_000_000)
  else if (arg.key === "--per-commit") PER_COMMIT = arg.int(1, 100_000)
  else if (arg.key === "--reps") REPS = arg.int(1, 100)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

/** One build's modules, loaded from its `src`. */
interface Build {
  readonly name: string
  readonly journalModule: typeof StoreJournalModule
  readonly records: typeof DeliveryRecordsModule
  readonly outbound: typeof OutboundRecordsModule
  readonly database: typeof DatabaseModule
  readonly mailStore: typeof MailStoreModule
}

const load = async (name: string, src: string): Promise<Build> => {
  const from = <M>(file: string): Promise<M> => import(pathToFileURL(path.join(src, file)).href)
  return {
    name,
    journalModule: await from<typeof StoreJournalModule>("broker/StoreJournal.ts"),
    records: await from<typeof DeliveryRecordsModule>("broker/DeliveryRecords.ts"),
    outbound: await from<typeof OutboundRecordsModule>("broker/OutboundRecords.ts"),
    database: await from<typeof DatabaseModule>("store/Database.ts"),
    mailStore: await from<typeof MailStoreModule>("store/MailStore.ts")
  }
}

const SENDER = "scope\u0000sender"
const TARGET = "receiver"
const TEXT = "x".repeat(100)
const DELIVERED = { ok: true, delivery: "socket_delivered" } as const

const mailFor = (recordKey: string, id: string, now: number): Mail => ({
  recordKey,
  senderKey: SENDER,
  senderId: "sender",
  senderIdentity: undefined,
  fromJson: "{\"id\":\"sender\",\"name\":\"sender\"}",
  message: { id, timestamp: now, content: { text: TEXT } },
  brokerReceivedAt: now,
  spaceKey: "scope",
  targetKey: `scope\u0000${TARGET}`,
  targetId: TARGET,
  targetIdentity: undefined,
  queuedAt: now,
  askTimeoutMs: undefined
})

/** The journal's methods this bench calls, as either build has them (the peer is only kept and handed back). */
interface JournalLike {
  putMail(mail: Mail): void
  holdAckUntilRead(peer: object, frame: string, recordKey: string, byReceipt: boolean): void
  mailGone(recordKey: string): void
  take(now: number): StoreJournalModule.TakenBatch | undefined
  committed(taken: StoreJournalModule.TakenBatch): void
  readonly recordSent?: (record: OutboundRecordsModule.OutboundRecord, outcome: DeliveryRecordsModule.Outcome, at: number) => void
  readonly record: (sender: string, key: string, fingerprint: DeliveryRecordsModule.Fingerprint, outcome: DeliveryRecordsModule.Outcome, at: number) => void
}

/** One run's main-thread CPU µs per message and WAL bytes per message (the `-wal` file's size at its end). */
interface RunResult {
  readonly cpu: number
  readonly wal: number
}

/** One run of `MESSAGES` messages through `build`'s journal and store. */
const runOnce = (build: Build, peer: object): Promise<RunResult> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ei-durable-path-"))
  const file = path.join(dir, "intercom.db")
  const program = Effect.gen(function*() {
    const store = yield* build.mailStore.MailStore
    let released = 0
    const journal: JournalLike = new build.journalModule.StoreJournal(() => {}, 3_600_000, () => {}, (ready) => {
      released += ready.length
    })
    // As Router.ts wires it: the journal is told of every record set. The builds' `set` differ: this
    // branch's passes the outbound record, `main`'s the sender, the key and the record as fingerprint.
    const set = (...args: ReadonlyArray<unknown>): void => {
      const [first, second, third, fourth, fifth] = args
      if (first instanceof build.outbound.OutboundRecord && journal.recordSent !== undefined && typeof third === "number") {
        journal.recordSent(first, DELIVERED, third)
      } else if (typeof first === "string" && typeof second === "string" && third instanceof build.outbound.OutboundRecord) {
        journal.record(first, second, third, DELIVERED, typeof fifth === "number" ? fifth : 0)
      } else {
        throw new Error(`unexpected record observer call (${args.length} arguments, outcome ${JSON.stringify(fourth)})`)
      }
    }
    const records = new build.records.DeliveryRecords(
      { windowMs: 600_000, retentionMs: 3_600_000, maxRecords: 1_000_000, maxBytes: 1_000_000_000 },
      { set, rewrite: () => {} }
    )
    const ids = Array.from({ length: MESSAGES }, () => randomUUID())
    let now = 1_700_000_000_000
    let late: Array<string> = []
    const commit = () => {
      const taken = journal.take(now)
      if (taken === undefined) return Effect.void
      return Effect.map(store.commit(taken.batch), () => {
        journal.committed(taken)
        for (const key of late) journal.mailGone(key)
        late = []
      })
    }
    const cpu = process.cpuUsage()
    let batch: Array<string> = []
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!
      const recordKey = `${SENDER}\u0001${id}`
      const message = { id, timestamp: now, content: { text: TEXT } }
      const outbound = build.outbound.OutboundRecord.of(SENDER, TARGET, message, undefined)
      journal.putMail(mailFor(recordKey, id, now))
      records.set(outbound, DELIVERED, now)
      journal.holdAckUntilRead(peer, `{"type":"delivered","id":"${id}"}\n`, recordKey, true)
      batch.push(recordKey)
      if (batch.length === 64) {
        for (let j = 0; j < batch.length; j++) {
          if ((i + j) % 15 === 0) late.push(batch[j]!)
          else journal.mailGone(batch[j]!)
        }
        batch = []
        now += 2
      }
      if ((i + 1) % PER_COMMIT === 0) yield* commit()
    }
    for (const key of batch) journal.mailGone(key)
    yield* commit()
    const used = process.cpuUsage(cpu)
    if (released === 0) throw new Error("no acknowledgement was released")
    return { cpu: (used.user + used.system) / MESSAGES, wal: fs.statSync(`${file}-wal`).size / MESSAGES }
  }).pipe(
    Effect.provide(Layer.provideMerge(build.mailStore.MailStore.sqlite, build.database.layer({ file })))
  )
  return Effect.runPromise(program).finally(() => fs.rmSync(dir, { recursive: true, force: true }))
}

const main = async () => {
  const builds = [await load("a", srcA), await load("b", srcB)]
  // Only kept by the journal and handed back with the acknowledgements it releases.
  const peer = {}
  const samples = new Map<string, Array<RunResult>>(builds.map((b) => [b.name, []]))
  // A warm-up turn each, not counted.
  for (const build of builds) await runOnce(build, peer)
  for (let rep = 0; rep < REPS; rep++) {
    const order = rep % 2 === 0 ? builds : [...builds].reverse()
    for (const build of order) samples.get(build.name)!.push(await runOnce(build, peer))
  }
  for (const build of builds) {
    const s = samples.get(build.name)!
    const cpu = s.map((r) => r.cpu)
    console.log(
      `${build.name} (${build.name === "a" ? srcA : srcB}): median ${median(cpu).toFixed(2)} µs/message; ` +
        `runs ${cpu.map((x) => x.toFixed(2)).join(", ")}; WAL ${median(s.map((r) => r.wal)).toFixed(0)} bytes/message`
    )
  }
  console.log(`${MESSAGES} messages, ${PER_COMMIT} per commit, ${REPS} reps; load ${os.loadavg().map((l) => l.toFixed(2)).join(" / ")}; Node ${process.version}`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
