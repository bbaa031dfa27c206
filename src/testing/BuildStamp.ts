/**
 * Which build of the simulation ran: a content hash of the compiled modules
 * and whether any source module changed after it was compiled.
 *
 * A seed's run depends on its seed, its flags and the code (docs/testing.md);
 * a sweep run against a `dist/` older than `src/` judges the same world by
 * rules that are no longer the tree's (seed 63420's one "failure" was such a
 * build). `sim-cli` prints this stamp before its report, so two reports of
 * one seed can be told apart by build, and warns when the build is stale.
 *
 * Plain synchronous file reads, run once at the CLI's start — never on a
 * simulated path.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

/** What {@link readBuildStamp} found about one compiled tree. */
export interface BuildStamp {
  /** The first 12 hex digits of a SHA-256 over every compiled module's path and contents. */
  readonly id: string
  /** How many compiled modules (`.js`) the hash covers. */
  readonly modules: number
  /**
   * Source modules (`src/…/x.ts`) modified after their compiled module
   * (`dist/…/x.js`), or with no compiled module at all; relative to the
   * project root, sorted. Empty when the build is current or no `src/` lies
   * beside `dist/` (an installed package).
   */
  readonly stale: ReadonlyArray<string>
}

const walk = (dir: string, suffix: string, into: Array<string>): Array<string> => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) walk(full, suffix, into)
    else if (entry.name.endsWith(suffix) && !entry.name.endsWith(".d.ts")) into.push(full)
  }
  return into
}

/**
 * Stamps the compiled tree at `distRoot` (tsc's per-module output), comparing
 * it with `srcRoot` when that directory exists. The CLI bundles under
 * `dist/bin` are left out: the simulation never loads them.
 *
 * @example
 * ```ts
 * import * as path from "node:path"
 * import { fileURLToPath } from "node:url"
 * import { readBuildStamp } from "./BuildStamp.ts"
 *
 * const dist = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
 * const stamp = readBuildStamp(dist, path.join(dist, "..", "src"))
 * console.log(`build ${stamp.id}`, stamp.stale)
 * ```
 */
export const readBuildStamp = (distRoot: string, srcRoot: string): BuildStamp => {
  const binDir = path.join(distRoot, "bin")
  const compiled = walk(distRoot, ".js", []).filter((file) => !file.startsWith(binDir + path.sep)).sort()
  const hash = createHash("sha256")
  for (const file of compiled) {
    hash.update(path.relative(distRoot, file))
    hash.update("\0")
    hash.update(fs.readFileSync(file))
    hash.update("\0")
  }
  const stale: Array<string> = []
  if (fs.existsSync(srcRoot)) {
    const projectRoot = path.dirname(srcRoot)
    for (const source of walk(srcRoot, ".ts", []).sort()) {
      const output = path.join(distRoot, path.relative(srcRoot, source)).replace(/\.ts$/, ".js")
      const built = fs.statSync(output, { throwIfNoEntry: false })
      if (built === undefined || fs.statSync(source).mtimeMs > built.mtimeMs) {
        stale.push(path.relative(projectRoot, source))
      }
    }
  }
  return { id: hash.digest("hex").slice(0, 12), modules: compiled.length, stale }
}

/**
 * The lines `sim-cli` prints for a stamp: the build's id, and when source
 * modules changed after the build, a warning naming up to three of them and
 * what to do.
 */
export const formatBuildStamp = (stamp: BuildStamp): ReadonlyArray<string> => {
  const line = `build ${stamp.id} (${stamp.modules} compiled modules)`
  if (stamp.stale.length === 0) return [line]
  const named = stamp.stale.slice(0, 3).join(", ")
  const more = stamp.stale.length > 3 ? ` and ${stamp.stale.length - 3} more` : ""
  return [
    line,
    `warning: stale build — ${named}${more} changed after dist/ was built; this run judges by the older code. ` +
    "Run `npm run build` (or `npm run sim`, which builds first) and run again."
  ]
}
