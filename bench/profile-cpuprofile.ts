/**
 * Turns a V8 `.cpuprofile` (what `node --cpu-prof` writes at exit) into
 * sample counts by owner, inside the measured intervals only. Owns the
 * profile's parsing, the source-map lookup that tells, inside the broker's
 * minified bundle, our code (src/…) from effect's (node_modules/effect) and
 * the owner rules:
 *
 * - `(garbage collector)`: gc; `(program)`: V8 and Node's native code with no
 *   JavaScript on the stack (libuv's loop, the compiler on the main thread);
 *   `(idle)`: waiting in the event loop (not counted as busy);
 * - a function with no script (`url` ""): a native binding called from
 *   JavaScript (`writeBuffer`, `writev`, …);
 * - `node:…`: Node's internals (streams, net, timers);
 * - a source under node_modules/effect or node_modules/@effect: effect;
 *   under another node_modules: deps; anything else with a file: ours (the
 *   target's own code: src/… for the broker, the relay's script for the relay).
 *
 * Each sample counts once (self time of the function on top of the stack).
 * The profile's timestamps are CLOCK_MONOTONIC µs, like
 * `process.hrtime.bigint() / 1000n` in any process of the machine, so the
 * bench's own clock marks the intervals.
 */
import fs from "node:fs"
import { SourceMap, type SourceMapPayload } from "node:module"
import path from "node:path"
import { fileURLToPath } from "node:url"

/** Who a sample's time belongs to. */
export type Owner = "gc" | "program" | "native" | "node" | "effect" | "deps" | "ours" | "other"

/** Every owner, in report order. */
export const OWNERS: ReadonlyArray<Owner> = ["gc", "program", "native", "node", "effect", "deps", "ours", "other"]

interface CallFrame {
  readonly functionName: string
  readonly url: string
  /** 0-based, -1 when unknown. */
  readonly lineNumber: number
  readonly columnNumber: number
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
}

/** The parts of a `.cpuprofile` used here. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  /** µs, CLOCK_MONOTONIC. */
  readonly startTime: number
  readonly endTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)
const isNumberArray = (v: unknown): v is Array<number> => Array.isArray(v) && v.every((x) => typeof x === "number")

const callFrameOf = (v: unknown): CallFrame | undefined => {
  if (!isObject(v)) return undefined
  const { functionName, url, lineNumber, columnNumber } = v
  if (typeof functionName !== "string" || typeof url !== "string") return undefined
  return {
    functionName,
    url,
    lineNumber: typeof lineNumber === "number" ? lineNumber : -1,
    columnNumber: typeof columnNumber === "number" ? columnNumber : -1
  }
}

/** Parses a `.cpuprofile`'s JSON value; an Error names what is missing. */
export const parseCpuProfile = (json: unknown): CpuProfile | Error => {
  if (!isObject(json)) return new Error("a cpuprofile is a JSON object")
  const { nodes, startTime, endTime, samples, timeDeltas } = json
  if (!Array.isArray(nodes)) return new Error("cpuprofile: no nodes array")
  if (typeof startTime !== "number" || typeof endTime !== "number") return new Error("cpuprofile: no startTime/endTime")
  if (!isNumberArray(samples) || !isNumberArray(timeDeltas) || samples.length !== timeDeltas.length) {
    return new Error("cpuprofile: samples and timeDeltas must be number arrays of the same length")
  }
  const parsed: Array<ProfileNode> = []
  for (const n of nodes) {
    const callFrame = isObject(n) ? callFrameOf(n["callFrame"]) : undefined
    const id = isObject(n) ? n["id"] : undefined
    if (callFrame === undefined || typeof id !== "number") return new Error("cpuprofile: a node without id or callFrame")
    parsed.push({ id, callFrame })
  }
  return { nodes: parsed, startTime, endTime, samples, timeDeltas }
}

/** The pid in `node --cpu-prof`'s default file name (`CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile`). */
export const pidOfProfileFile = (file: string): number | undefined => {
  const m = /^CPU\.\d+\.\d+\.(\d+)\.\d+\.\d+\.cpuprofile$/.exec(path.basename(file))
  return m === null ? undefined : Number(m[1])
}

/** Where a generated position came from. */
export interface Origin {
  /** The source file, relative to the repository root when inside it. */
  readonly source: string
  /** 1-based. */
  readonly line: number
  readonly name: string | undefined
  /** The source's text at that line, when the map carries it (`sourcesContent`). */
  readonly lineText?: string | undefined
}

/** Maps a script position (url, 0-based line and column) to its source; undefined when the script has no map. */
export type Resolver = (url: string, line: number, column: number) => Origin | undefined

/** A script's source map and the directory its `sources` are relative to. */
export interface LoadedMap {
  readonly payload: SourceMapPayload
  readonly dir: string
}

