#!/usr/bin/env node
/**
 * The `intercom` executable. `bin` points at its bundle, dist/bin/intercom.mjs
 * (see rolldown.config.ts); tsc's dist/cli/main.js works the same, slower.
 *
 * This module stays tiny and imports nothing heavy: a client spawns
 * `intercom broker --dir <dir>` and polls health, so that command must start
 * fast. A well-formed `broker` argv (argv.ts) runs through the lean
 * brokerEntry.ts, a well-formed `send` (clientArgv.ts) through the lean
 * clientEntry.ts; anything else loads the effect/cli program (program.ts).
 * Each path loads only its own code (its own bundle, dist/bin/broker.cjs,
 * dist/bin/client.cjs or dist/bin/program.mjs): the program by dynamic
 * import, the broker and send bundles through brokerBundle.ts and
 * sendBundle.ts, which keep a V8 code cache of a start until `health_ok` and
 * of a whole send (cachedBundle.ts; the unbundled tsc build has neither
 * bundle and imports brokerEntry.ts or clientEntry.ts).
 *
 * Before any of that it checks the Node.js it runs on (nodeVersion.ts): on
 * one older than the package supports, every command says what it needs and
 * how to get it, and exits 1, instead of failing part way.
 */
import { parseBrokerArgv } from "./argv.ts"
import { nodeVersionProblem } from "./nodeVersion.ts"
import { loadBrokerBundle } from "./brokerBundle.ts"
import { parseSendArgv } from "./clientArgv.ts"
import { enableCompileCache } from "./compileCache.ts"
import { loadSendBundle } from "./sendBundle.ts"

const tooOld = nodeVersionProblem(process.versions.node, process.execPath)
if (tooOld !== undefined) {
  // Exit 1, as for a broker that cannot start: the command could not do its job (exit.ts).
  process.stderr.write(`${tooOld}\n`)
  process.exitCode = 1
} else {
  // Built-ins from process.getBuiltinModule rather than ES module imports: the
  // module facades of node:fs, node:os, node:path and node:module cost every
  // command ~10 ms of CPU (docs/performance.md). Every Node.js this runs on
  // (22.19 or newer, checked above) has it; without it they are imported.
  const builtin = typeof process.getBuiltinModule === "function" ? process.getBuiltinModule : undefined
  const nodeModule = builtin === undefined ? await import("node:module") : builtin("node:module")
  const os = builtin === undefined ? await import("node:os") : builtin("node:os")

  // V8's compiled code of the modules loaded below is cached across runs, in a
  // directory private to the user (compileCache.ts; keyed by content and Node
  // version; NODE_DISABLE_COMPILE_CACHE=1 turns it off). It saves each start
  // about 50 ms of CPU (docs/performance.md). Read from the namespace: without
  // it (a Node before 22.1, which the check above turns away) a command runs uncached.
  const compileCache = enableCompileCache({
    enable: nodeModule.enableCompileCache,
    env: process.env,
    tmpdir: os.tmpdir(),
    uid: process.getuid?.() ?? -1
  })

  const args = process.argv.slice(2)
  const flags = parseBrokerArgv(args)
  const send = flags === undefined ? parseSendArgv(args) : undefined
  const cacheDir = compileCache._tag === "Enabled" ? compileCache.directory : undefined
  if (flags !== undefined) {
    const bundle = loadBrokerBundle({ bundle: new URL("./broker.cjs", import.meta.url), cacheDir, getBuiltinModule: builtin })
    const entry = bundle?.entry ?? (await import("./brokerEntry.ts"))
    // The broker writes the cache itself once it has run a while (foreground.ts).
    entry.runBrokerProcess(flags, bundle?.persist)
  } else if (send !== undefined) {
    const bundle = loadSendBundle({ bundle: new URL("./client.cjs", import.meta.url), cacheDir, getBuiltinModule: builtin })
    const entry = bundle?.entry ?? (await import("./clientEntry.ts"))
    if (entry.runSendProcess(send)) {
      // After a send that succeeded, so that the cache holds the code of a whole send.
      process.once("exit", (code) => {
        if (code === 0) bundle?.persist()
      })
    } else {
      const { runCliProcess } = await import("./program.ts")
      runCliProcess()
    }
  } else {
    const { runCliProcess } = await import("./program.ts")
    runCliProcess()
  }
}
