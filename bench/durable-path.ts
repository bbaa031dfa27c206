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
 * of each build, and its WAL bytes per message (the `-wal` file at the end);
 * and from V8's GC profiler (`v8.GCProfiler`) over each run, the scavenges'
 * cost per message, the bytes a scavenge left in the young generation (what
 * survived it, on average) and the bytes scavenges promoted to the old
 * generation per message: what waits for a commit or a read is what
 * survives. Both builds run in this process, their turns alternating and
 * each first every other turn, so the machine's load falls on both alike.
 * `--a` defaults to the base worktree's `src`, `--b` to this one's. The
 * journal's calls changed at the eighth stop (a message named by its sender
 * and id, not a record key; an acknowledgement held as fields, not a frame):
 * each build is called as its own `mailGone` takes (journalApi.ts).
 */
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { pathToFileURL } from "node:url"
import v8 from "node:v8"
import type * as DeliveryRecordsModule from "../src/broker/DeliveryRecords.ts"
import type * as OutboundRecordModule from "../src/broker/OutboundRecord.ts"
import type { Mail } from "../src/broker/Peer.ts"
import type * as StoreJournalModule from "../src/broker/StoreJournal.ts"
import type * as DatabaseModule from "../src/store/Database.ts"
import type * as MailStoreModule from "../src/store/MailStore.ts"
import { eachArg } from "./args.ts"
import { mailGoneBySenderAndId } from "./journalApi.ts"
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
  readonly outbound: typeof OutboundRecordModule
  readonly database: typeof DatabaseModule
  readonly mailStore: typeof MailStoreModule
}

const load = async (name: string, src: string): Promise<Build> => {
  const from = <M>(file: string): Promise<M> => import(pathToFileURL(path.join(src, file)).href)
  return {
    name,
    journalModule: await from<typeof StoreJournalModule>("broker/StoreJournal.ts"),
    records: await from<typeof DeliveryRecordsModule>("broker/DeliveryRecords.ts"),
    // The record's class is in OutboundRecord.ts since its table was split off; before, in OutboundRecords.ts.
    outbound: await from<typeof OutboundRecordModule>(
      fs.existsSync(path.join(src, "broker/OutboundRecord.ts")) ? "broker/OutboundRecord.ts" : "broker/OutboundRecords.ts"
    ),
    database: await from<typeof DatabaseModule>("store/Database.ts"),
    mailStore: await from<typeof MailStoreModule>("store/MailStore.ts")
  }
}

const SENDER = "scope\u0000sender"
const TARGET = "receiver"
/** The receiver's session key, every message's `targetKey`. */
const TARGET_KEY = `scope\u0000${TARGET}`
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
  targetKey: TARGET_KEY,
  targetId: TARGET,
  targetIdentity: undefined,
  queuedAt: now,
  askTimeoutMs: undefined
})

/**
 * The journal's methods this bench calls, as either build has them (the peer is only kept and handed back):
 * before the eighth stop `holdAckUntilRead(peer, frame, recordKey, byReceipt)` and `mailGone(recordKey)`,
 * since `holdAckUntilRead(peer, senderKey, id, byReceipt)` and `mailGone(senderKey, id)`, with the target session after
 * (optional since mailkey2, required since task byid; a build before ignores it).
 */
interface JournalLike {
  putMail(mail: Mail): void
  holdAckUntilRead(peer: object, a: string, b: string, byReceipt: boolean): void
  mailGone(a: string, b?: string, c?: string): void
  take(now: number): StoreJournalModule.TakenBatch | undefined
  committed(taken: StoreJournalModule.TakenBatch): void
  readonly recordSent?: (record: OutboundRecordModule.OutboundRecord, outcome: DeliveryRecordsModule.Outcome, at: number) => void
  readonly record: (sender: string, key: string, fingerprint: DeliveryRecordsModule.Fingerprint, outcome: DeliveryRecordsModule.Outcome, at: number) => void
}

/** One run's main-thread CPU µs per message and WAL bytes per message (the `-wal` file's size at its end). */
interface RunResult {
  readonly cpu: number
  readonly wal: number
  /** Scavenges: their cost (µs) per message, the young generation's bytes left after one (mean), bytes promoted per message. */
  readonly scavengeCost: number
  readonly survived: number
  readonly promoted: number
}

