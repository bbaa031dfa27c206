/**
 * bench:profile's parts that turn text into numbers: /proc stat lines and
 * thread groups (bench/profile-proc.ts), a `.cpuprofile` with a source-mapped
 * bundle into samples by owner (bench/profile-cpuprofile.ts), and the split
 * of CPU per unit and the gap (bench/profile-split.ts), `perf script` lines
 * into samples by thread and kind (bench/profile-perf.ts). Fixtures in
 * test/bench/fixtures/profile; no timing is tested.
 */
import { assert, describe, it } from "@effect/vitest"
import fs from "node:fs"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import {
  busySamples,
  countSamples,
  declaredName,
  emptyCounts,
  mergeCounts,
  ownerOfPath,
  parseCpuProfile,
  pidOfProfileFile,
  sourceMapResolver
} from "../../bench/profile-cpuprofile.ts"
import { countPerf, mergePerf, parsePerfLine, perfKind } from "../../bench/profile-perf.ts"
import { cpuBetween, type GroupCpu, kernelCountsBetween, parseProcIo, parseStatLine, snapshotFromStats, threadGroup, zeroGroupCpu } from "../../bench/profile-proc.ts"
import { breakdown, gapOf, groups, type Measured, perfSplit, topEntries, workloadTable } from "../../bench/profile-split.ts"

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.join(here, "fixtures", "profile")
const root = path.resolve(here, "..", "..")
const fixture = (name: string): string => fs.readFileSync(path.join(fixtures, name), "utf8")

/** The sample profile, its script URLs pointed at the fixture directory. */
const sampleProfile = () => {
  const text = fixture("sample.cpuprofile").replaceAll("FIXTURE_URL", pathToFileURL(fixtures).href)
  const parsed = parseCpuProfile(JSON.parse(text))
  if (parsed instanceof Error) throw parsed
  return parsed
}

describe("/proc stat lines", () => {
  it("reads utime and stime (fields 14 and 15) after the name in parentheses", () => {
    assert.deepStrictEqual(parseStatLine(fixture("task-main.stat")), { comm: "MainThread", utimeTicks: 250, stimeTicks: 40, minflt: 5301 })
  })

  it("counts fields from the last parenthesis, so a name with spaces and parentheses does not shift them", () => {
    assert.deepStrictEqual(parseStatLine(fixture("task-odd-name.stat")), { comm: "a (weird) name", utimeTicks: 7, stimeTicks: 3, minflt: 10 })
  })

  it("reads /proc/<pid>/io's system call counts and bytes, and sums intervals", () => {
    const a = parseProcIo(fixture("io-before.txt"), 100)
    const b = parseProcIo(fixture("io-after.txt"), 160)
    assert.deepStrictEqual(a, { syscr: 10, syscw: 4, rchar: 6976, wchar: 512, minflt: 100 })
    const d = kernelCountsBetween(a, b)
    assert.deepStrictEqual(d, { syscr: 90, syscw: 36, rchar: 3024, wchar: 1488, minflt: 60 })
    assert.deepStrictEqual(kernelCountsBetween(a, b, d).syscw, 72)
    assert.deepStrictEqual(parseProcIo("", 0), { syscr: 0, syscw: 0, rchar: 0, wchar: 0, minflt: 0 })
  })

  it("returns undefined for text that is not a stat line", () => {
    assert.strictEqual(parseStatLine("no parentheses here"), undefined)
    assert.strictEqual(parseStatLine("1 (x) S 1"), undefined)
  })

  it("groups threads: the main thread by id, V8's workers, libuv's pool and the profiler by name", () => {
    assert.strictEqual(threadGroup(10, 10, "MainThread"), "main")
    // Just forked: the child still carries its parent's name.
    assert.strictEqual(threadGroup(10, 10, "node"), "main")
    assert.strictEqual(threadGroup(10, 11, "MainThread"), "other")
    assert.strictEqual(threadGroup(10, 12, "V8Worker"), "v8")
    assert.strictEqual(threadGroup(10, 13, "libuv-worker"), "libuv")
    assert.strictEqual(threadGroup(10, 14, "v8:ProfEvntProc"), "profiler")
    assert.strictEqual(threadGroup(10, 15, "DelayedTaskSche"), "other")
  })

  it("takes the CPU between two snapshots per group, in µs; a thread that started in between counts from zero", () => {
    const line = (tid: number, comm: string, u: number, s: number): readonly [number, string] =>
      [tid, `${tid} (${comm}) S 1 1 1 0 -1 0 0 0 0 0 ${u} ${s} 0 0 20 0 1 0 1 1 1`]
    const before = snapshotFromStats(100, [line(100, "MainThread", 10, 2), line(101, "V8Worker", 4, 0)], 100)
    const after = snapshotFromStats(
      100,
      [line(100, "MainThread", 30, 7), line(101, "V8Worker", 5, 1), line(102, "libuv-worker", 2, 1), [103, "garbage"]],
      100
    )
    const d = cpuBetween(before, after)
    assert.deepStrictEqual(d.main, { user: 200_000, sys: 50_000 })
    assert.deepStrictEqual(d.v8, { user: 10_000, sys: 10_000 })
    assert.deepStrictEqual(d.libuv, { user: 20_000, sys: 10_000 })
    assert.deepStrictEqual(d.other, { user: 0, sys: 0 })
  })
})

