/**
 * The `broker` fast path's bundle, dist/bin/broker.cjs, as cachedBundle.ts
 * loads it: its entry (`runBrokerProcess`, brokerEntry.ts) and its code
 * cache, `broker-<version>-<arch>-<hash>.v8cache`. The broker persists it
 * itself, once it has listened and answered its first clients
 * (foreground.ts), so that the cache holds the code of a start until
 * `health_ok` and a little after.
 */
import type { BrokerFlags } from "./argv.ts"
import { type BundleDeps, bundleCacheFile, type LoadedBundle, loadCachedBundle } from "./cachedBundle.ts"

/** What the `broker` bundle exports (brokerEntry.ts). */
export interface BrokerEntry {
  /** Runs the broker as this process's program; `persistCodeCache` writes the bundle's code cache (see foreground.ts). */
  readonly runBrokerProcess: (flags: BrokerFlags, persistCodeCache?: () => void) => void
}

const isBrokerEntry = (u: unknown): u is BrokerEntry =>
  typeof u === "object" && u !== null && "runBrokerProcess" in u && typeof u.runBrokerProcess === "function"

/** The cache file of the `broker` bundle at `bundlePath` for this Node.js. */
export const brokerCacheFile = (
  bundlePath: string,
  deps: Pick<BundleDeps, "cacheDir" | "getBuiltinModule">
): string | undefined => bundleCacheFile("broker", bundlePath, deps)

/**
 * Compiles and runs the `broker` bundle with its code cache (see
 * cachedBundle.ts); `undefined` when there is no bundle or no
 * `process.getBuiltinModule`, so that main.ts imports brokerEntry.ts instead.
 */
export const loadBrokerBundle = (deps: BundleDeps): LoadedBundle<BrokerEntry> | undefined =>
  loadCachedBundle({ name: "broker", isEntry: isBrokerEntry, entryName: "runBrokerProcess" }, deps)
