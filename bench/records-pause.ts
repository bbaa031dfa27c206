/**
 * The pause a full outbound records' table costs the event loop when V8
 * rebuilds it (docs/performance.md, "The records' table and the mail table
 * per message"), one table against the same entries split over shards by
 * the hash's low bits, in one process, alternating:
 *
 *   npx node --expose-gc bench/records-pause.ts [--reps N] [--live N] [--messages N] [--shards N]
 *
 * What the broker's table (OutboundRecords.ts) sees at steady state: about
 * `--live` records kept (DeliveryRecords' byte bound keeps ~215,000 of the
 * bench's), and per message one insert of a new 30-bit hash and one delete
 * of the oldest. Every delete leaves a deleted slot; when they fill the
 * table V8 rebuilds it at the same capacity in one step, copying every live
 * entry: a pause of the whole event loop. Split over `--shards` tables,
 * each rebuild copies a shard's entries, at other times than the rest.
 *
 * Printed per variant: the median over reps of the CPU ns per message, the
 * longest single message (its insert and delete) and how many messages
 * took over 1 ms, all in this process's CPU time (`process.cpuUsage`
 * around each message, whose own cost, a system call, is in every figure
 * alike): a loaded machine's scheduler taking the core away is not counted,
 * a collection during a message is, in both variants alike.
 */
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"

const USAGE = "usage: node bench/records-pause.ts [--reps N] [--live N] [--messages N] [--shards N]"
let REPS = 5
let LIVE = 215_000
let MESSAGES = 1_000_000
let SHARDS = 16
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--reps") REPS = arg.int(1, 100)
  else if (arg.key === "--live") LIVE = arg.int(1_000, 5_000_000)
  else if (arg.key === "--messages") MESSAGES = arg.int(1_000, 50_000_000)
  else if (arg.key === "--shards") SHARDS = arg.int(2, 1_024)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

/** One variant's table: set and delete by a 30-bit hash. */
interface Table {
  readonly set: (hash: number, value: object) => void
  readonly delete: (hash: number) => void
}

const single = (): Table => {
  const map = new Map<number, object>()
  return { set: (hash, value) => void map.set(hash, value), delete: (hash) => void map.delete(hash) }
}

const sharded = (shards: number): Table => {
  const maps = Array.from({ length: shards }, () => new Map<number, object>())
  const mask = shards - 1
  return {
    set: (hash, value) => void maps[hash & mask]!.set(hash, value),
    delete: (hash) => void maps[hash & mask]!.delete(hash)
  }
}

/** A seeded 30-bit hash stream (xorshift), the same for every variant of a rep. */
const hashes = (count: number, seed: number): Int32Array => {
  const out = new Int32Array(count)
  let x = seed | 1
  for (let i = 0; i < count; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 0x3fffffff
  }
  return out
}

interface Run {
  readonly nsPerMessage: number
  readonly longestMs: number
  readonly overOneMs: number
}

const run = (table: Table, keys: Int32Array): Run => {
  const value = {}
  for (let i = 0; i < LIVE; i++) table.set(keys[i]!, value)
  globalThis.gc?.()
  let longest = 0
  let overOneMs = 0
  let total = 0
  for (let i = LIVE; i < LIVE + MESSAGES; i++) {
    // This thread's CPU time, not the wall clock's: a loaded machine's scheduler taking the core away
    // between two readings costs the thread nothing, and is no pause of ours.
    const start = process.cpuUsage()
    table.set(keys[i]!, value)
    table.delete(keys[i - LIVE]!)
    const used = process.cpuUsage(start)
    const took = used.user + used.system
    total += took
    if (took > longest) longest = took
    if (took > 1_000) overOneMs++
  }
  return { nsPerMessage: (total * 1_000) / MESSAGES, longestMs: longest / 1_000, overOneMs }
}

const variants: ReadonlyArray<readonly [string, () => Table]> = [
  ["one Map", single],
  [`${SHARDS} Maps`, () => sharded(SHARDS)]
]
const results = new Map<string, Array<Run>>(variants.map(([name]) => [name, []]))
for (let rep = 0; rep < REPS; rep++) {
  const keys = hashes(LIVE + MESSAGES, 0x9e3779b9 + rep)
  const order = rep % 2 === 0 ? variants : [...variants].reverse()
  for (const [name, make] of order) results.get(name)!.push(run(make(), keys))
}
console.log(`| table | CPU ns/message | longest message, ms | messages over 1 ms |`)
console.log(`|---|---:|---:|---:|`)
for (const [name, runs] of results) {
  const ns = median(runs.map((r) => r.nsPerMessage)).toFixed(0)
  const longest = runs.map((r) => r.longestMs.toFixed(1)).join(", ")
  const over = runs.map((r) => r.overOneMs).join(", ")
  console.log(`| ${name} | ${ns} | ${longest} | ${over} |`)
}
console.log(`(${REPS} reps, alternating; ${LIVE.toLocaleString("en")} live entries, ${MESSAGES.toLocaleString("en")} messages each)`)
