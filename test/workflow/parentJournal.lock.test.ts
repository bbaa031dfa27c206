/**
 * `ParentJournal`'s lock across processes: while a parent process has a
 * journal open, another process cannot open one over the same file (it
 * would restore the first's messages into its own parent); a process killed
 * with SIGKILL lets go at once, and the next one restores what it left. The
 * lock in one process, and its errors, are in parentJournal.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as ParentJournal from "../../src/workflow/ParentJournal.ts"
import { spawnNode } from "../support/process.ts"
import { ids, tempDir } from "./parentJournalSupport.ts"

const HOLDER = fileURLToPath(new URL("./fixtures/hold-parent-journal.ts", import.meta.url))

describe("ParentJournal, the lock across processes", () => {
  it.live("a journal another live process holds is refused; once that process is killed, the next restores what it accepted", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "parent", "main.jsonl")
      const holder = yield* spawnNode([HOLDER, file, "m1", "m2"], { stdin: "pipe" })
      yield* holder.waitStdout(/^held$/m)

      const refused = yield* Effect.flip(Effect.scoped(ParentJournal.make(file)))
      assert.strictEqual(refused._tag, "ParentJournalInUse")

      yield* holder.kill("SIGKILL")
      assert.strictEqual((yield* holder.waitExit()).signal, "SIGKILL")
      const next = yield* ParentJournal.make(file)
      assert.deepStrictEqual(ids(yield* next.journal.undelivered), ["m1", "m2"])
    }))
})
