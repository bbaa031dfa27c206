/** Builders shared by the workflow tests. */
import { Effect } from "effect"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"

/** An ordinary message entry; `payload` is its id, so batches read as lists of ids. */
export const entry = (
  messageId: string,
  senderId: string,
  options: Partial<Omit<InboundEntry<string>, "messageId" | "senderId" | "payload">> = {}
): InboundEntry<string> => ({
  messageId,
  senderId,
  senderName: senderId,
  timestamp: 0,
  expectsReply: false,
  payload: messageId,
  ...options
})

/** The ids of a list of entries, in order. */
export const ids = (entries: ReadonlyArray<InboundEntry<string>>): ReadonlyArray<string> =>
  entries.map((e) => e.messageId)

/**
 * Lets every runnable fiber reach its next suspension (a sleep, a Deferred),
 * so a following `TestClock.adjust` finds their timers registered. Only
 * scheduler yields: no time passes.
 */
export const settle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.yieldNow
})
