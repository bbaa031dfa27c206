/**
 * The on-CPU view of a target, from Linux `perf` (optional: `--perf`). The
 * V8 profile counts time on the JavaScript stack, so it cannot tell the
 * kernel, SQLite's C code or a concurrent compile from the JavaScript that
 * called them, and says nothing about V8's worker threads. `perf record -p`
 * samples every thread of the target while it runs on a CPU; each sample's
 * leaf symbol tells what ran: the kernel, SQLite (linked into the node
 * binary), the garbage collector, the compilers, JIT code and V8's builtins
 * (JavaScript), V8's C++ for JSON and strings (work JavaScript asked for),
 * the rest of V8's runtime, Node's C++, libuv, libc.
 *
 * Owns the `perf record` command line around a target, the parsing of
 * `perf script` lines, the cut to the measured intervals and the kind rules.
 * perf gives shares of samples; bench/profile.ts scales them to each thread
 * group's CPU from /proc.
 */
import { execFileSync } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { THREAD_GROUPS, threadGroup, type ThreadGroup } from "./profile-proc.ts"

/** What a sample's leaf symbol was. */
export type PerfKind = "kernel" | "sqlite" | "gc" | "compiler" | "js" | "strings" | "v8" | "node" | "libuv" | "libc" | "other"

/** Every kind, in report order. */
export const PERF_KINDS: ReadonlyArray<PerfKind> = ["kernel", "sqlite", "gc", "compiler", "js", "strings", "v8", "node", "libuv", "libc", "other"]

/** One `perf script -F comm,tid,time,ip,sym,dso` line. */
export interface PerfSample {
  readonly comm: string
  readonly tid: number
  /** µs, CLOCK_MONOTONIC (`perf record -k mono`). */
  readonly timeUs: number
  readonly sym: string
  readonly dso: string
}

/**
 * Parses `comm tid seconds: ip sym (dso)`; the thread name may hold spaces,
 * the symbol too (demangled C++); the dso is the last parenthesised part.
 * Undefined for a line that is not a sample.
 */
export const parsePerfLine = (line: string): PerfSample | undefined => {
  const m = /^\s*(.+?)\s+(\d+)\s+(\d+)\.(\d+):\s+[0-9a-f]+\s+(.*?)\s*\(([^()]*)\)\s*$/.exec(line)
  if (m === null) return undefined
  const micros = (m[4] ?? "").padEnd(6, "0").slice(0, 6)
  return {
    comm: m[1] ?? "",
    tid: Number(m[2]),
    timeUs: Number(m[3]) * 1e6 + Number(micros),
    sym: (m[5] ?? "").trim(),
    dso: m[6] ?? ""
  }
}

const GC = /Heap::|MemoryChunk|MemoryAllocator|Scaveng|MarkCompact|MinorMark|Marking|Marker|Sweep|Evacuat|GCTracer|cppgc|RememberedSet|PointersUpdat|Compactor|HeapObjectVisitor|ConcurrentAllocator|IncrementalMarking|SemiSpace|PagedSpace|LargeObjectSpace|Safepoint|GarbageCollect/

const COMPILER = /v8::internal::compiler::|maglev|Maglev|turboshaft|Turboshaft|Turbofan|baseline::|Parser|Compiler|BytecodeGenerator|Bytecode(Array)?Builder|CodeGenerator|Assembler|RegExpCompiler|Scanner::|Deoptimiz|OptimizingCompile|interpreter::BytecodeGenerator/

/** SQLite's functions (linked statically into node: the dso does not tell them apart, their names do). */
const SQLITE = /^(sqlite3|pcache|wal[A-Z]|btree[A-Z]|pager[A-Z]|vdbe[A-Z]|unix[A-Z]|robust_|seekAndWrite|moveTo|balance|insertCell|fillInCell|allocateSpace|getAndInitPage|readDbPage|syncJournal|memjrnl|accessPayload|dropCell|freePage|clearCell|cellSize|applyAffinity|serialGet|yy_)/

/** V8's C++ for JSON, strings and number formatting: work JavaScript asked for (`JSON.parse`, `JSON.stringify`, string building). */
const STRINGS = /Json|StringTable|String::|StringBuilder|SeqString|SeqOneByte|SeqTwoByte|ConsString|WriteToFlat|Dtoa|DoubleToCString|NumberToString|IntToCString|Utf8|ValueView|NewRawOneByteString|NewRawTwoByteString|NewStringFrom|InternalizeString|StringHasher/

