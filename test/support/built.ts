/**
 * The one check for tests that run what `npm run build` produced (the CLI
 * bundle, the compiled extension, the fuzzer and sim CLIs, a client's
 * auto-spawned broker). Without a build such a test would fail late and
 * vaguely — a child's bare "Cannot find module", or a wait running out — so
 * each asks for its file here first and fails at once naming the file and the
 * command. Nothing here builds: `npm test` runs `npm run build` before vitest.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The package root (the dir holding package.json and dist/). */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** The message a missing build output fails with; `relative` is its path from the package root. */
export const buildMissingMessage = (relative: string): string =>
  `${relative} missing: run \`npm run build\` (npm test builds first)`

/**
 * The absolute path of a build output, given relative to the package root
 * (`dist/bin/intercom.mjs`) or absolute; throws an Error with
 * `buildMissingMessage` when it does not exist. Called where the path is
 * needed — at a test file's top level when every test in it needs the file
 * (the file then fails at collection), else in the test or support function.
 */
export const built = (file: string): string => {
  const absolute = path.resolve(ROOT, file)
  if (!fs.existsSync(absolute)) throw new Error(buildMissingMessage(path.relative(ROOT, absolute)))
  return absolute
}

/** The CLI bundle package.json's `bin` points at: what the CLI and most process tests run. */
export const BUILT_CLI = "dist/bin/intercom.mjs"

/** What a process-mode fuzz broker (src/fuzz/BrokerUnderTest.ts) runs: the CLI bundle under the GC hook. */
export const BUILT_FUZZ_BROKER: ReadonlyArray<string> = [BUILT_CLI, "dist/fuzz/gcHook.js"]
