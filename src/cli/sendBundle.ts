/**
 * The `send` fast path's bundle, dist/bin/client.cjs, as cachedBundle.ts
 * loads it: its entry (`runSendProcess`, clientEntry.ts) and its code cache,
 * `send-<version>-<arch>-<hash>.v8cache`, which main.ts persists after a send
 * that exited 0, so that the cache holds the code of a whole send.
 */
import { type BundleCacheState, type BundleDeps, bundleCacheFile, type LoadedBundle, loadCachedBundle } from "./cachedBundle.ts"
import type { SendArgv } from "./clientArgv.ts"

/** What the `send` bundle exports (clientEntry.ts). */
export interface SendEntry {
  /** Runs the send as this process's program; `false` when the full program must answer instead (a bad `--name`). */
  readonly runSendProcess: (argv: SendArgv) => boolean
}

/** What became of the `send` bundle's code cache (cachedBundle.ts). */
export type SendCacheState = BundleCacheState

/** A loaded `send` bundle, and how to save its code cache. */
export type LoadedSendBundle = LoadedBundle<SendEntry>

/** What `loadSendBundle` depends on, injectable for tests. */
export type SendBundleDeps = BundleDeps

const isSendEntry = (u: unknown): u is SendEntry =>
  typeof u === "object" && u !== null && "runSendProcess" in u && typeof u.runSendProcess === "function"

/** The cache file of the `send` bundle at `bundlePath` for this Node.js. */
export const sendCacheFile = (
  bundlePath: string,
  deps: Pick<SendBundleDeps, "cacheDir" | "getBuiltinModule">
): string | undefined => bundleCacheFile("send", bundlePath, deps)

/**
 * Compiles and runs the `send` bundle with its code cache (see
 * cachedBundle.ts); `undefined` when there is no bundle or no
 * `process.getBuiltinModule`, so that main.ts imports clientEntry.ts instead.
 */
export const loadSendBundle = (deps: SendBundleDeps): LoadedSendBundle | undefined =>
  loadCachedBundle({ name: "send", isEntry: isSendEntry, entryName: "runSendProcess" }, deps)
