/**
 * A wrapper that runs a command and stamps each line it writes to stdout
 * with the wall-clock ms it arrived at (`<ms>\t<line>`, appended to a file),
 * passing stdout through (so a bench still reads the ready line): every
 * line, or with `--pass <regex>` only the lines that match it (a bench keeps
 * the first 64 KiB of a target's stdout to find its ready line, which a
 * flood of trace lines would push out).
 * It exists because V8's `--trace-opt` / `--trace-deopt` lines carry no time
 * and the bench starts its targets itself: bench/compile-trace.ts puts this
 * in front of the broker's command to tell which compile jobs fell inside a
 * workload's measured interval. The command's stdout should be line
 * buffered (`stdbuf -oL`), or its lines arrive late in blocks.
 *
 *   node bench/trace-stamp.ts [--pass <regex>] <out file> <command> [args...]
 *
 * SIGTERM and SIGINT are passed on to the command; this process exits when
 * it does, with its status.
 */
import { spawn } from "node:child_process"
import fs from "node:fs"

const argv = process.argv.slice(2)
const pass = argv[0] === "--pass" ? new RegExp(argv[1] ?? "") : undefined
const [out, file, ...args] = pass === undefined ? argv : argv.slice(2)
if (out === undefined || file === undefined) {
  process.stderr.write("usage: node bench/trace-stamp.ts [--pass <regex>] <out file> <command> [args...]\n")
  process.exit(2)
}

const sink = fs.openSync(out, "a")
const child = spawn(file, args, { stdio: ["ignore", "pipe", "inherit"] })
let partial = ""
child.stdout.on("data", (d: Buffer) => {
  const at = (performance.timeOrigin + performance.now()).toFixed(3)
  if (pass === undefined) process.stdout.write(d)
  const lines = (partial + d.toString("utf8")).split("\n")
  partial = lines.pop() ?? ""
  if (pass !== undefined) for (const line of lines) if (pass.test(line)) process.stdout.write(`${line}\n`)
  if (lines.length > 0) fs.writeSync(sink, lines.map((line) => `${at}\t${line}\n`).join(""))
})
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => child.kill(signal))
child.on("close", (code, signal) => {
  fs.closeSync(sink)
  process.exit(code ?? (signal === null ? 1 : 128))
})