/** Reads the source map a file's `//# sourceMappingURL=` names (a file beside it or a data: URL). */
export const loadMapOfScript = (file: string): LoadedMap | undefined => {
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch {
    return undefined
  }
  const m = /\/\/[#@] sourceMappingURL=(\S+)\s*$/.exec(text.slice(-4096))
  if (m === null || m[1] === undefined) return undefined
  const ref = m[1]
  try {
    const raw = ref.startsWith("data:")
      ? Buffer.from(ref.slice(ref.indexOf(",") + 1), ref.includes(";base64,") ? "base64" : "utf8").toString("utf8")
      : fs.readFileSync(path.resolve(path.dirname(file), ref), "utf8")
    const payload: unknown = JSON.parse(raw)
    if (!isObject(payload) || !Array.isArray(payload["sources"]) || typeof payload["mappings"] !== "string") return undefined
    return { payload: sourceMapPayload(payload), dir: path.dirname(file) }
  } catch {
    return undefined
  }
}

const stringArray = (v: unknown): Array<string> => (Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : "")) : [])

const sourceMapPayload = (o: Record<string, unknown>): SourceMapPayload => ({
  file: typeof o["file"] === "string" ? o["file"] : "",
  version: typeof o["version"] === "number" ? o["version"] : 3,
  sources: stringArray(o["sources"]),
  sourcesContent: stringArray(o["sourcesContent"]),
  names: stringArray(o["names"]),
  mappings: typeof o["mappings"] === "string" ? o["mappings"] : "",
  sourceRoot: typeof o["sourceRoot"] === "string" ? o["sourceRoot"] : ""
})

/**
 * A Resolver over scripts with source maps, named by `file:` URL or by
 * absolute path (a CommonJS script in a heap profile), each map loaded once
 * through `load`; sources are shown relative to `root`.
 */
export const sourceMapResolver = (root: string, load: (file: string) => LoadedMap | undefined = loadMapOfScript): Resolver => {
  const maps = new Map<string, { readonly map: SourceMap; readonly dir: string; readonly payload: SourceMapPayload } | undefined>()
  return (url, line, column) => {
    // A CommonJS script's frames in a heap profile carry its path, not a `file:` URL (dist/bin/broker.cjs).
    const file = url.startsWith("file:") ? fileURLToPath(url) : path.isAbsolute(url) ? url : undefined
    if (file === undefined) return undefined
    let entry = maps.get(url)
    if (!maps.has(url)) {
      const loaded = load(file)
      entry = loaded === undefined ? undefined : { map: new SourceMap(loaded.payload), dir: loaded.dir, payload: loaded.payload }
      maps.set(url, entry)
    }
    if (entry === undefined || line < 0) return undefined
    const found = entry.map.findEntry(line, Math.max(0, column))
    if (!("originalSource" in found) || typeof found.originalSource !== "string") return undefined
    const abs = found.originalSource.startsWith("file:")
      ? fileURLToPath(found.originalSource)
      : path.resolve(entry.dir, found.originalSource)
    const rel = path.relative(root, abs)
    const content = entry.payload.sourcesContent[entry.payload.sources.indexOf(found.originalSource)]
    return {
      source: rel.startsWith("..") ? abs : rel,
      line: found.originalLine + 1,
      name: "name" in found && typeof found.name === "string" ? found.name : undefined,
      lineText: content === undefined || content === "" ? undefined : content.split("\n")[found.originalLine]
    }
  }
}

