/**
 * The pi session file as the session runtime's inbound journal (C-DLV-14,
 * C-DLV-16), and the session-entry shapes the extension writes.
 *
 * - An accepted inbound message is saved as an `intercom_received` custom
 *   entry carrying `inbound` (the recipient session id, the client instance
 *   that received it, and the message as it arrived) before it goes to pi's
 *   queue. A process that restores them continues the instance the latest
 *   names (`inheritedInstance`, instance.ts), and leaves out the messages a
 *   checkpoint of which names an instance another live generation holds.
 * - It reaches the model as an `intercom_message` custom message whose
 *   `details` name the sender and message id; once such an entry exists
 *   anywhere in the session file, the message is in history (compaction only
 *   hides entries from the model, it never removes them).
 * - `undelivered` = checkpoints *of this session id* with no such message
 *   (and no ask's tool result naming them as its reply, below), each marked
 *   `withdrawn` when an `intercom_withdrawn` entry of this session id saved
 *   after it names it (its sender cancelled or replaced it before the agent
 *   had it, P73: `withdrawnEntry`); a later message reusing the (sender, id)
 *   is not marked by it. Files written before that entry existed have none.
 *   A fork copies its parent's entries under a new session id, so it never
 *   takes its parent's mail over; a resume keeps the id, so it does.
 * - `handled` = every such message in the file (on any branch of the
 *   session tree: the agent saw each), and every reply an ask's tool result
 *   names (`intercom` and `contact_supervisor` put the reply's `replyId` and
 *   `from` in their details, a failure reply's error result too: the agent
 *   got the reply as that result), with the checkpoint's receive time (or the
 *   result's time) when there is one: what a resumed process must not hand the agent again when
 *   the broker sends it a copy (known issue 6). Each is marked `withdrawn` as `undelivered`
 *   marks its latest checkpoint (the host saves a withdrawal of a message it took too, src/pi/host.ts),
 *   so the resumed process tells that withdrawal no second time (review revbt bt1). A fork's copies of its
 *   parent's messages count too, which is harmless: the broker never sends
 *   the parent's mail to the fork.
 * - A checkpoint is durable only once pi has written the session file
 *   (`checkpointsDurable`): pi creates it with the session's first user or
 *   assistant message and keeps every entry before that in memory
 *   (`SessionManager._persist` in pi 1.6), so until then the generation's
 *   client confirms nothing to the broker (generation.ts).
 */
import * as Schema from "effect/Schema"
import { existsSync } from "node:fs"
import { Attachment, SessionInfo } from "../protocol/frames.ts"
import type { HandledMessage, JournalRecord } from "../session/Host.ts"
import { JournalRecordSchema } from "../session/InboundJournal.ts"

import { MESSAGE_TYPE, RECEIVED_ENTRY, WITHDRAWN_ENTRY } from "./entries.ts"
import { CONTACT_SUPERVISOR_NAME, TOOL_NAME } from "./names.ts"

/** `details` of an `intercom_message` custom message. */
export const MessageDetails = Schema.Struct({
  messageId: Schema.String,
  from: SessionInfo,
  expectsReply: Schema.Boolean,
  intent: Schema.String,
  /** How its sender withdrew it (P73) while it waited in pi's queue: it entered the model's context so marked (queuedInbound.ts). */
  withdrawn: Schema.optionalKey(Schema.Literals(["cancel", "supersede"]))
})
/** `details` of an `intercom_message` custom message. */
export type MessageDetails = typeof MessageDetails.Type

/**
 * The checkpoint part of an `intercom_received` entry: the record, the session it was accepted for, and the
 * client instance that received it (`instance`, instance.ts; none in checkpoints saved before it was kept).
 */
const Checkpoint = Schema.Struct({
  recipient: Schema.String,
  instance: Schema.optionalKey(Schema.String),
  ...JournalRecordSchema.fields
})