/** The kind of a sample (see the module header). */
export const perfKind = (sym: string, dso: string): PerfKind => {
  if (dso.includes("kernel") || dso.startsWith("[vdso]")) return "kernel"
  if (SQLITE.test(sym)) return "sqlite"
  if (GC.test(sym)) return "gc"
  if (COMPILER.test(sym)) return "compiler"
  if (sym.startsWith("Builtins_") || sym.startsWith("JS:") || sym.startsWith("LazyCompile:") || dso.startsWith("perf-") || dso.endsWith(".map") || dso === "[unknown]" || dso.startsWith("memfd:")) return "js"
  if (STRINGS.test(sym)) return "strings"
  if (/^uv_|^uv__/.test(sym)) return "libuv"
  if (/libc\.so|libstdc\+\+|libm\.so|libpthread|ld-linux/.test(dso)) return "libc"
  if (sym.startsWith("v8::") || sym.startsWith("Runtime_") || sym.startsWith("void v8::") || sym.includes(" v8::")) return "v8"
  if (sym.startsWith("node::") || sym.includes(" node::")) return "node"
  return "other"
}

/** Samples by thread group and kind, and by symbol (`group kind symbol`). */
export interface PerfCounts {
  readonly byGroup: Record<ThreadGroup, Record<PerfKind, number>>
  readonly bySymbol: Map<string, number>
}

/** A zero count for every kind of sample. */
export const zeroPerfKinds = (): Record<PerfKind, number> => ({
  kernel: 0,
  sqlite: 0,
  gc: 0,
  compiler: 0,
  js: 0,
  strings: 0,
  v8: 0,
  node: 0,
  libuv: 0,
  libc: 0,
  other: 0
})

/** All zeros. */
export const emptyPerfCounts = (): PerfCounts => ({
  byGroup: { main: zeroPerfKinds(), v8: zeroPerfKinds(), libuv: zeroPerfKinds(), profiler: zeroPerfKinds(), other: zeroPerfKinds() },
  bySymbol: new Map()
})

/** A measured interval of process `pid`, µs on CLOCK_MONOTONIC. */
export interface PerfWindow {
  readonly pid: number
  readonly from: number
  readonly to: number
}

/**
 * Counts the samples of `perf script` output that fall inside a window,
 * grouped by the thread group within that window's process, into `into`
 * (several runs sum up).
 */
export const countPerf = (text: string, windows: ReadonlyArray<PerfWindow>, into: PerfCounts = emptyPerfCounts()): PerfCounts => {
  for (const line of text.split("\n")) {
    const s = parsePerfLine(line)
    if (s === undefined) continue
    const w = windows.find((x) => s.timeUs >= x.from && s.timeUs <= x.to)
    if (w === undefined) continue
    const group = threadGroup(w.pid, s.tid, s.comm)
    const kind = perfKind(s.sym, s.dso)
    into.byGroup[group][kind]++
    const key = `${group} ${kind} ${s.sym === "[unknown]" ? `[unknown] (${s.dso})` : s.sym}`
    into.bySymbol.set(key, (into.bySymbol.get(key) ?? 0) + 1)
  }
  return into
}

/** Adds `from` to `into` and returns `into`. */
export const mergePerf = (into: PerfCounts, from: PerfCounts): PerfCounts => {
  for (const g of THREAD_GROUPS) for (const k of PERF_KINDS) into.byGroup[g][k] += from.byGroup[g][k]
  for (const [sym, n] of from.bySymbol) into.bySymbol.set(sym, (into.bySymbol.get(sym) ?? 0) + n)
  return into
}

/** `perf` on the PATH (or /usr/bin/perf), or undefined. */
export const findPerf = (): string | undefined => {
  for (const dir of [...(process.env["PATH"] ?? "").split(path.delimiter), "/usr/bin"]) {
    if (dir === "") continue
    const file = path.join(dir, "perf")
    try {
      fs.accessSync(file, fs.constants.X_OK)
      return file
    } catch {
      // not here
    }
  }
  return undefined
}

/**
 * `argv` under `perf record` (every thread, CLOCK_MONOTONIC timestamps, so
 * the samples can be cut to the measured intervals). Attaching to a running
 * process (`-p`) is not used: in a container perf may not read its maps then.
 */
export const perfArgv = (perf: string, file: string, hz: number, argv: ReadonlyArray<string>): ReadonlyArray<string> => [
  perf,
  "record",
  "-q",
  // No build-id pass at exit: it rereads the whole file, and the bench stops a target 3 s after SIGTERM.
  "--no-buildid",
  "--no-buildid-cache",
  "-k",
  "mono",
  "-e",
  "cpu-clock",
  "-F",
  String(hz),
  "-o",
  file,
  "--",
  ...argv
]

/** `perf script`'s one line per sample of a recording. */
export const perfScript = (perf: string, file: string): string =>
  execFileSync(perf, ["script", "-i", file, "-F", "comm,tid,time,ip,sym,dso"], {
    encoding: "utf8",
    maxBuffer: 1024 * 1024 * 1024,
    stdio: ["ignore", "pipe", "ignore"]
  })
