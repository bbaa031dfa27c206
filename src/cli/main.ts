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
 * All are dynamic imports, so each path loads only its own code (its own
 * bundle, dist/bin/broker.mjs, dist/bin/client.mjs or dist/bin/program.mjs).
 */
import { enableCompileCache } from "node:module"
import { parseBrokerArgv } from "./argv.ts"
import { parseSendArgv } from "./clientArgv.ts"

// V8's compiled code of the modules loaded below is cached across runs (in
// $NODE_COMPILE_CACHE, else <tmpdir>/node-compile-cache; keyed by content and
// Node version; NODE_DISABLE_COMPILE_CACHE=1 turns it off). It saves the
// broker 25–30 ms of CPU per start (docs/performance.md).
enableCompileCache()

const args = process.argv.slice(2)
const flags = parseBrokerArgv(args)
const send = flags === undefined ? parseSendArgv(args) : undefined
if (flags !== undefined) {
  const { runBrokerProcess } = await import("./brokerEntry.ts")
  runBrokerProcess(flags)
} else if (send !== undefined) {
  const { runSendProcess } = await import("./clientEntry.ts")
  await runSendProcess(send)
} else {
  const { runCliProcess } = await import("./program.ts")
  runCliProcess()
}