/** What V8's GC profiler saw of the scavenges in one run of `messages` messages. */
const scavenges = (result: v8.GCProfilerResult, messages: number) => {
  let cost = 0
  let count = 0
  let survived = 0
  let promoted = 0
  const used = (spaces: ReadonlyArray<v8.HeapSpaceStatistics>, name: string) =>
    spaces.find((space) => space.spaceName === name)?.spaceUsedSize ?? 0
  for (const gc of result.statistics) {
    if (gc.gcType !== "Scavenge") continue
    count++
    cost += gc.cost
    survived += used(gc.afterGC.heapSpaceStatistics, "new_space")
    promoted += used(gc.afterGC.heapSpaceStatistics, "old_space") - used(gc.beforeGC.heapSpaceStatistics, "old_space")
  }
  return { scavengeCost: cost / messages, survived: count === 0 ? 0 : survived / count, promoted: promoted / messages }
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
      // Since the eighth stop a released acknowledgement makes its frame (`frame()`) as the broker queues it;
      // before, it carried the string the bench built for it.
      for (const ack of ready) {
        const frame: unknown = ack.frame
        if (typeof frame === "function" && Reflect.apply(frame, ack, []) === undefined) throw new Error("no frame")
      }
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
    // Which calls this build's journal takes (see JournalLike).
    const bySenderAndId = mailGoneBySenderAndId(journal.mailGone)
    const gone = (recordKey: string, id: string): void => {
      if (bySenderAndId) journal.mailGone(SENDER, id, TARGET_KEY)
      else journal.mailGone(recordKey)
    }
    let late: Array<number> = []
    let lateKeys: Array<string> = []
    let now = 1_700_000_000_000
    const commit = () => {
      const taken = journal.take(now)
      if (taken === undefined) return Effect.void
      return Effect.map(store.commit(taken.batch), () => {
        journal.committed(taken)
        for (let j = 0; j < late.length; j++) gone(lateKeys[j]!, ids[late[j]!]!)
        late = []
        lateKeys = []
      })
    }
    const profiler = new v8.GCProfiler()
    profiler.start()
    const cpu = process.cpuUsage()
    let batch: Array<number> = []
    let keys: Array<string> = []
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!
      const recordKey = `${SENDER}\u0001${id}`
      const message = { id, timestamp: now, content: { text: TEXT } }
      const outbound = build.outbound.OutboundRecord.of(SENDER, TARGET, message, undefined)
      // The replay check `Send` makes first (`replayed`): the id is looked up, so its hash is cached.
      records.get(SENDER, id, now)
      journal.putMail(mailFor(recordKey, id, now))
      records.set(outbound, DELIVERED, now)
      if (bySenderAndId) journal.holdAckUntilRead(peer, SENDER, id, true)
      else journal.holdAckUntilRead(peer, `{"type":"delivered","id":"${id}"}\n`, recordKey, true)
      batch.push(i)
      keys.push(recordKey)
      if (batch.length === 64) {
        for (let j = 0; j < batch.length; j++) {
          if ((i + j) % 15 === 0) {
            late.push(batch[j]!)
            lateKeys.push(keys[j]!)
          } else gone(keys[j]!, ids[batch[j]!]!)
        }
        batch = []
        keys = []
        now += 2
      }
      if ((i + 1) % PER_COMMIT === 0) yield* commit()
    }
    for (let j = 0; j < batch.length; j++) gone(keys[j]!, ids[batch[j]!]!)
    yield* commit()
    const used = process.cpuUsage(cpu)
    const gc = scavenges(profiler.stop(), MESSAGES)
    if (released === 0) throw new Error("no acknowledgement was released")
    return { cpu: (used.user + used.system) / MESSAGES, wal: fs.statSync(`${file}-wal`).size / MESSAGES, ...gc }
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
        `runs ${cpu.map((x) => x.toFixed(2)).join(", ")}; WAL ${median(s.map((r) => r.wal)).toFixed(0)} bytes/message; ` +
        `scavenges ${median(s.map((r) => r.scavengeCost)).toFixed(2)} µs/message, ` +
        `${(median(s.map((r) => r.survived)) / 1024).toFixed(0)} KiB survived each, ` +
        `${median(s.map((r) => r.promoted)).toFixed(0)} bytes/message promoted`
    )
  }
  console.log(`${MESSAGES} messages, ${PER_COMMIT} per commit, ${REPS} reps; load ${os.loadavg().map((l) => l.toFixed(2)).join(" / ")}; Node ${process.version}`)
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
