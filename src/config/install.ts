/**
 * Where this package is installed, found from whichever of its modules is
 * running: `src/` (tests), `dist/<layer>/` (tsc's output, what library users
 * import) or a chunk of the bundled executable under `dist/bin/`. Depends on
 * nothing but Node, so the bench can use it too.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The `name` in this package's package.json, which `packageInfo` looks for. */
export const PACKAGE_NAME = "effect-intercom"

/** Where this package is installed, and its version. */
export interface PackageInfo {
  /** The dir holding this package's package.json. */
  readonly root: string
  readonly version: string
}

const readPackage = (dir: string): PackageInfo | undefined => {
  try {
    const pkg: unknown = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
    if (typeof pkg !== "object" || pkg === null || !("name" in pkg) || pkg.name !== PACKAGE_NAME) return undefined
    return { root: dir, version: "version" in pkg && typeof pkg.version === "string" ? pkg.version : "unknown" }
  } catch {
    return undefined
  }
}

/**
 * The nearest ancestor of this module whose package.json names this package.
 * Read on each call, not cached: a process asks once or twice (its `--version`,
 * a broker spawn), and a cache would be module-level state.
 */
export const packageInfo = (): PackageInfo | undefined => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  while (true) {
    const info = readPackage(dir)
    if (info !== undefined) return info
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** The bundled executable (`bin.intercom`), relative to the package root. */
export const BUNDLED_CLI = path.join("dist", "bin", "intercom.mjs")
/** tsc's unbundled CLI entry, relative to the package root. */
export const UNBUNDLED_CLI = path.join("dist", "cli", "main.js")
/** The bundled broker script (cli/brokerScript.ts), relative to the package root. */
export const BUNDLED_BROKER_SCRIPT = path.join("dist", "bin", "intercom-broker.mjs")
/** tsc's unbundled broker script, relative to the package root. */
export const UNBUNDLED_BROKER_SCRIPT = path.join("dist", "cli", "brokerScript.js")

/** The package root: the nearest ancestor naming this package, else (never in an install) two levels up. */
const packageRoot = (): string =>
  // Without a package.json (never in an install), src/ and dist/<layer>/ both sit two levels down.
  packageInfo()?.root ?? path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..")

/**
 * The V8 flags a client's spawned broker runs with, on its `node` command
 * line before the entry point (they cannot be set later: `v8.setFlagsFromString`
 * at startup does not resize the heap). `--max-semi-space-size=4`: a 4 MB
 * young-generation semi-space instead of V8's larger default, which roughly
 * halves an idle session's RSS (about 15 → 8.5 KiB) and lowers a durable
 * broker's CPU per message (fewer page faults), at the price of a longer ask
 * tail on a loaded machine (docs/performance.md, "V8's share of the gap,
 * seventh stop"). Only the default launch uses them: a configured
 * `brokerCommand` is run as given.
 */
export const BROKER_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=4"]

/**
 * The `intercom` executable a client spawns for `intercom broker`: the
 * bundle (its `broker` fast path answers health in well under 150 ms), or —
 * in a tree that was only compiled with tsc — the unbundled entry, which
 * behaves the same, slower.
 */
export const brokerEntryPoint = (): string => {
  const root = packageRoot()
  const bundle = path.join(root, BUNDLED_CLI)
  return fs.existsSync(bundle) ? bundle : path.join(root, UNBUNDLED_CLI)
}

/**
 * The broker script a configured `brokerCommand` runs, as
 * `<brokerCommand> ...brokerArgs <script>` (C-CFG-4): a script that is a
 * broker by itself (`intercom broker` for the agent dir its environment
 * names), as pi-intercom's is — the bundle, or tsc's unbundled one.
 */
export const brokerScriptPath = (): string => {
  const root = packageRoot()
  const bundle = path.join(root, BUNDLED_BROKER_SCRIPT)
  return fs.existsSync(bundle) ? bundle : path.join(root, UNBUNDLED_BROKER_SCRIPT)
}
