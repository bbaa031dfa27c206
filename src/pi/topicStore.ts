/**
 * Topic state in the pi session file (C-TOP-15): subscriptions, own latest
 * publications and received records, saved as `intercom-topic` custom
 * entries — session history only, never sent to the model. Every save
 * appends the whole state for this session id; the latest one wins when a
 * generation starts (a reload, a resume). The session runtime saves only
 * changed state, and quiet changes once per burst (`Topics.ts`), so the
 * entries grow with what the session did rather than with every update it
 * was sent. A fork has a new session id and
 * starts without its parent's topic state, as with the inbound journal.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { TopicEntry, TopicRecord, TopicSubscription } from "../protocol/topics.ts"
import type { TopicStore } from "../session/Host.ts"
import { TOPIC_ENTRY } from "./entries.ts"
import type { PiAccess, PiHostApi, PiHostContext } from "./host.ts"
import type { EntryView } from "./journal.ts"

/** `data` of an `intercom-topic` entry. */
export const TopicEntryData = Schema.Struct({
  sessionId: Schema.String,
  subscriptions: Schema.Array(TopicSubscription),
  publications: Schema.Array(TopicRecord),
  received: Schema.Array(Schema.Struct({ entry: TopicEntry, notifiedRevision: Schema.Finite }))
})
/** `data` of an `intercom-topic` entry. */
export type TopicEntryData = typeof TopicEntryData.Type

const decode = Schema.decodeUnknownExit(TopicEntryData)

/** The saved state of `sessionId` in `entries`: its latest entry, undefined if none; fails if that entry does not decode. */
export const latestTopicState = (
  sessionId: string,
  entries: ReadonlyArray<EntryView>
): Effect.Effect<TopicEntryData | undefined, string> => {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.type !== "custom" || entry.customType !== TOPIC_ENTRY) continue
    const data: unknown = entry.data
    const owner = typeof data === "object" && data !== null ? Reflect.get(data, "sessionId") : undefined
    if (owner !== sessionId) continue
    const exit = decode(data)
    return exit._tag === "Success" ? Effect.succeed(exit.value) : Effect.fail("an intercom-topic entry does not decode")
  }
  return Effect.succeed(undefined)
}

/** The host's topic store over the pi session `sessionId`. */
export const makePiTopicStore = (access: PiAccess<PiHostApi, PiHostContext>, sessionId: string): TopicStore => ({
  load: access.touch((_pi, ctx) => ctx.sessionManager.getEntries()).pipe(
    Effect.flatMap((entries) => latestTopicState(sessionId, entries))
  ),
  // Also while the generation closes: the topic runtime saves a quiet change still waiting then.
  save: (state) => access.touchWhileClosing((pi) => pi.appendEntry(TOPIC_ENTRY, { sessionId, ...state })),
  warn: (text) => access.touch((_pi, ctx) => ctx.ui.notify(text, "warning")).pipe(Effect.ignore)
})