describe("cpuprofile", () => {
  it("finds the pid in node --cpu-prof's default file name", () => {
    assert.strictEqual(pidOfProfileFile("/tmp/x/CPU.20261202.054858.22026.0.001.cpuprofile"), 22026)
    assert.strictEqual(pidOfProfileFile("profile.cpuprofile"), undefined)
  })

  it("rejects a value that is not a profile, naming what is missing", () => {
    const e = parseCpuProfile({ nodes: [], startTime: 1, endTime: 2, samples: [1], timeDeltas: [] })
    assert.instanceOf(e, Error)
    assert.include(e instanceof Error ? e.message : "", "same length")
    assert.instanceOf(parseCpuProfile([]), Error)
  })

  it("maps a bundle's position to its source through the bundle's source map, relative to the repository", () => {
    const resolve = sourceMapResolver(root)
    const url = pathToFileURL(path.join(fixtures, "bundle.mjs")).href
    assert.deepStrictEqual(resolve(url, 0, 0), { source: "src/broker/Send.ts", line: 11, name: "handOver", lineText: undefined })
    assert.strictEqual(resolve(url, 1, 0)?.source, "node_modules/effect/dist/internal/effect.js")
    assert.strictEqual(resolve(url, 1, 0)?.line, 4)
    assert.strictEqual(resolve("node:net", 0, 0), undefined)
  })

  it("maps a script named by its path, as a CommonJS script's frames are in a heap profile, like one named by its URL", () => {
    const resolve = sourceMapResolver(root)
    assert.deepStrictEqual(resolve(path.join(fixtures, "bundle.mjs"), 0, 0), { source: "src/broker/Send.ts", line: 11, name: "handOver", lineText: undefined })
    assert.strictEqual(resolve("bundle.mjs", 0, 0), undefined)
  })

  it("names a minified function by what its source line declares", () => {
    assert.strictEqual(declaredName("  const transactNow = (steps: ReadonlyArray<BatchStep>): Effect.Effect<number> => {"), "transactNow")
    assert.strictEqual(declaredName("export const encodeMail = (mail: Mail): string => JSON.stringify(mail)"), "encodeMail")
    assert.strictEqual(declaredName("export function* pipeline(frames) {"), "pipeline")
    assert.strictEqual(declaredName("    delivered: (peer, id) => {"), "delivered")
    assert.strictEqual(declaredName("  }, spec.measure)"), undefined)
  })

  it("tells effect, other dependencies and our code apart by path", () => {
    assert.strictEqual(ownerOfPath("node_modules/effect/dist/Effect.js"), "effect")
    assert.strictEqual(ownerOfPath("/x/node_modules/@effect/platform-node/dist/a.js"), "effect")
    assert.strictEqual(ownerOfPath("node_modules/yaml/dist/index.js"), "deps")
    assert.strictEqual(ownerOfPath("src/broker/Router.ts"), "ours")
    assert.strictEqual(ownerOfPath("/tmp/ib-x/raw-relay.mjs"), "ours")
  })

  it("counts only the samples inside the intervals, each by the owner of the function on top", () => {
    const c = countSamples(sampleProfile(), [{ from: 1_000_150, to: 1_000_850 }], sourceMapResolver(root))
    // Inside: idle, gc, writeBuffer, onStreamRead, Yr, Yr, evaluate; outside: (program) and the last idle and Yr.
    assert.strictEqual(c.samples, 7)
    assert.strictEqual(c.idle, 1)
    assert.strictEqual(busySamples(c), 6)
    assert.deepStrictEqual(c.byOwner, { gc: 1, program: 0, native: 1, node: 1, effect: 1, deps: 0, ours: 2, other: 0 })
    // A minified name (two characters) is replaced by the map's.
    assert.deepStrictEqual(c.byFunction.get("src/broker/Send.ts:11 handOver"), { owner: "ours", count: 2 })
    assert.deepStrictEqual(c.byFunction.get("writeBuffer (native)"), { owner: "native", count: 1 })
    assert.deepStrictEqual(c.byFunction.get("node:internal/stream_base_commons:166 onStreamRead"), { owner: "node", count: 1 })
    assert.deepStrictEqual(c.byFile.get("node_modules/effect/dist/internal/effect.js"), { owner: "effect", count: 1 })
  })

  it("sums several runs' counts", () => {
    const p = sampleProfile()
    const resolve = sourceMapResolver(root)
    const all = [{ from: 0, to: 2_000_000 }]
    const sum = mergeCounts(countSamples(p, all, resolve), countSamples(p, all, resolve, emptyCounts()))
    assert.strictEqual(sum.samples, 20)
    assert.strictEqual(sum.byOwner.ours, 6)
    assert.deepStrictEqual(sum.byFunction.get("src/broker/Send.ts:11 handOver"), { owner: "ours", count: 6 })
  })
})