/** `data` of an `intercom_received` / `intercom_sent` entry. */
export const HistoryData = Schema.Struct({
  to: Schema.optionalKey(Schema.String),
  from: Schema.optionalKey(Schema.String),
  message: Schema.Struct({
    text: Schema.String,
    attachments: Schema.optionalKey(Schema.Array(Attachment)),
    replyTo: Schema.optionalKey(Schema.String)
  }),
  messageId: Schema.String,
  timestamp: Schema.Finite,
  inbound: Schema.optionalKey(Checkpoint)
})
/** `data` of an `intercom_received` / `intercom_sent` entry. */
export type HistoryData = typeof HistoryData.Type

/**
 * `data` of an `intercom_withdrawn` entry: the sender of the message
 * `messageId` that `recipient` checkpointed withdrew it (P73), and how.
 */
export const WithdrawnData = Schema.Struct({
  recipient: Schema.String,
  fromId: Schema.String,
  messageId: Schema.String,
  action: Schema.Literals(["cancel", "supersede"])
})
/** `data` of an `intercom_withdrawn` entry. */
export type WithdrawnData = typeof WithdrawnData.Type

const decodeCheckpointData = Schema.decodeUnknownOption(Schema.Struct({ inbound: Checkpoint }))
const decodeWithdrawnData = Schema.decodeUnknownOption(WithdrawnData)
const decodeDetails = Schema.decodeUnknownOption(MessageDetails)

/** The part of a pi session entry this module reads. */
export interface EntryView {
  readonly type: string
  readonly customType?: string
  readonly data?: unknown
  readonly details?: unknown
  /** A `message` entry's message (a tool result's `role`, `toolName`, `details`, `timestamp`). */
  readonly message?: unknown
}

/** The tools whose results name the reply that answered an ask (`replyId`, `from`). */
const ASKING_TOOLS: ReadonlySet<string> = new Set([TOOL_NAME, CONTACT_SUPERVISOR_NAME])

const decodeAnsweredResult = Schema.decodeUnknownOption(Schema.Struct({
  role: Schema.Literal("toolResult"),
  toolName: Schema.String,
  timestamp: Schema.optionalKey(Schema.Finite),
  details: Schema.Struct({ replyId: Schema.String, from: Schema.String })
}))

/** The reply a tool result of an ask names (it reached the agent as that result), if any. */
const answeredBy = (entry: EntryView): HandledMessage | undefined => {
  if (entry.type !== "message") return undefined
  const decoded = decodeAnsweredResult(entry.message)
  if (decoded._tag === "None" || !ASKING_TOOLS.has(decoded.value.toolName)) return undefined
  const { details, timestamp } = decoded.value
  return timestamp === undefined
    ? { fromId: details.from, messageId: details.replyId }
    : { fromId: details.from, messageId: details.replyId, receivedAt: timestamp }
}

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/**
 * The `intercom_received` entry that checkpoints an accepted message for
 * `recipient`, received by the client instance `instance` (instance.ts; none
 * when the generation could not hold its instance).
 */
export const checkpointEntry = (recipient: string, record: JournalRecord, instance?: string): HistoryData => ({
  from: record.from.name?.trim() || record.from.id,
  message: {
    text: record.message.content.text,
    ...(record.message.content.attachments === undefined ? {} : { attachments: record.message.content.attachments })
  },
  messageId: record.message.id,
  timestamp: record.message.timestamp,
  inbound: {
    recipient,
    ...(instance === undefined ? {} : { instance }),
    from: record.from,
    message: record.message,
    receivedAt: record.receivedAt,
    ...(record.askTimeoutMs === undefined ? {} : { askTimeoutMs: record.askTimeoutMs }),
    ...(record.delivery === undefined ? {} : { delivery: record.delivery }),
    ...(record.channel === undefined ? {} : { channel: record.channel })
  }
})

/**
 * The `intercom_withdrawn` entry data saying `recipient`'s checkpointed
 * message `messageId` of `fromId` was withdrawn by its sender (`action`).
 */
export const withdrawnEntry = (
  recipient: string,
  fromId: string,
  messageId: string,
  action: WithdrawnData["action"]
): WithdrawnData => ({ recipient, fromId, messageId, action })

