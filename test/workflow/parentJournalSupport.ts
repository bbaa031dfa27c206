/**
 * What the ParentJournal tests share: a temp dir, messages and records from
 * `PEER`, an agent whose ports record what they took, and journals opened
 * as a later process would open them.
 */
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { InboundMessage } from "../../src/client/events.ts"
import type { Message } from "../../src/protocol/frames.ts"
import type { JournalRecord } from "../../src/session/Host.ts"
import { inboundEntry } from "../../src/workflow/InboundAdapter.ts"
import { DispatchError } from "../../src/workflow/orderingErrors.ts"
import * as ParentJournal from "../../src/workflow/ParentJournal.ts"
import type { ParentAgent, ParentEntry } from "../../src/workflow/ParentSession.ts"
import { PEER } from "./support.ts"

/** A fresh directory, removed with the test's Scope. */
export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "parent-journal-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

export const message = (id: string, text = id): Message => ({ id, timestamp: 1_000, content: { text } })

export const record = (id: string): JournalRecord => ({ from: PEER, message: message(id), receivedAt: 1_000 })

export const entryOf = (id: string): ParentEntry => inboundEntry({ from: PEER, message: message(id) } satisfies InboundMessage)

/** The text of the message an entry carries (these tests' messages without a text of their own carry their id). */
export const textOf = (entry: ParentEntry): string => entry.payload.message.content.text

/** An agent whose ports record the texts they took; `deliverBatch` takes `takes` entries then fails, when given. */
export const recordingAgent = (options: { readonly takes?: number; readonly routes?: boolean } = {}) => {
  const took: Array<string> = []
  const agent: ParentAgent<string> = {
    isIdle: Effect.succeed(true),
    deliverBatch: (batch) =>
      Effect.suspend(() => {
        const n = Math.min(options.takes ?? batch.length, batch.length)
        for (const entry of batch.slice(0, n)) took.push(textOf(entry))
        return n < batch.length ? Effect.fail(new DispatchError({ delivered: n, reason: "the agent stopped" })) : Effect.void
      }),
    surface: (entry) => Effect.sync(() => void took.push(textOf(entry))),
    passive: (entry) => Effect.sync(() => void took.push(textOf(entry))),
    dispatchTerminal: (batch) => Effect.sync(() => void took.push(...batch.prelude.map(textOf))),
    routeReply: (entry) => Effect.sync(() => options.routes === true && took.push(textOf(entry)) > 0)
  }
  return { took, agent }
}

export const ids = (records: ReadonlyArray<JournalRecord>) => records.map((r) => r.message.id)


/**
 * A journal in a Scope of its own, as one process's: `end` closes it (the process ends, and its lock
 * goes with it).
 */
export const openedJournal = (file: string, options: { readonly capacity?: number } = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const journal = yield* ParentJournal.make(file, options).pipe(Scope.provide(scope))
    return { ...journal, end: Scope.close(scope, Exit.void) }
  })

/**
 * A new journal over what `file` holds now, as a process started after a crash reads it — over a copy,
 * so the journal that wrote the file stays open (and keeps its lock) for the rest of the test. The copy
 * is in a directory of its own beside the file.
 */
export const afterCrash = (file: string, options: { readonly capacity?: number } = {}) =>
  Effect.suspend(() => {
    const dir = fs.mkdtempSync(path.join(path.dirname(file), "after-crash-"))
    const copy = path.join(dir, path.basename(file))
    if (fs.existsSync(file)) fs.copyFileSync(file, copy)
    return ParentJournal.make(copy, options)
  })