const cpu = (over: Partial<GroupCpu>): GroupCpu => ({ ...zeroGroupCpu(), ...over })

describe("the split", () => {
  const counts = () => {
    const c = emptyCounts()
    // 100 busy samples: native 30, program 10, gc 10, node 10, effect 10, ours 30; 50 idle.
    c.samples = 150
    c.idle = 50
    c.byOwner = { gc: 10, program: 10, native: 30, node: 10, effect: 10, deps: 0, ours: 30, other: 0 }
    c.byFunction.set("src/broker/Send.ts:11 handOver", { owner: "ours", count: 20 })
    c.byFunction.set("writeBuffer (native)", { owner: "native", count: 30 })
    return c
  }

  it("splits the main thread's CPU by sample share, taking its kernel time out of the native share", () => {
    // 10 units; main thread 800 µs user + 200 µs sys = 100 µs/unit; V8 workers 300 µs; profiler 50 µs.
    const m: Measured = {
      units: 10,
      cpu: cpu({ main: { user: 800, sys: 200 }, v8: { user: 300, sys: 0 }, profiler: { user: 50, sys: 0 } }),
      counts: counts()
    }
    const b = breakdown(m)
    assert.strictEqual(b.total, 130)
    assert.strictEqual(b.kernel, 20)
    assert.strictEqual(b.mainUser, 80)
    // native + program = 40 % of 100 µs = 40; minus 20 µs of kernel = 20 µs of user.
    assert.closeTo(b.nativeUser, 20, 1e-9)
    assert.closeTo(b.ours, 30, 1e-9)
    assert.closeTo(b.gc, 10, 1e-9)
    assert.strictEqual(b.v8Workers, 30)
    assert.strictEqual(b.profilerThread, 5)
    assert.deepStrictEqual(b.notes, [])
    const parts = b.kernel + b.gc + b.nativeUser + b.node + b.effect + b.deps + b.ours + b.otherJs + b.unsplit + b.v8Workers +
      b.libuv + b.otherThreads
    assert.closeTo(parts, b.total, 1e-9)
    // One sample stands for 1 µs per unit here.
    assert.deepStrictEqual(topEntries(m, "byFunction", 1, "ours"), [
      { name: "src/broker/Send.ts:11 handOver", owner: "ours", samples: 20, usPerUnit: 20 }
    ])
  })

  it("when the kernel time exceeds the native share, native counts 0 and the other owners share the user time, with a note", () => {
    const c = counts()
    c.byOwner = { gc: 20, program: 0, native: 10, node: 20, effect: 20, deps: 0, ours: 30, other: 0 }
    const b = breakdown({ units: 1, cpu: cpu({ main: { user: 60, sys: 40 } }), counts: c })
    assert.strictEqual(b.nativeUser, 0)
    assert.closeTo(b.gc + b.node + b.effect + b.ours, 60, 1e-9)
    assert.closeTo(b.ours, 20, 1e-9)
    assert.strictEqual(b.notes.length, 1)
  })

  it("leaves the main thread's user time unsplit without samples (a target that is not Node)", () => {
    const b = breakdown({ units: 2, cpu: cpu({ main: { user: 10, sys: 4 } }), counts: undefined })
    assert.strictEqual(b.unsplit, 5)
    assert.strictEqual(b.total, 7)
  })

  it("groups the parts and takes the gap group by group", () => {
    const relay = breakdown({ units: 10, cpu: cpu({ main: { user: 400, sys: 100 } }), counts: counts() })
    const broker = breakdown({
      units: 10,
      cpu: cpu({ main: { user: 800, sys: 200 }, v8: { user: 300, sys: 0 } }),
      counts: counts()
    })
    const gap = gapOf(groups(broker), groups(relay))
    assert.closeTo(gap.total, 80, 1e-9)
    assert.closeTo(gap.kernel, 10, 1e-9)
    // GC 10 − 5 plus V8's workers 30.
    assert.closeTo(gap.v8, 35, 1e-9)
    assert.closeTo(gap.kernel + gap.v8 + gap.node + gap.effect + gap.ours + gap.other, gap.total, 1e-9)
    const t = workloadTable([
      {
        label: "relay",
        measured: {
          units: 10,
          cpu: cpu({ main: { user: 400, sys: 100 } }),
          counts: counts(),
          kernel: { syscr: 5, syscw: 5, rchar: 0, wchar: 1500, minflt: 0 },
          clientRead: 1500
        },
        unprofiled: 50
      },
      {
        label: "broker",
        measured: {
          units: 10,
          cpu: cpu({ main: { user: 800, sys: 200 }, v8: { user: 300, sys: 0 } }),
          counts: counts(),
          kernel: { syscr: 10, syscw: 25, rchar: 0, wchar: 1600, minflt: 30 },
          clientRead: 1000
        },
        unprofiled: 100
      }
    ])
    assert.deepStrictEqual(t.rows.find((r) => r[0] === "write syscalls per unit (sockets and files)"), [
      "write syscalls per unit (sockets and files)",
      "0.50",
      "2.50",
      "2.00"
    ])
    // The bytes the bench's clients read tell the socket writes from the rest (a durable broker's WAL).
    assert.deepStrictEqual(t.rows.find((r) => r[0] === "  of them read by the bench's clients"), [
      "  of them read by the bench's clients",
      "150",
      "100",
      "-50.0"
    ])
    assert.deepStrictEqual(t.rows.find((r) => r[0] === "minor page faults per unit"), ["minor page faults per unit", "0.00", "3.00", "3.00"])
    assert.deepStrictEqual(t.header, ["", "relay", "broker", "broker − relay"])
    assert.deepStrictEqual(t.rows.find((r) => r[0] === "CPU total (/proc, all threads)"), ["CPU total (/proc, all threads)", "50.0", "130", "80.0"])
    assert.deepStrictEqual(t.rows.find((r) => r[0] === "  V8 (GC + worker threads)"), ["  V8 (GC + worker threads)", "5.00", "40.0", "35.0 (44 %)"])
    assert.deepStrictEqual(t.rows.find((r) => r[0]?.startsWith("CPU/unit without")), ["CPU/unit without the profiler (overhead)", "50.0 (+0 %)", "100 (+30 %)", ""])
  })
})