/** The `details` of a custom message, when it is an intercom message. */
export const messageDetails = (entry: EntryView): MessageDetails | undefined => {
  if (entry.type !== "custom_message" || entry.customType !== MESSAGE_TYPE) return undefined
  const decoded = decodeDetails(entry.details)
  return decoded._tag === "Some" ? decoded.value : undefined
}

/** What one pass over a session file finds: the messages history holds, in order, and `recipient`'s checkpoints. */
interface JournalScan {
  /** Intercom messages and replies named by ask results, in the order they were added (repeats kept). */
  readonly inHistory: ReadonlyArray<HandledMessage>
  /**
   * `recipient`'s checkpoints, in the order they were saved (repeats kept), with the instance each names and how
   * its sender withdrew it: the latest `intercom_withdrawn` entry of its (sender id, message id) saved after it.
   */
  readonly saved: ReadonlyArray<Saved>
}

/** One checkpoint of `recipient` a scan found. */
interface Saved {
  readonly record: JournalRecord
  readonly instance: string | undefined
  withdrawn: WithdrawnData["action"] | undefined
}

/** One pass over `entries`: what history holds, and `recipient`'s checkpoints. */
const scan = (recipient: string, entries: ReadonlyArray<EntryView>): JournalScan => {
  const inHistory: Array<HandledMessage> = []
  const saved: Array<Saved> = []
  /** The checkpoints saved so far, by (sender id, message id): a withdrawal names those, never one saved after it. */
  const savedByKey = new Map<string, Array<Saved>>()
  for (const entry of entries) {
    const details = messageDetails(entry)
    if (details !== undefined) {
      inHistory.push({ fromId: details.from.id, messageId: details.messageId })
      continue
    }
    // A reply the agent got as an ask's result is in history too.
    const answer = answeredBy(entry)
    if (answer !== undefined) {
      inHistory.push(answer)
      continue
    }
    if (entry.type === "custom" && entry.customType === WITHDRAWN_ENTRY) {
      const mark = decodeWithdrawnData(entry.data)
      if (mark._tag === "Some" && mark.value.recipient === recipient) {
        // A later message reusing the (sender, id) was never withdrawn by it (it is saved after this entry).
        for (const before of savedByKey.get(keyOf(mark.value.fromId, mark.value.messageId)) ?? []) {
          before.withdrawn = mark.value.action
        }
      }
      continue
    }
    if (entry.type !== "custom" || entry.customType !== RECEIVED_ENTRY) continue
    const decoded = decodeCheckpointData(entry.data)
    if (decoded._tag === "None" || decoded.value.inbound.recipient !== recipient) continue
    const { askTimeoutMs, channel, delivery, from, instance, message, receivedAt } = decoded.value.inbound
    const checkpoint: Saved = {
      record: {
        from,
        message,
        receivedAt,
        ...(askTimeoutMs === undefined ? {} : { askTimeoutMs }),
        ...(delivery === undefined ? {} : { delivery }),
        ...(channel === undefined ? {} : { channel })
      },
      instance,
      withdrawn: undefined
    }
    saved.push(checkpoint)
    const key = keyOf(from.id, message.id)
    const ofKey = savedByKey.get(key)
    if (ofKey === undefined) savedByKey.set(key, [checkpoint])
    else ofKey.push(checkpoint)
  }
  return { inHistory, saved }
}

/**
 * The client instance the latest checkpoint of `recipient` in `entries`
 * names (instance.ts): the one a process that restores them continues.
 * Undefined when the latest names none (saved before instances were kept,
 * or by a generation that could not hold its instance) or there is none — a
 * fork's copies of its parent's checkpoints are another recipient's.
 */
export const inheritedInstance = (recipient: string, entries: ReadonlyArray<EntryView>): string | undefined => {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]
    if (entry === undefined || entry.type !== "custom" || entry.customType !== RECEIVED_ENTRY) continue
    const decoded = decodeCheckpointData(entry.data)
    if (decoded._tag === "None" || decoded.value.inbound.recipient !== recipient) continue
    return decoded.value.inbound.instance
  }
  return undefined
}

