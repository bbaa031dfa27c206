/**
 * Preloaded into a process by hand (`NODE_OPTIONS="--import <abs path>"`)
 * for docs/performance.md's "Frame parse, sixty-seventh stop": wraps
 * `JSON.parse` to count its calls and the characters it parsed, by the
 * frame's `type` (read from the parsed value), and writes the counts to
 * `$PARSE_COUNT_DIR/<pid>.json` when the process ends (exit, SIGTERM,
 * SIGINT; at either signal it then ends the process itself, ahead of the
 * target's own handler, so a target's shutdown is not what this measures).
 * A measurement aid: the wrapper costs time, so only the counts are worth
 * reading, never a run's speed. Never loaded by the broker itself.
 */
import fs from "node:fs"
import path from "node:path"

const dir = process.env.PARSE_COUNT_DIR ?? "."
const parse = JSON.parse
const counts = new Map()

JSON.parse = function countedParse(text, reviver) {
  const value = parse(text, reviver)
  const type = typeof value === "object" && value !== null && typeof value.type === "string" ? value.type : "(other)"
  const key = `${type}${reviver === undefined ? "" : " (reviver)"}`
  const c = counts.get(key) ?? { calls: 0, chars: 0 }
  c.calls++
  c.chars += typeof text === "string" ? text.length : String(text).length
  counts.set(key, c)
  return value
}

let written = false
const write = () => {
  if (written) return
  written = true
  const out = { pid: process.pid, argv: process.argv.slice(1), counts: Object.fromEntries(counts) }
  fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify(out, null, 1))
}
process.on("exit", write)
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    write()
    process.exit(0)
  })
}
