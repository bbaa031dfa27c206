/**
 * `npm run typecheck`: the project's type check and its check for Effects that
 * are built and never run, in one compiler pass over one Program.
 *
 * The compiler is @effect/tsgo's build of TypeScript 7 (the `typescript`
 * package's own Go compiler with the Effect language service compiled in):
 * it reports every diagnostic `tsc` reports, plus the Effect rules that
 * tsconfig.lint.json turns on (an Effect statement that is neither yielded,
 * returned nor assigned, and the like), as errors that fail the run.
 * `effect-tsgo get-exe-path` picks the build made from the same TypeScript
 * commit as the installed `typescript` package, so the check is the one `tsc`
 * would run (the package's `lib/getExePath` export is not used: in 0.45.0 it
 * rejects the package's own upstream.json, schema version 5 where it expects 4).
 *
 * Usage: `node scripts/typecheck.ts [tsc arguments]`; with none, `-p
 * tsconfig.lint.json`. `--noEmit` is always added. Exits with the compiler's
 * status. On a platform whose compiler package-lock.json does not carry (it
 * carries linux-x64's alone), a run with no arguments type-checks with the
 * `typescript` package's own `tsc` instead, without the Effect rules, and
 * says so; on linux-x64, or with arguments, a missing compiler fails (exit 2).
 */
import { spawnSync } from "node:child_process"
import { createRequire } from "node:module"
import * as path from "node:path"

/** The compiler to run, or a message saying why there is none. */
const compiler = (): { readonly exe: string } | { readonly problem: string } => {
  let cli: string
  try {
    const manifest = createRequire(import.meta.url).resolve("@effect/tsgo/package.json")
    cli = path.join(path.dirname(manifest), "dist", "effect-tsgo.cjs")
  } catch {
    return { problem: "@effect/tsgo is not installed" }
  }
  const asked = spawnSync(process.execPath, [cli, "get-exe-path", "--log-level", "error"], { encoding: "utf8" })
  const exe = asked.stdout.trim().split("\n").at(-1) ?? ""
  return asked.status === 0 && exe !== ""
    ? { exe }
    : { problem: (asked.stderr + asked.stdout).trim() || `effect-tsgo get-exe-path exited with ${asked.status}` }
}

/**
 * The one platform package-lock.json carries @effect/tsgo's compiler for
 * (docs/testing.md, "Effects that never run"). On it a missing compiler is an
 * error; elsewhere the type check runs without the Effect rules, and says so.
 */
const LOCKED_PLATFORM = "linux-x64"

const found = compiler()
if ("problem" in found) {
  const platform = `${process.platform}-${process.arch}`
  if (platform !== LOCKED_PLATFORM && process.argv.length <= 2) {
    console.error(
      `scripts/typecheck.ts: no @effect/tsgo compiler for ${platform} (${found.problem});\n` +
        `  package-lock.json carries only its ${LOCKED_PLATFORM} build. Type-checking with the \`typescript\`\n` +
        "  package's tsc WITHOUT the check for Effects that never run; `npm install @effect/tsgo` here adds\n" +
        "  this platform's build (and its lock entry) to get the check too."
    )
    const tsc = path.join(path.dirname(createRequire(import.meta.url).resolve("typescript/package.json")), "bin", "tsc")
    const plain = spawnSync(process.execPath, [tsc, "-p", "tsconfig.json", "--noEmit"], { stdio: "inherit" })
    process.exit(plain.status ?? 1)
  }
  console.error(
    `scripts/typecheck.ts: cannot find @effect/tsgo's compiler: ${found.problem}\n` +
      "  Run `npm install` (it is a devDependency). If the installed `typescript` is newer than the\n" +
      "  versions @effect/tsgo lists as supported (its README), upgrade @effect/tsgo to a release\n" +
      "  that lists it; `npx tsc -p tsconfig.json --noEmit` type-checks without the Effect rules meanwhile."
  )
  process.exit(2)
}

const given = process.argv.slice(2)
const args = [...(given.length > 0 ? given : ["-p", "tsconfig.lint.json"]), "--noEmit"]
const run = spawnSync(found.exe, args, { stdio: "inherit" })
if (run.error !== undefined) {
  console.error(`scripts/typecheck.ts: could not run ${found.exe}: ${run.error.message}`)
  process.exit(2)
}
process.exit(run.status ?? 1)