/**
 * The checkpoints of `recipient` that no `intercom_message` in `entries`
 * delivered, and no ask's tool result names as its reply, in the order they
 * were saved, each message once. `leftTo`: client instances a live
 * generation of another process holds (instance.ts `liveInstances`) — a
 * message any checkpoint of which names one of them is that generation's (it
 * received it, or restored it when it started), so it is left out here.
 */
export const undeliveredIn = (
  recipient: string,
  entries: ReadonlyArray<EntryView>,
  leftTo: ReadonlySet<string> = new Set()
): ReadonlyArray<JournalRecord> => {
  const { inHistory, saved } = scan(recipient, entries)
  const skipped = new Set(inHistory.map((held) => keyOf(held.fromId, held.messageId)))
  for (const { instance, record } of saved) {
    if (instance !== undefined && leftTo.has(instance)) skipped.add(keyOf(record.from.id, record.message.id))
  }
  const restored: Array<JournalRecord> = []
  for (const { record, withdrawn } of saved) {
    const key = keyOf(record.from.id, record.message.id)
    if (skipped.has(key)) continue
    skipped.add(key)
    restored.push(withdrawn === undefined ? record : { ...record, withdrawn })
  }
  return restored
}

/**
 * The client instances the checkpoints of `recipient`'s undelivered messages
 * (`undeliveredIn`) name, each once: those whose liveness decides who
 * restores them.
 */
export const undeliveredInstances = (recipient: string, entries: ReadonlyArray<EntryView>): ReadonlyArray<string> => {
  const { inHistory, saved } = scan(recipient, entries)
  const delivered = new Set(inHistory.map((held) => keyOf(held.fromId, held.messageId)))
  const instances = new Set<string>()
  for (const { instance, record } of saved) {
    if (instance !== undefined && !delivered.has(keyOf(record.from.id, record.message.id))) instances.add(instance)
  }
  return [...instances]
}

/**
 * The intercom messages `entries` hold (history, `InboundJournal.handled`),
 * and the replies ask tool results name, each once, in the order they were
 * added, with the receive time of the checkpoint `recipient` saved for it
 * (else the tool result's time) when there is one, and how its sender
 * withdrew it when an `intercom_withdrawn` entry saved after the latest such
 * checkpoint says so (a later message reusing the (sender, id) is not marked
 * by it: review revbt bt1).
 */
export const handledIn = (recipient: string, entries: ReadonlyArray<EntryView>): ReadonlyArray<HandledMessage> => {
  const { inHistory, saved } = scan(recipient, entries)
  /** The latest checkpoint of each (sender id, message id). */
  const latest = new Map(saved.map((checkpoint) => [keyOf(checkpoint.record.from.id, checkpoint.record.message.id), checkpoint]))
  const seen = new Set<string>()
  const handled: Array<HandledMessage> = []
  for (const held of inHistory) {
    const key = keyOf(held.fromId, held.messageId)
    if (seen.has(key)) continue
    seen.add(key)
    const checkpoint = latest.get(key)
    const at = checkpoint?.record.receivedAt ?? held.receivedAt
    const withdrawn = checkpoint?.withdrawn
    handled.push({
      fromId: held.fromId,
      messageId: held.messageId,
      ...(at === undefined ? {} : { receivedAt: at }),
      ...(withdrawn === undefined ? {} : { withdrawn })
    })
  }
  return handled
}

/**
 * Whether the entries the extension appends to pi's session are as durable
 * as they will get, for the session file pi named (`getSessionFile()`).
 * pi writes no file until the session holds a user or assistant message:
 * then it writes every entry so far at once, and appends each later one as
 * it is added, synchronously — so once the file exists, every checkpoint
 * made is in it. pi has no call that writes it earlier, nor one that says
 * it did: its existence is the signal. In memory (`--no-session`, no file)
 * nothing ever persists, so there is nothing to wait for: true.
 */
export const checkpointsDurable = (sessionFile: string | undefined): boolean =>
  sessionFile === undefined || existsSync(sessionFile)
