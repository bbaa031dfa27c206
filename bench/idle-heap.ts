/**
 * Where an idle session's heap goes (issue 16, docs/performance.md "Idle
 * sessions, third stop"): reads two V8 heap snapshots of one broker holding
 * different numbers of idle sessions and prints the self size and the count
 * of objects per constructor (V8's node type and name), their difference
 * divided by the difference in sessions, largest first. Take the snapshots
 * with `bench/scale-sockets.ts --snapshot` against a broker started with
 * `--heapsnapshot-signal=SIGUSR2`, once with each count:
 *
 *   node bench/idle-heap.ts --small a.heapsnapshot --large b.heapsnapshot --sessions 2000 [--top 40]
 *     [--closures-by-name]
 *
 * Names are readable with a broker run from the unbundled build (the bundle
 * is minified): as `--cmd`, `node --heapsnapshot-signal=SIGUSR2 run.mjs broker
 * --dir {dir} --durability memory`, where run.mjs (beside dist/) holds
 * `const { parseBrokerArgv } = await import("./dist/cli/argv.js")`,
 * `const { runBrokerProcess } = await import("./dist/cli/brokerEntry.js")`,
 * `runBrokerProcess(parseBrokerArgv(process.argv.slice(2)))`. Writing a
 * snapshot of 4,000 sessions can take past 20 s on a loaded machine: raise
 * `--snapshot-wait`.
 *
 * Self (shallow) sizes, not retained ones: every object an idle session
 * keeps is counted once, under its own constructor, and the rows add up to
 * the heap's growth.
 */
import fs from "node:fs"

const arg = (name: string, fallback?: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  const value = i >= 0 ? process.argv[i + 1] : fallback
  if (value === undefined) throw new Error(`--${name} is required`)
  return value
}

interface Snapshot {
  readonly snapshot: {
    readonly meta: { readonly node_fields: ReadonlyArray<string>; readonly node_types: ReadonlyArray<unknown> }
  }
  readonly nodes: ReadonlyArray<number>
  readonly strings: ReadonlyArray<string>
}

const byName = process.argv.includes("--closures-by-name")

/** Self size and count per "type:name" (closures unless `--closures-by-name`, arrays, strings and code grouped by type only). */
const aggregate = (file: string): Map<string, { size: number; count: number }> => {
  const parsed: Snapshot = JSON.parse(fs.readFileSync(file, "utf8"))
  const fields = parsed.snapshot.meta.node_fields
  const types = parsed.snapshot.meta.node_types[0]
  if (!Array.isArray(types)) throw new Error(`${file}: unexpected snapshot meta`)
  const width = fields.length
  const typeAt = fields.indexOf("type")
  const nameAt = fields.indexOf("name")
  const sizeAt = fields.indexOf("self_size")
  const rows = new Map<string, { size: number; count: number }>()
  const byTypeOnly = new Set(["string", "concatenated string", "sliced string", "code", "number", "array"])
  if (!byName) byTypeOnly.add("closure")
  for (let i = 0; i < parsed.nodes.length; i += width) {
    const type = String(types[parsed.nodes[i + typeAt]!])
    const name = parsed.strings[parsed.nodes[i + nameAt]!] ?? "?"
    const key = byTypeOnly.has(type) ? `(${type})` : `${type}:${name.slice(0, 60)}`
    const row = rows.get(key) ?? { size: 0, count: 0 }
    row.size += parsed.nodes[i + sizeAt]!
    row.count += 1
    rows.set(key, row)
  }
  return rows
}

const small = aggregate(arg("small"))
const large = aggregate(arg("large"))
const sessions = Number(arg("sessions"))
const top = Number(arg("top", "40"))
const diff = [...new Set([...small.keys(), ...large.keys()])].map((key) => {
  const a = small.get(key) ?? { size: 0, count: 0 }
  const b = large.get(key) ?? { size: 0, count: 0 }
  return { key, bytes: (b.size - a.size) / sessions, objects: (b.count - a.count) / sessions }
}).sort((x, y) => y.bytes - x.bytes)
const total = diff.reduce((sum, row) => sum + row.bytes, 0)
console.log(`| constructor | bytes per session | objects per session |`)
console.log(`|---|---:|---:|`)
for (const row of diff.slice(0, top)) {
  console.log(`| ${row.key.replaceAll("|", "\\|")} | ${row.bytes.toFixed(0)} | ${row.objects.toFixed(2)} |`)
}
const rest = diff.slice(top).reduce((sum, row) => sum + row.bytes, 0)
console.log(`| (the rest) | ${rest.toFixed(0)} | |`)
console.log(`| total | ${total.toFixed(0)} | |`)
