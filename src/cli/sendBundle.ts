/**
 * Loads the `send` fast path's bundle, dist/bin/client.cjs, with a V8 code
 * cache of its own: the code a whole `intercom send` ran, not only the code
 * compiled when the bundle was loaded.
 *
 * Why not Node's compile cache (compileCache.ts), which every other path
 * uses: Node makes its cache when it compiles a module, and V8 compiles most
 * functions only when they are first called, so every later start still
 * compiled from source each function the send calls: about 30 ms of CPU of a
 * ~130 ms send (docs/performance.md, "`intercom send`, fourth stop"). A
 * `vm.Script`'s `createCachedData()` taken after the send holds those
 * functions too. So the bundle is a CommonJS script that this module
 * compiles and runs itself; after a send that exited 0 with no usable cache,
 * main.ts calls `persist`, which writes one.
 *
 * The cache file sits in the compile cache's private directory, one per
 * Node.js version, architecture and bundle path:
 * `send-<version>-<arch>-<hash of the path>.v8cache`. It starts with the
 * SHA-256 of the bundle text it was made from and is used only for that
 * text: V8 checks its own version and flags but only the length of the
 * source, so a rebuilt bundle of the same length would otherwise run with
 * code compiled from another. It is written to a temporary file and renamed,
 * so a reader never sees half of one. Any failure to read or write it only
 * costs the compile; it never fails a command.
 *
 * Plain synchronous code that loads only `node:` built-ins, through
 * `process.getBuiltinModule`, so that main.ts can import it on every path
 * and only a send loads `node:vm` and `node:crypto` (crypto is one the
 * bundle loads anyway).
 */
import type { SendArgv } from "./clientArgv.ts"

/** What the `send` bundle exports (clientEntry.ts). */
export interface SendEntry {
  /** Runs the send as this process's program; `false` when the full program must answer instead (a bad `--name`). */
  readonly runSendProcess: (argv: SendArgv) => boolean
}

/**
 * What became of the code cache: `used` (V8 took it), `rejected` (made from
 * this text, but V8 refused it: another V8 version or flags, or damaged),
 * `absent` (none, or one made from other text), `off` (no cache directory).
 */
export type SendCacheState = "used" | "rejected" | "absent" | "off"

/** A loaded bundle, and how to save its code cache. */
export interface LoadedSendBundle {
  readonly entry: SendEntry
  readonly cache: SendCacheState
  /** Writes the code cache when this run found none it could use; a no-op otherwise. Call after a send that succeeded. */
  readonly persist: () => void
}

/** What `loadSendBundle` depends on, injectable for tests. */
export interface SendBundleDeps {
  /** dist/bin/client.cjs (a `file:` URL). */
  readonly bundle: URL
  /** The private compile cache directory (compileCache.ts), or `undefined` to load without a code cache. */
  readonly cacheDir: string | undefined
  /** `process.getBuiltinModule` (absent before Node 22.3 / 20.16: the caller imports the bundle instead). */
  readonly getBuiltinModule: typeof process.getBuiltinModule | undefined
}

/** Bytes of the SHA-256 that opens a cache file. */
const HASH_BYTES = 32

const isSendEntry = (u: unknown): u is SendEntry =>
  typeof u === "object" && u !== null && "runSendProcess" in u && typeof u.runSendProcess === "function"

const noop = (): void => {}

/** The cache file of `bundlePath` for this Node.js (see the module header). */
export const sendCacheFile = (
  bundlePath: string,
  deps: Pick<SendBundleDeps, "cacheDir" | "getBuiltinModule">
): string | undefined => {
  if (deps.cacheDir === undefined || deps.getBuiltinModule === undefined) return undefined
  const crypto = deps.getBuiltinModule("node:crypto")
  const path = deps.getBuiltinModule("node:path")
  const where = crypto.createHash("sha256").update(bundlePath, "utf8").digest("hex").slice(0, 16)
  return path.join(deps.cacheDir, `send-${process.version}-${process.arch}-${where}.v8cache`)
}

/**
 * Compiles and runs the `send` bundle with its code cache when there is one
 * for this exact text; `undefined` when the bundle is not there (the
 * unbundled tsc build) or this Node.js lacks `process.getBuiltinModule`, so
 * that the caller imports clientEntry.ts as a module instead. Errors of the
 * bundle's own top-level code are thrown as an import's would be.
 */
export const loadSendBundle = (deps: SendBundleDeps): LoadedSendBundle | undefined => {
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
  const cacheFile = sendCacheFile(bundlePath, deps)
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
  if (!isSendEntry(entry)) throw new Error(`${bundlePath} does not export runSendProcess`)
  const cache: SendCacheState = cacheFile === undefined
    ? "off"
    : cached === undefined
    ? "absent"
    : script.cachedDataRejected === true
    ? "rejected"
    : "used"
  const persist = cache === "used" || cacheFile === undefined || hash === undefined
    ? noop
    : () => writeCache(fs, cacheFile, hash, script.createCachedData())
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

/** Writes `hash` + `data` to `file` through a temporary file; failures are ignored (the next send compiles again). */
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