describe("perf", () => {
  const text = fixture("perf-script.txt")

  it("parses perf script's comm, tid, time (µs), symbol and dso", () => {
    assert.deepStrictEqual(parsePerfLine(text.split("\n")[1] ?? ""), {
      comm: "MainThread",
      tid: 4242,
      timeUs: 72_810_000_200,
      sym: "v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>",
      dso: "/usr/bin/node"
    })
    assert.strictEqual(parsePerfLine(" v8:ProfEvntProc  4251 72810.001100:  5566778 node::Foo::Bar (/usr/bin/node)")?.comm, "v8:ProfEvntProc")
    assert.strictEqual(parsePerfLine("not a sample line"), undefined)
  })

  it("tells the kernel, SQLite, GC, compilers, JIT code, JSON and libc apart by symbol and dso", () => {
    assert.strictEqual(perfKind("pvm_irq_enable", "[kernel.kallsyms]"), "kernel")
    assert.strictEqual(perfKind("sqlite3VdbeExec", "/usr/bin/node"), "sqlite")
    assert.strictEqual(perfKind("walIndexAppend", "/usr/bin/node"), "sqlite")
    assert.strictEqual(perfKind("v8::internal::ConcurrentMarking::RunMajor", "/usr/bin/node"), "gc")
    assert.strictEqual(perfKind("v8::internal::maglev::MaglevGraphBuilder::Build", "/usr/bin/node"), "compiler")
    assert.strictEqual(perfKind("[unknown]", "/tmp/perf-1.map"), "js")
    assert.strictEqual(perfKind("Builtins_KeyedLoadIC_Megamorphic", "/usr/bin/node"), "js")
    assert.strictEqual(perfKind("v8::internal::StringTable::LookupKey<x>", "/usr/bin/node"), "strings")
    assert.strictEqual(perfKind("v8::internal::FactoryBase<v8::internal::Factory>::NewFixedArrayWithMap", "/usr/bin/node"), "v8")
    assert.strictEqual(perfKind("node::StreamBase::WriteBuffer", "/usr/bin/node"), "node")
    assert.strictEqual(perfKind("uv__io_poll", "/usr/bin/node"), "libuv")
    assert.strictEqual(perfKind("malloc", "/usr/lib/x86_64-linux-gnu/libc.so.6"), "libc")
  })

  it("counts the samples inside the windows by thread group and kind", () => {
    const c = countPerf(text, [{ pid: 4242, from: 72_810_000_150, to: 72_810_001_500 }])
    // The first sample (kernel) and the last (LoadIC) fall outside.
    assert.deepStrictEqual(c.byGroup.main, { kernel: 0, sqlite: 2, gc: 1, compiler: 0, js: 1, strings: 1, v8: 0, node: 0, libuv: 0, libc: 1, other: 0 })
    assert.strictEqual(c.byGroup.v8.compiler, 1)
    assert.strictEqual(c.byGroup.v8.gc, 1)
    assert.strictEqual(c.byGroup.libuv.libuv, 1)
    assert.strictEqual(c.byGroup.profiler.node, 1)
    assert.strictEqual(c.bySymbol.get("main sqlite sqlite3VdbeExec"), 1)
    assert.strictEqual(c.bySymbol.get("main js [unknown] (/tmp/perf-4242.map)"), 1)
    const twice = mergePerf(countPerf(text, [{ pid: 4242, from: 0, to: 1e12 }]), countPerf(text, [{ pid: 4242, from: 0, to: 1e12 }]))
    assert.strictEqual(twice.byGroup.main.kernel, 2)
  })

  it("splits each thread group's CPU by its samples' kinds, leaving out the profiler's thread", () => {
    const c = countPerf(text, [{ pid: 4242, from: 0, to: 1e12 }])
    // main: 8 samples over 800 µs; V8 workers: 2 over 200 µs; libuv: 1, no CPU; profiler: excluded.
    const p = perfSplit({
      units: 2,
      cpu: cpu({ main: { user: 600, sys: 200 }, v8: { user: 200, sys: 0 }, profiler: { user: 100, sys: 0 } }),
      counts: undefined,
      perf: c
    })
    assert.isDefined(p)
    assert.closeTo(p?.byKind.kernel ?? 0, 50, 1e-9)
    assert.closeTo(p?.byKind.sqlite ?? 0, 100, 1e-9)
    assert.closeTo(p?.byKind.gc ?? 0, 50 + 50, 1e-9)
    assert.closeTo(p?.v8Workers.compiler ?? 0, 50, 1e-9)
    assert.closeTo(Object.values(p?.byKind ?? {}).reduce((a, b) => a + b, 0), 500, 1e-9)
    assert.strictEqual(p?.samples, 11)
  })
})
