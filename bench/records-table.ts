/**
 * The outbound records' table at steady state, in one process, alternating
 * (docs/performance.md, "Replay records at steady state, eighth stop"):
 *
 *   npx node --expose-gc bench/records-table.ts [--reps N] [--fill N] [--messages N]
 *
 * What the broker does to its records' table per new message once it is
 * full (OutboundRecords.ts, with DeliveryRecords.ts' and Receipts.ts'
 * bounds at their defaults): the replay check's lookup (a miss), the claim
 * (an insert), the route kept and the oldest route dropped (65,536 routes),
 * the replay part kept and, past 262,144 records, a sixteenth of them
 * dropped oldest first (the heaviest-sender path: in a bench every record is
 * inside the window), each leaving the table. Only the table's structure
 * differs between variants; the records, lists and bounds are the same code:
 *
 * - `map-5`: a `Map` keyed by the id string, as the broker had it before
 *   this stop: find = get; claim = get + set; release = get + delete.
 * - `map-3`: the same `Map`, the claim answered from the last lookup when
 *   nothing changed in between (set only) and a release of an id no other
 *   sender holds deleting without a get.
 * - `smi-3`: `map-3`'s operations on a `Map` keyed by a 30-bit hash of the id
 *   computed here (seeded), records of one hash chained on the record: the
 *   broker's table since this stop.
 * - `open-3`: open addressing in typed arrays (the hash in an `Int32Array`,
 *   the record in a parallel array; linear probing, load ≤ ½, deletion by
 *   backward shift), the same three operations.
 *
 * Ids are fresh strings per message, made by `JSON.parse` as the broker's
 * are: `short` like the bench's (`run-0-123456`), `uuid` 36 characters.
 * Each rep builds every variant's table afresh (`--fill` messages,
 * unmeasured), then measures `--messages` more (from a collected heap under
 * `--expose-gc`); the variants' order rotates per rep. Printed: CPU ns per message (user + system, this process), the
 * median over reps, and each variant against `map-5` of the same rep.
 *
 * Size: past 400 lines because the four tables stay side by side in one
 * file, so that they run in one process, on the same records and lists.
 */
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"

const USAGE = "usage: node bench/records-table.ts [--reps N] [--fill N] [--messages N]"
let REPS = 5
let FILL = 300_000
let MESSAGES = 200_000
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--reps") REPS = arg.int(1, 100)
  else if (arg.key === "--fill") FILL = arg.int(0, 10_000_000)
  else if (arg.key === "--messages") MESSAGES = arg.int(1_000, 10_000_000)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

const MAX_RECORDS = 262_144
const MAX_ROUTES = 65_536

/** The broker record's fields (OutboundRecord.ts), so the heap holds objects of its size; `chain` for `smi-3`. */
class Rec {
  readonly senderKey: string
  readonly id: string
  targetId = ""
  textLength = 0
  textHash = 0
  rare: object | undefined = undefined
  outcome: object | undefined = undefined
  recordedAt = 0
  bytes = 0
  olderRecord: Rec | undefined = undefined
  newerRecord: Rec | undefined = undefined
  parts = 0
  senderIncarnation = 0
  receiverKey = ""
  receiverIncarnation = 0
  routedAt = 0
  olderRoute: Rec | undefined = undefined
  newerRoute: Rec | undefined = undefined
  hash = 0
  chain: Rec | undefined = undefined
  constructor(senderKey: string, id: string) {
    this.senderKey = senderKey
    this.id = id
  }
}

const RECORDED = 1
const ROUTED = 2
const IN_TABLE = 4
const SHARED = 8

/** The lists and bounds, shared by every variant; the table's structure is the subclass's. */
abstract class Table {
  abstract readonly name: string
  private oldestRecord: Rec | undefined = undefined
  private newestRecord: Rec | undefined = undefined
  private oldestRoute: Rec | undefined = undefined
  private newestRoute: Rec | undefined = undefined
  records = 0
  routes = 0

  abstract find(sender: string, id: string): Rec | undefined
  abstract claim(record: Rec): Rec
  abstract release(record: Rec): void

  /** One new message, as the broker handles it at steady state. */
  send(sender: string, id: string, now: number): void {
    const candidate = new Rec(sender, id)
    candidate.targetId = "target"
    candidate.textLength = 100
    candidate.textHash = now
    if (this.find(sender, id) !== undefined) throw new Error(`id ${id} seen twice`)
    const record = this.claim(candidate)
    this.keepRoute(record, now)
    while (this.routes > MAX_ROUTES) this.dropRoute(this.oldestRoute!)
    this.claim(record)
    this.keepRecord(record, now)
    if (this.records > MAX_RECORDS) {
      let toDrop = Math.max(1, this.records >> 4)
      const victims: Array<Rec> = []
      for (let r = this.oldestRecord; r !== undefined && toDrop > 0; r = r.newerRecord, toDrop--) victims.push(r)
      for (const victim of victims) this.dropRecord(victim)
    }
  }

