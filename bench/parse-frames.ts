/**
 * Microbench for docs/performance.md's "Frame parse, sixty-seventh stop":
 * the CPU cost of parsing w64's frames the broker's way (`FrameDecoder.push`
 * decodes each payload to a string, then `parseFrameText`) and the raw
 * relay's way (`parsePayload`: `toString`, then `JSON.parse`), on the exact
 * frames the bench client writes (a `send` with 100 characters of text; the
 * `received` confirmation it writes to our broker after each chunk holding
 * messages), with the process in one of two states:
 *
 * - `clean`: nothing else kept in the heap, nothing else done per frame;
 * - `retained`: about 60 MiB of live objects first (maps of small records
 *   with string keys, as the broker's tables are), then, per frame, the
 *   parsed frame kept in a ring of 20,000 (`--keep`; as a replay record holds
 *   its message) and about 1 KiB of short-lived garbage (the rest of a
 *   message's handling), so the young generation fills and parsed frames are
 *   promoted as in the broker.
 *
 * Each case runs with and without the parse (the same decode, the same
 * per-frame extra work), so "parse" is the difference: µs of this thread's
 * CPU (`process.threadCpuUsage`, preemption on a shared machine not
 * counted) per frame, the median of the rounds, cases interleaved in each
 * round. Run it under each Node flag set to compare, e.g.:
 *
 *   npx node bench/parse-frames.ts --state clean
 *   npx node --max-semi-space-size=4 bench/parse-frames.ts --state retained
 *   npx node --max-semi-space-size=4 bench/parse-frames.ts --state retained --keep 0
 */
import { parseArgs } from "node:util"
import { FrameDecoder } from "../src/protocol/framing.ts"
import { isFrameDecodeError, parseFrameText } from "../src/protocol/decode.ts"
import { encodeText, parsePayload } from "./framing.ts"

const { values } = parseArgs({
  options: {
    state: { type: "string", default: "clean" },
    rounds: { type: "string", default: "9" },
    frames: { type: "string", default: "100000" },
    keep: { type: "string", default: "20000" }
  }
})
const state = values.state === "retained" ? "retained" : "clean"
const rounds = Number(values.rounds)
const count = Number(values.frames)

/** 100 characters of text, as bench/harness.ts's `makeText(100)` gives (its filler's exact letters do not matter to the parse). */
const TEXT = "The quick brown fox jumps over the lazy dog. ".repeat(3).slice(0, 100)
/** `benchMessageId` (bench/workloads.ts): 36 characters. */
const messageId = (n: number): string => `w64-0000-${String(n).padStart(12, "0")}`.padEnd(36, "-")
/** The send frame exactly as `BenchClient.send` writes it in w64 (id, timestamp and sequence vary per frame). */
const sendText = (n: number): string =>
  `{"type":"send","to":"bench-rx","message":{"id":${JSON.stringify(messageId(n))},"timestamp":${
    1_796_000_000_000 + n
  },"content":{"text":${JSON.stringify(TEXT)}},"senderSequence":${n}}}`
const receivedText = (n: number): string => `{"type":"received","frames":${n}}`

/** One wire buffer per kind: 1,000 frames length-prefixed back to back, as a socket chunk holds them. */
const wire = (make: (n: number) => string): Buffer => {
  const parts: Array<Buffer> = []
  for (let n = 1; n <= 1000; n++) parts.push(encodeText(make(n)))
  return Buffer.concat(parts)
}

/** Where each frame's payload is in a wire buffer: [start, end) pairs. */
const offsetsOf = (buf: Buffer): Array<number> => {
  const out: Array<number> = []
  for (let o = 0; o < buf.length;) {
    const size = buf.readUInt32BE(o)
    out.push(o + 4, o + 4 + size)
    o += 4 + size
  }
  return out
}

interface Held {
  readonly id: string
  readonly at: number
  readonly to: string
  readonly n: number
}
const tables: Array<Map<string, Held>> = []
if (state === "retained") {
  for (let t = 0; t < 6; t++) {
    const m = new Map<string, Held>()
    for (let i = 0; i < 100_000; i++) {
      const id = `${t}-${i}-${"k".repeat(24)}`
      m.set(id, { id, at: i, to: `session-${i % 97}`, n: i })
    }
    tables.push(m)
  }
}
/** `retained`'s ring of kept frames (`--keep 0`: none kept, every parsed frame garbage at once). */
const keep = Number(values.keep)
const ring: Array<unknown> = new Array(Math.max(1, keep)).fill(undefined)
let ringAt = 0
let sink = 0

