/**
 * `ParentJournal`'s lock, `<file>.lock`: while a journal is open, another
 * one over the same file — in this process or another — is refused (it
 * would restore the first's messages into its own parent); a lock file that
 * is not one is reported and left alone; a process killed with SIGKILL lets
 * go at once, and the next one restores what it left.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as ParentJournal from "../../src/workflow/ParentJournal.ts"
import { spawnNode } from "../support/process.ts"
import { ids, openedJournal, record, tempDir } from "./parentJournalSupport.ts"

const HOLDER = fileURLToPath(new URL("./fixtures/hold-parent-journal.ts", import.meta.url))

describe("ParentJournal, the lock in one process", () => {
  it.effect("a second journal over a file whose journal is open fails with ParentJournalInUse, saying what to do; once the first's Scope closed, it opens", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const first = yield* openedJournal(file)
      yield* first.journal.checkpoint(record("a"))
      const error = yield* Effect.flip(Effect.scoped(ParentJournal.make(file)))
      assert.strictEqual(error._tag, "ParentJournalInUse")
      assert.include(error.message, file)
      assert.include(error.message, ParentJournal.lockFileOf(file))
      assert.include(error.message, "its own journal file")
      // The refused journal wrote nothing, and the open one goes on.
      yield* first.journal.checkpoint(record("b"))
      assert.strictEqual(yield* first.pending, 2)
      yield* first.end
      const next = yield* ParentJournal.make(file)
      assert.deepStrictEqual(ids(yield* next.journal.undelivered), ["a", "b"])
      assert.strictEqual(fs.statSync(ParentJournal.lockFileOf(file)).mode & 0o777, 0o600)
    }))

  it.effect("a lock file that is not one fails with ParentJournalLockFailed, naming it, and is left as it was", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      fs.writeFileSync(file, `${JSON.stringify({ a: record("m1") })}\n`)
      const foreign = ParentJournal.lockFileOf(file)
      fs.writeFileSync(foreign, "not a lock: another program's text file", { mode: 0o644 })
      fs.chmodSync(foreign, 0o644)
      const error = yield* Effect.flip(Effect.scoped(ParentJournal.make(file)))
      assert.strictEqual(error._tag, "ParentJournalLockFailed")
      assert.include(error.message, foreign)
      assert.include(error.message, "move")
      assert.strictEqual(fs.statSync(foreign).mode & 0o777, 0o644, "another program's file keeps its mode")
      assert.strictEqual(fs.readFileSync(foreign, "utf8"), "not a lock: another program's text file")
      fs.rmSync(ParentJournal.lockFileOf(file))
      assert.deepStrictEqual(ids(yield* (yield* ParentJournal.make(file)).journal.undelivered), ["m1"])
    }))
})

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
