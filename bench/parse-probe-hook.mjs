/**
 * Preloaded into a bench target by hand (`NODE_OPTIONS="--import <abs
 * path>"`) for docs/performance.md's "Frame parse, sixty-seventh stop":
 * times V8's `JSON.parse` of a frame shaped as w64's `send` (the bench
 * client's fields and lengths; 100 characters of other text) inside the target's own
 * process — once as the hook loads (a fresh heap, nothing of the target run
 * yet) and once at SIGTERM, when the bench stops the target right after its
 * workload (the heap, maps and compiled code the workload left) — and writes
 * both to `$PARSE_PROBE_DIR/<pid>.json`. Each pass decodes 1,000 frames
 * from one buffer (`toString`), 40 times over, with and without
 * `JSON.parse`; the parse's cost is the difference, in the main thread's CPU
 * time (`process.threadCpuUsage`, the median of 7 rounds), so time the
 * process spends preempted on a shared machine is not counted; the fastest
 * round's wall time (`hrtime`) is written beside it as a check. It adds no
 * handler that ends the process:
 * the target's own SIGTERM handling runs after it. A measurement aid,
 * never loaded by the broker itself.
 */
import fs from "node:fs"
import path from "node:path"

const dir = process.env.PARSE_PROBE_DIR ?? "."
const parse = JSON.parse
const filler = "The quick brown fox jumps over the lazy dog. "
let text = ""
while (text.length < 100) text += filler
text = text.slice(0, 100)
const frames = []
for (let n = 1; n <= 1000; n++) {
  const id = `w64-0000-${String(n).padStart(12, "0")}`.padEnd(36, "-")
  const s = `{"type":"send","to":"bench-rx","message":{"id":"${id}","timestamp":${1796000000000 + n},"content":{"text":${
    JSON.stringify(text)
  }},"senderSequence":${n}}}`
  const b = Buffer.from(s)
  const h = Buffer.alloc(4)
  h.writeUInt32BE(b.length)
  frames.push(h, b)
}
const wire = Buffer.concat(frames)
const offsets = []
for (let o = 0; o < wire.length;) {
  const size = wire.readUInt32BE(o)
  offsets.push(o + 4, o + 4 + size)
  o += 4 + size
}
const threadUs = () => {
  const u = process.threadCpuUsage()
  return u.user + u.system
}
let sink = 0
const REPS = 40
const wallUs = () => Number(process.hrtime.bigint()) / 1000
const pass = (withParse, clock) => {
  const t0 = clock()
  for (let r = 0; r < REPS; r++) {
    for (let i = 0; i < offsets.length; i += 2) {
      const s = wire.toString("utf8", offsets[i], offsets[i + 1])
      if (withParse) sink += parse(s).type.length
      else sink += s.length
    }
  }
  return (clock() - t0) / (REPS * offsets.length / 2)
}
const probe = () => {
  pass(true, wallUs) // warm-up: both loops compiled before one is timed
  pass(false, wallUs)
  const decode = []
  const both = []
  const decodeWall = []
  const bothWall = []
  for (let r = 0; r < 7; r++) {
    decode.push(pass(false, threadUs))
    both.push(pass(true, threadUs))
    decodeWall.push(pass(false, wallUs))
    bothWall.push(pass(true, wallUs))
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  return {
    decodeUs: med(decode),
    decodeAndParseUs: med(both),
    parseUs: med(both) - med(decode),
    parseWallMinUs: Math.min(...bothWall) - Math.min(...decodeWall),
    heapUsedMiB: process.memoryUsage().heapUsed / 1048576
  }
}
const atStart = probe()
process.on("SIGTERM", () => {
  const atEnd = probe()
  const out = { pid: process.pid, argv: process.argv.slice(1), execArgv: process.execArgv, atStart, atEnd, sink }
  fs.writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify(out, null, 1))
})