/** What each frame's handling does besides the decode and the parse, by state. */
const afterFrame = (frame: unknown): void => {
  if (state === "retained") {
    if (keep > 0) {
      ring[ringAt] = frame
      ringAt = (ringAt + 1) % ring.length
    }
    for (let i = 0; i < 16; i++) {
      const o = { a: i, b: ringAt, c: [i, i + 1, i + 2] }
      sink += o.c.length
    }
  } else if (frame === undefined) {
    sink++
  }
}

/** A case: handles every frame of a wire buffer, with or without the parse. */
type Case = (buf: Buffer, offsets: ReadonlyArray<number>, parse: boolean) => void

/** The relay's way: `toString` of the payload, then (`parse`) `parsePayload`, which decodes and parses. */
const relay: Case = (buf, offsets, parse) => {
  for (let i = 0; i < offsets.length; i += 2) {
    if (parse) afterFrame(parsePayload(buf, offsets[i]!, offsets[i + 1]!))
    else afterFrame(buf.toString("utf8", offsets[i], offsets[i + 1]))
  }
}
/** Ours: `FrameDecoder.push` of the whole buffer, then (`parse`) `parseFrameText` of each text. */
const ours: Case = (buf, _offsets, parse) => {
  const texts: Array<string> = []
  new FrameDecoder().push(buf, texts)
  for (let i = 0; i < texts.length; i++) {
    if (!parse) {
      afterFrame(texts[i])
      continue
    }
    const frame = parseFrameText(texts[i]!)
    afterFrame(isFrameDecodeError(frame) ? undefined : frame)
  }
}

const threadUs = (): number => {
  const u = process.threadCpuUsage()
  return u.user + u.system
}

/** µs of this thread's CPU per frame for `count` frames of `buf`. */
const timeCase = (run: Case, buf: Buffer, parse: boolean): number => {
  const offsets = offsetsOf(buf)
  const perPass = offsets.length / 2
  const passes = Math.max(1, Math.round(count / perPass))
  const t0 = threadUs()
  for (let p = 0; p < passes; p++) run(buf, offsets, parse)
  return (threadUs() - t0) / (passes * perPass)
}

const kinds: ReadonlyArray<readonly [string, Buffer]> = [["send", wire(sendText)], ["received", wire(receivedText)]]
const cases: ReadonlyArray<readonly [string, Case]> = [["relay (parsePayload)", relay], ["ours (FrameDecoder + parseFrameText)", ours]]
const results = new Map<string, { without: Array<number>; with: Array<number> }>()
for (let r = 0; r < rounds + 1; r++) {
  for (const [kind, buf] of kinds) {
    for (const [name, run] of cases) {
      const without = timeCase(run, buf, false)
      const withParse = timeCase(run, buf, true)
      if (r === 0) continue // warm-up round: every function compiled before one is timed
      const key = `${kind} | ${name}`
      const entry = results.get(key) ?? { without: [], with: [] }
      entry.without.push(without)
      entry.with.push(withParse)
      results.set(key, entry)
    }
  }
}

const median = (xs: ReadonlyArray<number>): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number): string => n.toFixed(3)
process.stdout.write(
  `state ${state}, node flags: ${process.execArgv.join(" ") || "none"}, node ${process.version}, send frame ${
    sendText(1).length
  } characters, received ${receivedText(1).length}; ${state === "retained" ? `${keep} frames kept; ` : ""}${rounds} rounds of ${count} frames; heapUsed ${
    (process.memoryUsage().heapUsed / 1048576).toFixed(0)
  } MiB\n\n`
)
process.stdout.write("| frame | reader | decode only, µs | decode + parse, µs | parse (difference), µs |\n|---|---|---:|---:|---:|\n")
for (const [key, entry] of results) {
  const [kind, name] = key.split(" | ")
  const a = median(entry.without)
  const b = median(entry.with)
  process.stdout.write(`| ${kind} | ${name} | ${fmt(a)} | ${fmt(b)} | ${fmt(b - a)} |\n`)
}
if (sink === -1) process.stdout.write("\n")
