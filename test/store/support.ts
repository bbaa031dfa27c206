/** Temp directories for the store tests: real files, removed after each test. */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** A fresh temp directory, removed when the test's scope closes. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "intercom-store-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** The permission bits of `file`. */
export const modeOf = (file: string): number => fs.statSync(file).mode & 0o777

/** Whether this process ignores file permissions (root), so EACCES cannot be provoked. */
export const isRoot = typeof process.getuid === "function" && process.getuid() === 0
