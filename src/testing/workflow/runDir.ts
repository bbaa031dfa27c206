/**
 * A directory of one simulated run's own files (a workflow parent's
 * `ParentJournal`), removed with the run's Scope. Its path is random; it
 * reaches a trace only through a journal's warning (a torn line, a failed
 * write), which the sweeps have not produced.
 */
import { Effect, type Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

/** A fresh temp directory, removed (with everything in it) when the current Scope closes. */
export const runDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "intercom-sim-parent-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)
