/**
 * The `intercom` executable (`bin` → dist/bin/intercom.mjs), bundled from
 * src/cli, minified, with source maps. tsc's dist/ stays what library users
 * import (`dist/<layer>/index.js` with .d.ts); these bundles are only the CLI.
 *
 * Why bundles: a client spawns `intercom broker` and polls health, and the
 * broker must answer within 150 ms (docs/performance.md). Unbundled, Node
 * resolves and evaluates hundreds of effect modules; a bundle holds only the
 * code the command uses.
 *
 * Four builds, one per path through main.ts, and the broker script:
 *
 * - dist/bin/intercom.mjs: main.ts alone (a few KB). It picks a path and
 *   imports one of the other three.
 * - dist/bin/broker.cjs: the `broker` fast path (brokerEntry.ts), in one
 *   file of its own. A CommonJS script for the same reason as client.cjs:
 *   main.ts runs it through brokerBundle.ts, which keeps a V8 code cache of
 *   a start until `health_ok` (about 30 ms of CPU and of wall time less than
 *   Node's compile cache, docs/performance.md "Startup, eleventh stop");
 *   loaded as a script, it also skips the ES module facades of the node:
 *   built-ins it imports.
 * - dist/bin/client.cjs: the `send` fast path (clientEntry.ts), in one file
 *   of its own: the client and session runtime without effect/cli. A
 *   CommonJS script rather than a module: main.ts runs it through
 *   sendBundle.ts, which keeps a V8 code cache of a whole send (Node's
 *   compile cache holds only what is compiled at load).
 * - dist/bin/program.mjs (+ dist/bin/chunks/): the effect/cli program.
 * - dist/bin/intercom-broker.mjs: the broker script a configured
 *   `brokerCommand` runs (brokerScript.ts): a few lines that make the
 *   command line `broker` and import intercom.mjs.
 *
 * The broker is built on its own rather than as a chunk of one split build:
 * src/ imports the `effect` barrel, and in a split build every module the
 * barrel re-exports counts as reachable from every path, so effect modules
 * that only the client commands use (Schedule, Tracer, …) land in the chunk
 * the broker shares with them. Tree-shaking keeps that harmless in a single
 * build; across chunks it cost the broker path ~35 KB and ~10 ms of CPU.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { defineConfig, type OutputOptions, type Plugin } from "rolldown"

const OUT_DIR = path.join("dist", "bin")

const output: OutputOptions = {
  dir: OUT_DIR,
  format: "esm",
  entryFileNames: "[name].mjs",
  chunkFileNames: "chunks/[name]-[hash].mjs",
  minify: true,
  sourcemap: true
}

/**
 * The broker and send bundles: CommonJS scripts in one file, which
 * cachedBundle.ts compiles with a code cache of its own. ASCII only
 * (non-ASCII escaped in strings): it decodes the text on every start, and a
 * text with one non-ASCII character becomes a two-byte string: 5.7 ms to
 * decode instead of 1.7 (the send bundle's figures).
 */
const SCRIPT_OUTPUT: OutputOptions = {
  ...output,
  format: "cjs",
  entryFileNames: "[name].cjs",
  codeSplitting: false,
  charset: "ascii"
}

/** effect's ConfigProvider.fromEnv spreads `import.meta?.env` (a bundler's env): undefined in Node, as in the other bundles. */
const IMPORT_META_ENV: Readonly<Record<string, string>> = { "import.meta.env": "undefined" }

/** main.ts's dynamic imports of the paths become imports of their bundles. */
const PATHS: Readonly<Record<string, string>> = {
  "./main.ts": "./intercom.mjs",
  "./brokerEntry.ts": "./broker.cjs",
  "./clientEntry.ts": "./client.cjs",
  "./program.ts": "./program.mjs"
}

/** The modules whose imports of the paths above load those bundles. */
const PATH_IMPORTERS: ReadonlySet<string> = new Set(["main.ts", "brokerScript.ts"])

const pathsAsBundles: Plugin = {
  name: "paths-as-bundles",
  resolveId(source, importer) {
    const bundle = PATHS[source]
    if (bundle === undefined || importer === undefined || !PATH_IMPORTERS.has(path.basename(importer))) return null
    return { id: bundle, external: true }
  }
}

/**
 * Removes chunks of earlier builds. Files are overwritten in place rather
 * than the dir being cleared first, so that a running test or client never
 * finds the executable missing while someone rebuilds.
 */
const pruneStaleChunks: Plugin = {
  name: "prune-stale-chunks",
  writeBundle(_options, bundle) {
    const dir = path.join(OUT_DIR, "chunks")
    for (const file of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
      if (!(`chunks/${file}` in bundle)) fs.rmSync(path.join(dir, file), { force: true })
    }
  }
}

// npm sets the mode when it installs a bin; this makes the built file runnable in the repo too.
const executable: Plugin = {
  name: "executable",
  writeBundle() {
    fs.chmodSync(path.join(OUT_DIR, "intercom.mjs"), 0o755)
  }
}

export default defineConfig([
  {
    input: { broker: "src/cli/brokerEntry.ts" },
    platform: "node",
    transform: { define: IMPORT_META_ENV },
    output: SCRIPT_OUTPUT
  },
  {
    input: { client: "src/cli/clientEntry.ts" },
    platform: "node",
    transform: { define: IMPORT_META_ENV },
    output: SCRIPT_OUTPUT
  },
  {
    input: { program: "src/cli/program.ts" },
    platform: "node",
    plugins: [pruneStaleChunks],
    output
  },
  {
    input: { intercom: "src/cli/main.ts" },
    platform: "node",
    plugins: [pathsAsBundles, executable],
    output
  },
  {
    input: { "intercom-broker": "src/cli/brokerScript.ts" },
    platform: "node",
    plugins: [pathsAsBundles],
    output
  }
])
