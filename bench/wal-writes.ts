/**
 * Kernel CPU of SQLite's WAL writes, growing a new file against rewriting one
 * (docs/performance.md, "Durable kernel time, thirty-eighth stop"):
 *
 *   npx node bench/wal-writes.ts [--frames N] [--reps N]
 *
 * SQLite appends a commit to the `-wal` file a frame at a time, each as two
 * `pwrite`s: the 24-byte frame header, then the 4,096-byte page. A broker's
 * WAL starts empty at every start and grows until the first checkpoint
 * (`WAL_AUTOCHECKPOINT_PAGES`); after it SQLite writes from the start of
 * the file again, over pages the kernel already holds. This writes N frames
 * in that pattern to a temp file, once into a new file and once over the
 * same file's frames, alternating, and prints the median system CPU
 * (`process.cpuUsage`) per frame of each: what the kernel charges for the
 * page cache's new pages on top of the copy. Nothing is fsynced, as with
 * `synchronous = NORMAL` between checkpoints. A measurement, not a test.
 */
import fs from "node:fs"
import os from "node:os"
import path from "node:path"
import { eachArg } from "./args.ts"
import { median } from "./stats.ts"

const USAGE = "usage: node bench/wal-writes.ts [--frames N] [--reps N]"
let FRAMES = 1_600
let REPS = 9
eachArg(process.argv.slice(2), USAGE, (arg) => {
  if (arg.key === "--frames") FRAMES = arg.int(10, 1_000_000)
  else if (arg.key === "--reps") REPS = arg.int(1, 100)
  else throw new Error(`unknown argument ${arg.raw}\n${USAGE}`)
})

/** SQLite's WAL layout: a 32-byte file header, then frames of a 24-byte header and a page. */
const WAL_HEADER = 32
const FRAME_HEADER = 24
const PAGE = 4_096

const header = Buffer.alloc(FRAME_HEADER, 1)
const page = Buffer.alloc(PAGE, 2)

/** Writes the frames to `file` (a new file when `fresh`) and returns the system CPU per frame, µs. */
const writeFrames = (file: string, fresh: boolean): number => {
  if (fresh) fs.rmSync(file, { force: true })
  const fd = fs.openSync(file, fresh ? "w+" : "r+")
  try {
    const before = process.cpuUsage()
    for (let i = 0; i < FRAMES; i++) {
      const at = WAL_HEADER + i * (FRAME_HEADER + PAGE)
      fs.writeSync(fd, header, 0, FRAME_HEADER, at)
      fs.writeSync(fd, page, 0, PAGE, at + FRAME_HEADER)
    }
    return process.cpuUsage(before).system / FRAMES
  } finally {
    fs.closeSync(fd)
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wal-writes-"))
try {
  const file = path.join(dir, "bench.db-wal")
  const grown: Array<number> = []
  const rewritten: Array<number> = []
  for (let rep = 0; rep < REPS; rep++) {
    grown.push(writeFrames(file, true))
    rewritten.push(writeFrames(file, false))
  }
  const mb = (WAL_HEADER + FRAMES * (FRAME_HEADER + PAGE)) / 1e6
  console.log(`| WAL file | system CPU µs per frame (2 pwrites) |\n|---|---:|`)
  console.log(`| new, growing | ${median(grown).toFixed(2)} |`)
  console.log(`| rewritten in place | ${median(rewritten).toFixed(2)} |`)
  console.log(
    `\n${FRAMES} frames (${mb.toFixed(1)} MB), ${REPS} reps (median); file system of ${os.tmpdir()}; ` +
      `load ${os.loadavg().map((l) => l.toFixed(2)).join(" / ")}; Node ${process.version}`
  )
} finally {
  fs.rmSync(dir, { recursive: true, force: true })
}