  private keepRecord(record: Rec, at: number): void {
    this.records++
    record.parts |= RECORDED
    record.recordedAt = at
    record.olderRecord = this.newestRecord
    if (this.newestRecord !== undefined) this.newestRecord.newerRecord = record
    else this.oldestRecord = record
    this.newestRecord = record
  }

  private keepRoute(record: Rec, at: number): void {
    this.routes++
    record.parts |= ROUTED
    record.routedAt = at
    record.olderRoute = this.newestRoute
    if (this.newestRoute !== undefined) this.newestRoute.newerRoute = record
    else this.oldestRoute = record
    this.newestRoute = record
  }

  private dropRecord(record: Rec): void {
    if (record.olderRecord !== undefined) record.olderRecord.newerRecord = record.newerRecord
    else this.oldestRecord = record.newerRecord
    if (record.newerRecord !== undefined) record.newerRecord.olderRecord = record.olderRecord
    else this.newestRecord = record.olderRecord
    record.olderRecord = record.newerRecord = undefined
    record.parts &= ~RECORDED
    this.records--
    if ((record.parts & ROUTED) === 0) this.release(record)
  }

  private dropRoute(record: Rec): void {
    if (record.olderRoute !== undefined) record.olderRoute.newerRoute = record.newerRoute
    else this.oldestRoute = record.newerRoute
    if (record.newerRoute !== undefined) record.newerRoute.olderRoute = record.olderRoute
    else this.newestRoute = record.olderRoute
    record.olderRoute = record.newerRoute = undefined
    record.parts &= ~ROUTED
    this.routes--
    if ((record.parts & RECORDED) === 0) this.release(record)
  }
}

type Held = Rec | Array<Rec>

/** The broker's table before this stop: five lookups per message at steady state. */
class Map5 extends Table {
  readonly name = "map-5"
  private readonly byId = new Map<string, Held>()

  find(sender: string, id: string): Rec | undefined {
    const found = this.byId.get(id)
    if (found === undefined) return undefined
    if (!Array.isArray(found)) return found.senderKey === sender ? found : undefined
    for (const r of found) if (r.senderKey === sender) return r
    return undefined
  }

  claim(record: Rec): Rec {
    if ((record.parts & IN_TABLE) !== 0) return record
    const found = this.byId.get(record.id)
    if (found === undefined) this.byId.set(record.id, record)
    else if (!Array.isArray(found)) {
      if (found.senderKey === record.senderKey) return found
      this.byId.set(record.id, [found, record])
    } else {
      for (const other of found) if (other.senderKey === record.senderKey) return other
      found.push(record)
    }
    record.parts |= IN_TABLE
    return record
  }

  release(record: Rec): void {
    record.parts &= ~IN_TABLE
    const found = this.byId.get(record.id)
    if (found === record) this.byId.delete(record.id)
    else if (Array.isArray(found)) {
      const at = found.indexOf(record)
      if (at >= 0) found.splice(at, 1)
      if (found.length === 1) this.byId.set(record.id, found[0]!)
    }
  }
}

/** `map-5`'s `Map`, with the claim answered from the last lookup and a release without a get. */
class Map3 extends Table {
  readonly name = "map-3"
  private readonly byId = new Map<string, Held>()
  private changes = 0
  private lastId: string | undefined = undefined
  private lastHeld: Held | undefined = undefined
  private lastChanges = -1

  find(sender: string, id: string): Rec | undefined {
    const found = this.byId.get(id)
    this.lastId = id
    this.lastHeld = found
    this.lastChanges = this.changes
    if (found === undefined) return undefined
    if (!Array.isArray(found)) return found.senderKey === sender ? found : undefined
    for (const r of found) if (r.senderKey === sender) return r
    return undefined
  }

  claim(record: Rec): Rec {
    if ((record.parts & IN_TABLE) !== 0) return record
    const found = this.lastId === record.id && this.lastChanges === this.changes ? this.lastHeld : this.byId.get(record.id)
    if (found === undefined) this.byId.set(record.id, record)
    else if (!Array.isArray(found)) {
      if (found.senderKey === record.senderKey) return found
      this.byId.set(record.id, [found, record])
      found.parts |= SHARED
      record.parts |= SHARED
    } else {
      for (const other of found) if (other.senderKey === record.senderKey) return other
      found.push(record)
      record.parts |= SHARED
    }
    this.changes++
    record.parts |= IN_TABLE
    return record
  }

