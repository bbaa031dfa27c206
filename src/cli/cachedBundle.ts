/**
 * Loads one of the fast paths' bundles — dist/bin/client.cjs (`send`,
 * sendBundle.ts) or dist/bin/broker.cjs (`broker`, brokerBundle.ts) — with a
 * V8 code cache of its own: the code a whole run of the path compiled, not
 * only the code compiled when the bundle was loaded.
 *
 * Why not Node's compile cache (compileCache.ts), which the other paths use:
 * Node makes its cache when it compiles a module, and V8 compiles most
 * functions only when they are first called, so every later start still
 * compiled from source each function the path calls: about 30 ms of CPU of a
 * ~130 ms send (docs/performance.md, "`intercom send`, fourth stop"), about
 * as much of a broker's start until `health_ok` ("Startup, eleventh stop").
 * A `vm.Script`'s `createCachedData()` taken after the run holds those
 * functions too. So a bundle is a CommonJS script that this module compiles
 * and runs itself; the caller calls `persist` once the run has compiled what
 * it should keep, which writes a cache when none was usable.
 *
 * The cache file sits in the compile cache's private directory, one per
 * path, Node.js version, architecture and bundle file:
 * `<path>-<version>-<arch>-<hash of the file's path>.v8cache`. It starts with
 * the SHA-256 of the bundle text it was made from and is used only for that
 * text: V8 checks its own version and flags but only the length of the
 * source, so a rebuilt bundle of the same length would otherwise run with
 * code compiled from another. It is written to a temporary file and renamed,
 * so a reader never sees half of one. Any failure to read or write it only
 * costs the compile; it never fails a command.
 *
 * Plain synchronous code that loads only `node:` built-ins, through
 * `process.getBuiltinModule`, so that main.ts can import it on every path;
 * it loads `node:vm` and `node:crypto` (crypto is one both bundles load
 * anyway) only when a bundle is loaded.
 */

/**
 * What became of the code cache: `used` (V8 took it), `rejected` (made from
 * this text, but V8 refused it: another V8 version or flags, or damaged),
 * `absent` (none, or one made from other text), `off` (no cache directory).
 */
export type BundleCacheState = "used" | "rejected" | "absent" | "off"

/** A loaded bundle, and how to save its code cache. */
export interface LoadedBundle<Entry> {
  readonly entry: Entry
  readonly cache: BundleCacheState
  /**
   * Writes the code cache when this run found none it could use, at most
   * once; a no-op otherwise. Call once the run has compiled what the cache
   * should hold.
   */
  readonly persist: () => void
}

/** What `loadCachedBundle` depends on, injectable for tests. */
export interface BundleDeps {
  /** The bundle (a `file:` URL). */
  readonly bundle: URL
  /** The private compile cache directory (compileCache.ts), or `undefined` to load without a code cache. */
  readonly cacheDir: string | undefined
  /** `process.getBuiltinModule` (absent before Node 22.3 / 20.16: the caller imports the bundle instead). */
  readonly getBuiltinModule: typeof process.getBuiltinModule | undefined
}

/** Which bundle: the name its cache files start with, and how to recognise its exports. */
export interface BundleKind<Entry> {
  /** `send`, `broker`: the first part of the cache file's name. */
  readonly name: string
  /** Whether the bundle's `module.exports` is this path's entry. */
  readonly isEntry: (exports: unknown) => exports is Entry
  /** The export `isEntry` looks for, for the error when it is missing. */
  readonly entryName: string
}

/** Bytes of the SHA-256 that opens a cache file. */
const HASH_BYTES = 32

const noop = (): void => {}