/** The owner of a file path (a source or a script). */
export const ownerOfPath = (p: string): Owner => {
  const norm = p.replaceAll("\\", "/")
  if (/(^|\/)node_modules\/(effect|@effect)\//.test(norm)) return "effect"
  if (/(^|\/)node_modules\//.test(norm)) return "deps"
  return "ours"
}

/** One profile node's owner, and the file and function its samples are listed under. */
export interface Frame {
  readonly owner: Owner | "idle"
  readonly file: string
  readonly fn: string
}

const DECLARED = [
  /(?:function\*?|class)\s+([A-Za-z_$][\w$]*)/,
  /(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=/,
  /^\s*(?:(?:readonly|public|private|protected|static|async|get|set)\s+)*([A-Za-z_$][\w$]*)\s*[:=(]/
]

/** The name a source line declares (`const f = …`, `function f(`, `f: (…) =>`), if any. */
export const declaredName = (line: string): string | undefined => {
  for (const re of DECLARED) {
    const m = re.exec(line)
    if (m?.[1] !== undefined) return m[1]
  }
  return undefined
}

/**
 * Names the function: the profile's name unless minified (one or two
 * characters); else the name its source line declares; else the map's; else
 * what the profile says.
 */
const functionLabel = (profileName: string, origin: Origin): string => {
  if (profileName.length > 2) return profileName
  const declared = origin.lineText === undefined ? undefined : declaredName(origin.lineText)
  if (declared !== undefined) return declared
  if (origin.name !== undefined && origin.name !== "") return origin.name
  return profileName === "" ? "(anonymous)" : profileName
}

/** Classifies one call frame (see the module header for the rules). */
export const classifyFrame = (cf: CallFrame, resolve: Resolver): Frame => {
  const name = cf.functionName
  if (cf.url === "") {
    if (name === "(garbage collector)") return { owner: "gc", file: "(garbage collector)", fn: name }
    if (name === "(program)") return { owner: "program", file: "(program)", fn: name }
    if (name === "(idle)") return { owner: "idle", file: "(idle)", fn: name }
    if (name === "(root)") return { owner: "other", file: "(root)", fn: name }
    return { owner: "native", file: "(native)", fn: `${name === "" ? "(unnamed)" : name} (native)` }
  }
  if (cf.url.startsWith("node:")) {
    return { owner: "node", file: cf.url, fn: `${cf.url}:${cf.lineNumber + 1} ${name === "" ? "(anonymous)" : name}` }
  }
  const origin = resolve(cf.url, cf.lineNumber, cf.columnNumber)
  if (origin !== undefined) {
    return {
      owner: ownerOfPath(origin.source),
      file: origin.source,
      fn: `${origin.source}:${origin.line} ${functionLabel(name, origin)}`
    }
  }
  if (cf.url.startsWith("file:")) {
    const file = fileURLToPath(cf.url)
    return { owner: ownerOfPath(file), file, fn: `${file}:${cf.lineNumber + 1} ${name === "" ? "(anonymous)" : name}` }
  }
  return { owner: "other", file: cf.url, fn: `${cf.url}:${cf.lineNumber + 1} ${name}` }
}

/** A measured interval, µs on CLOCK_MONOTONIC. */
export interface Interval {
  readonly from: number
  readonly to: number
}

/** Samples inside the intervals, by owner, file and function. */
export interface ProfileCounts {
  /** Every sample inside an interval, idle included. */
  samples: number
  idle: number
  byOwner: Record<Owner, number>
  /** file → samples, with the file's owner. */
  byFile: Map<string, { owner: Owner; count: number }>
  /** function (`file:line name`) → samples, with its owner. */
  byFunction: Map<string, { owner: Owner; count: number }>
}

/** Empty counts. */
export const emptyCounts = (): ProfileCounts => ({
  samples: 0,
  idle: 0,
  byOwner: { gc: 0, program: 0, native: 0, node: 0, effect: 0, deps: 0, ours: 0, other: 0 },
  byFile: new Map(),
  byFunction: new Map()
})

const bump = (m: Map<string, { owner: Owner; count: number }>, key: string, owner: Owner): void => {
  const e = m.get(key)
  if (e === undefined) m.set(key, { owner, count: 1 })
  else e.count++
}

/**
 * Adds the samples of `profile` that fall inside one of `intervals` to
 * `into` (so several runs sum up), classifying each node once.
 */
export const countSamples = (
  profile: CpuProfile,
  intervals: ReadonlyArray<Interval>,
  resolve: Resolver,
  into: ProfileCounts = emptyCounts()
): ProfileCounts => {
  const frames = new Map<number, Frame>()
  for (const n of profile.nodes) frames.set(n.id, classifyFrame(n.callFrame, resolve))
  let t = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0
    if (!intervals.some((w) => t >= w.from && t <= w.to)) continue
    const frame = frames.get(profile.samples[i] ?? -1)
    into.samples++
    if (frame === undefined) {
      into.byOwner.other++
      continue
    }
    if (frame.owner === "idle") {
      into.idle++
      continue
    }
    into.byOwner[frame.owner]++
    bump(into.byFile, frame.file, frame.owner)
    bump(into.byFunction, frame.fn, frame.owner)
  }
  return into
}

/** Busy samples: every sample but idle ones. */
export const busySamples = (c: ProfileCounts): number => c.samples - c.idle

/** Adds `from`'s counts to `into` and returns `into`. */
export const mergeCounts = (into: ProfileCounts, from: ProfileCounts): ProfileCounts => {
  into.samples += from.samples
  into.idle += from.idle
  for (const o of OWNERS) into.byOwner[o] += from.byOwner[o]
  for (const [target, source] of [[into.byFile, from.byFile], [into.byFunction, from.byFunction]]) {
    if (target === undefined || source === undefined) continue
    for (const [name, e] of source) {
      const have = target.get(name)
      if (have === undefined) target.set(name, { owner: e.owner, count: e.count })
      else have.count += e.count
    }
  }
  return into
}
