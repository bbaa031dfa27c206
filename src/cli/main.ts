#!/usr/bin/env node
/**
 * The `intercom` executable. `bin` points at its bundle, dist/bin/intercom.mjs
 * (see rolldown.config.ts); tsc's dist/cli/main.js works the same, slower.
 *
 * This module stays tiny and imports nothing heavy: a client spawns
 * `intercom broker --dir <dir>` and polls health, so that command must start
 * fast. A well-formed `broker` argv (argv.ts) runs through the lean
 * brokerEntry.ts; anything else loads the effect/cli program (program.ts).
 * Both are dynamic imports, so each path loads only its own code (its own
 * bundle, dist/bin/broker.mjs or dist/bin/program.mjs).
 */
import { enableCompileCache } from "node:module"
import { parseBrokerArgv } from "./argv.ts"

// V8's compiled code of the modules loaded below is cached across runs (in
// $NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache; keyed by content and
// Node version; NODE_DISABLE_COMPILE_CACHE=1 turns it off). It saves the
// broker 25–30 ms of CPU per start (docs/performance.md).
enableCompileCache()

const flags = parseBrokerArgv(process.argv.slice(2))
if (flags !== undefined) {
  const { runBrokerProcess } = await import("./brokerEntry.ts")
  runBrokerProcess(flags)
} else {
  const { runCliProcess } = await import("./program.ts")
  runCliProcess()
}