/** The cache file of `bundlePath` for this Node.js (see the module header). */
export const bundleCacheFile = (
  name: string,
  bundlePath: string,
  deps: Pick<BundleDeps, "cacheDir" | "getBuiltinModule">
): string | undefined => {
  if (deps.cacheDir === undefined || deps.getBuiltinModule === undefined) return undefined
  const crypto = deps.getBuiltinModule("node:crypto")
  const path = deps.getBuiltinModule("node:path")
  const where = crypto.createHash("sha256").update(bundlePath, "utf8").digest("hex").slice(0, 16)
  return path.join(deps.cacheDir, `${name}-${process.version}-${process.arch}-${where}.v8cache`)
}

/**
 * Compiles and runs the bundle with its code cache when there is one for
 * this exact text; `undefined` when the bundle is not there (the unbundled
 * tsc build) or this Node.js lacks `process.getBuiltinModule`, so that the
 * caller imports the entry module instead. Errors of the bundle's own
 * top-level code are thrown as an import's would be.
 */
export const loadCachedBundle = <Entry>(kind: BundleKind<Entry>, deps: BundleDeps): LoadedBundle<Entry> | undefined => {
  const builtin = deps.getBuiltinModule
  if (builtin === undefined) return undefined
  const fs = builtin("node:fs")
  const path = builtin("node:path")
  const vm = builtin("node:vm")
  const nodeModule = builtin("node:module")
  const bundlePath = builtin("node:url").fileURLToPath(deps.bundle)
  let bytes: Buffer
  try {
    bytes = fs.readFileSync(bundlePath)
  } catch {
    return undefined
  }
  const source = bytes.toString("utf8")
  const cacheFile = bundleCacheFile(kind.name, bundlePath, deps)
  const hash = cacheFile === undefined ? undefined : builtin("node:crypto").createHash("sha256").update(bytes).digest()
  const cached = cacheFile === undefined || hash === undefined ? undefined : readCache(fs, cacheFile, hash)
  // The CommonJS wrapper on the first line, so line numbers in stack traces stay the bundle's.
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: bundlePath,
    ...(cached === undefined ? {} : { cachedData: cached })
  })
  const run: unknown = script.runInThisContext()
  const module: { exports: unknown } = { exports: {} }
  if (typeof run !== "function") throw new Error(`${bundlePath} did not compile to a function`)
  run.call(module.exports, module.exports, nodeModule.createRequire(bundlePath), module, bundlePath, path.dirname(bundlePath))
  const entry = module.exports
  if (!kind.isEntry(entry)) throw new Error(`${bundlePath} does not export ${kind.entryName}`)
  const cache: BundleCacheState = cacheFile === undefined
    ? "off"
    : cached === undefined
    ? "absent"
    : script.cachedDataRejected === true
    ? "rejected"
    : "used"
  if (cache === "used" || cacheFile === undefined || hash === undefined) return { entry, cache, persist: noop }
  let persisted = false
  const persist = (): void => {
    if (persisted) return
    persisted = true
    writeCache(fs, cacheFile, hash, script.createCachedData())
  }
  return { entry, cache, persist }
}

/** The V8 data of `file` when it was made from the text whose SHA-256 is `hash`; `undefined` otherwise. */
const readCache = (fs: typeof import("node:fs"), file: string, hash: Buffer): Buffer | undefined => {
  let data: Buffer
  try {
    data = fs.readFileSync(file)
  } catch {
    return undefined
  }
  if (data.length <= HASH_BYTES || !data.subarray(0, HASH_BYTES).equals(hash)) return undefined
  return data.subarray(HASH_BYTES)
}

/** Writes `hash` + `data` to `file` through a temporary file; failures are ignored (the next run compiles again). */
const writeCache = (fs: typeof import("node:fs"), file: string, hash: Buffer, data: Buffer): void => {
  const temporary = `${file}.${process.pid}.tmp`
  try {
    fs.writeFileSync(temporary, Buffer.concat([hash, data]), { mode: 0o600 })
    fs.renameSync(temporary, file)
  } catch {
    try {
      fs.rmSync(temporary, { force: true })
    } catch {
      // Nothing to clean up.
    }
  }
}
