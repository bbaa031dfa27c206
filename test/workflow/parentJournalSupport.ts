/**
 * What the ParentJournal tests share: a temp dir, messages and records from
 * `PEER`, and an agent whose ports record what they took.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { InboundMessage } from "../../src/client/events.ts"
import type { Message } from "../../src/protocol/frames.ts"
import type { JournalRecord } from "../../src/session/Host.ts"
import { inboundEntry } from "../../src/workflow/InboundAdapter.ts"
import { DispatchError } from "../../src/workflow/orderingErrors.ts"
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