  release(record: Rec): void {
    this.changes++
    if ((record.parts & SHARED) === 0) {
      record.parts &= ~IN_TABLE
      this.byId.delete(record.id)
      return
    }
    record.parts &= ~(IN_TABLE | SHARED)
    const found = this.byId.get(record.id)
    if (Array.isArray(found)) {
      const at = found.indexOf(record)
      if (at >= 0) found.splice(at, 1)
      if (found.length === 1) {
        found[0]!.parts &= ~SHARED
        this.byId.set(record.id, found[0]!)
      }
    }
  }
}

/** A seeded 32-bit string hash (FNV-1a steps, murmur3's finaliser). */
const hashId = (id: string, seed: number): number => {
  let h = seed ^ 0x811c9dc5
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

/** `map-3`'s operations on a `Map` keyed by a 30-bit hash (a small integer), one chain of records per hash. */
class Smi3 extends Table {
  readonly name = "smi-3"
  private readonly byHash = new Map<number, Rec>()
  private readonly seed = (Math.random() * 0x100000000) >>> 0
  private changes = 0
  private lastId: string | undefined = undefined
  private lastHash = 0
  private lastHeld: Rec | undefined = undefined
  private lastChanges = -1

  find(sender: string, id: string): Rec | undefined {
    const hash = hashId(id, this.seed) & 0x3fffffff
    const found = this.byHash.get(hash)
    this.lastId = id
    this.lastHash = hash
    this.lastHeld = found
    this.lastChanges = this.changes
    for (let r = found; r !== undefined; r = r.chain) if (r.id === id && r.senderKey === sender) return r
    return undefined
  }

  claim(record: Rec): Rec {
    if ((record.parts & IN_TABLE) !== 0) return record
    let hash: number
    let found: Rec | undefined
    if (this.lastId === record.id && this.lastChanges === this.changes) {
      hash = this.lastHash
      found = this.lastHeld
    } else {
      hash = hashId(record.id, this.seed) & 0x3fffffff
      found = this.byHash.get(hash)
    }
    for (let r = found; r !== undefined; r = r.chain) if (r.id === record.id && r.senderKey === record.senderKey) return r
    record.hash = hash
    record.chain = found
    this.byHash.set(hash, record)
    this.changes++
    record.parts |= IN_TABLE
    return record
  }

  release(record: Rec): void {
    this.changes++
    record.parts &= ~IN_TABLE
    const head = this.byHash.get(record.hash)
    if (head === record) {
      if (record.chain === undefined) this.byHash.delete(record.hash)
      else this.byHash.set(record.hash, record.chain)
    } else {
      for (let r = head; r !== undefined; r = r.chain) {
        if (r.chain === record) {
          r.chain = record.chain
          break
        }
      }
    }
    record.chain = undefined
  }
}

/** Open addressing: hashes in an Int32Array (0 = empty), records beside them; load ≤ ½. */
class Open3 extends Table {
  readonly name = "open-3"
  private hashes = new Int32Array(1 << 10)
  private slots: Array<Rec | undefined> = new Array<Rec | undefined>(1 << 10).fill(undefined)
  private mask = (1 << 10) - 1
  private count = 0
  private readonly seed = (Math.random() * 0x100000000) >>> 0
  private changes = 0
  private lastId: string | undefined = undefined
  private lastSlot = 0
  private lastHash = 0
  private lastChanges = -1

  private hashOf(id: string): number {
    const hash = hashId(id, this.seed)
    return hash === 0 ? 1 : hash
  }

  find(sender: string, id: string): Rec | undefined {
    const hash = this.hashOf(id)
    const hashes = this.hashes
    let i = hash & this.mask
    for (;;) {
      const h = hashes[i]!
      if (h === 0) break
      if (h === hash) {
        const r = this.slots[i]!
        if (r.id === id && r.senderKey === sender) return r
      }
      i = (i + 1) & this.mask
    }
    this.lastId = id
    this.lastSlot = i
    this.lastHash = hash
    this.lastChanges = this.changes
    return undefined
  }

  claim(record: Rec): Rec {
    if ((record.parts & IN_TABLE) !== 0) return record
    if (this.lastId !== record.id || this.lastChanges !== this.changes) {
      const found = this.find(record.senderKey, record.id)
      if (found !== undefined) return found
    }
    const slot = this.lastSlot
    this.hashes[slot] = this.lastHash
    this.slots[slot] = record
    record.hash = this.lastHash
    record.parts |= IN_TABLE
    this.changes++
    if (++this.count * 2 > this.hashes.length) this.grow()
    return record
  }

  private grow(): void {
    const old = this.slots
    const size = this.hashes.length * 2
    this.hashes = new Int32Array(size)
    this.slots = new Array<Rec | undefined>(size).fill(undefined)
    this.mask = size - 1
    for (const r of old) {
      if (r === undefined) continue
      let i = r.hash & this.mask
      while (this.hashes[i] !== 0) i = (i + 1) & this.mask
      this.hashes[i] = r.hash
      this.slots[i] = r
    }
  }

  release(record: Rec): void {
    this.changes++
    record.parts &= ~IN_TABLE
    const hashes = this.hashes
    const slots = this.slots
    const mask = this.mask
    let i = record.hash & mask
    while (slots[i] !== record) i = (i + 1) & mask
    // Backward shift: pull later members of the cluster into the hole when their home allows it.
    let hole = i
    for (let j = (i + 1) & mask; hashes[j] !== 0; j = (j + 1) & mask) {
      const home = hashes[j]! & mask
      if (((j - home) & mask) >= ((j - hole) & mask)) {
        hashes[hole] = hashes[j]!
        slots[hole] = slots[j]
        hole = j
      }
    }
    hashes[hole] = 0
    slots[hole] = undefined
    this.count--
  }
}

const makers: ReadonlyArray<() => Table> = [() => new Map5(), () => new Map3(), () => new Smi3(), () => new Open3()]
const NAMES = makers.map((make) => make().name)

/** A fresh string parsed from JSON text, as a frame's message id is. */
const parsedId = (json: string): string => {
  const id: unknown = JSON.parse(json)
  if (typeof id !== "string") throw new Error(`not a string: ${json}`)
  return id
}

const shapes = {
  short: (n: number): string => parsedId(`"run-0-${n}"`),
  uuid: (n: number): string => parsedId(`"6f1c2e4a-9b7d-4c3e-8a21-${n.toString(16).padStart(12, "0")}"`)
}

/** `gc()` when node runs with `--expose-gc`. */
const collect: unknown = Reflect.get(globalThis, "gc")
const collectOrNot = typeof collect === "function" ? () => Reflect.apply(collect, undefined, []) : undefined

/** CPU ns per measured message of one fresh table. */
const measure = (make: () => Table, idOf: (n: number) => string): number => {
  const table = make()
  const sender = "scope\u0001sender-session"
  let n = 0
  for (; n < FILL; n++) table.send(sender, idOf(n), n)
  // Under `--expose-gc`, every variant's measured phase starts from a collected heap.
  collectOrNot?.()
  const start = process.cpuUsage()
  for (const end = n + MESSAGES; n < end; n++) table.send(sender, idOf(n), n)
  const used = process.cpuUsage(start)
  // The table answers as the broker's must: the newest ids found, one long evicted not.
  for (let k = n - 1_000; k < n; k++) if (table.find(sender, idOf(k)) === undefined) throw new Error(`${table.name} lost ${k}`)
  if (table.find(sender, idOf(0)) !== undefined) throw new Error(`${table.name} kept an evicted id`)
  if (table.records > MAX_RECORDS || table.routes > MAX_ROUTES) throw new Error(`${table.name} over its bounds`)
  return ((used.user + used.system) * 1000) / MESSAGES
}

for (const [shape, idOf] of Object.entries(shapes)) {
  const results = new Map<string, Array<number>>(NAMES.map((name) => [name, []]))
  const ratios = new Map<string, Array<number>>(NAMES.map((name) => [name, []]))
  for (let rep = 0; rep < REPS; rep++) {
    const order = makers.map((_, i) => makers[(i + rep) % makers.length]!)
    const thisRep = new Map<string, number>()
    for (const make of order) {
      const ns = measure(make, idOf)
      const name = make().name
      thisRep.set(name, ns)
      results.get(name)!.push(ns)
    }
    for (const name of NAMES) ratios.get(name)!.push(thisRep.get(name)! / thisRep.get("map-5")!)
  }
  console.log(`\nids: ${shape}; ${FILL} filled, ${MESSAGES} measured, ${REPS} reps (CPU ns per message: median, range; × map-5 median)`)
  console.log("| variant | ns/msg median | range | × map-5 |")
  console.log("|---|---:|---:|---:|")
  for (const name of NAMES) {
    const xs = results.get(name)!
    console.log(`| ${name} | ${median(xs).toFixed(0)} | ${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)} | ${median(ratios.get(name)!).toFixed(2)} |`)
  }
}
