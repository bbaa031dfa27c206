/**
 * The ledger's view of delivery modes (`delivery-v1`): what a sender asked
 * for, what the broker made of a replace message, and the two invariants
 * that follow — "only the latest replace per key is delivered, and exactly
 * once" (`replace-not-latest`; "exactly once" is `duplicate-delivery` and
 * `silent-loss`, which hold for staged messages like any other) and "passive
 * never triggers a model turn" (`passive-woke-model`; a promise to a
 * recipient granted `delivery-v1`, not to a base client).
 *
 * Owns nothing of its own: it reads and writes the `delivery` note of each
 * `MessageRecord`.
 */
import type { DeliveryMode } from "../../protocol/deliveryModes.ts"
import { type LedgerState, type MessageRecord, nameOf } from "./state.ts"
import { check, note, violate } from "./trace.ts"

/** What the ledger knows about a non-steer message's delivery. */
export interface DeliveryNote {
  readonly mode: DeliveryMode
  /** The replace thread (`queueMode: "replace"`), the key's third part. */
  readonly threadId: string | undefined
  /** The sender read `delivery_queued` for it. */
  staged: boolean
  /** The sender read a `superseded` receipt for it (a later message of its key replaced it). */
  replaced: boolean
  /**
   * `deliverAt` of the `delivery_queued` its sender read: when the window of
   * its key closes and it leaves staging, if still the latest. Not the
   * `brokerDeliveredAt` of a `message` frame a client reads: a message handed
   * over but still in the broker's output when its recipient's connection
   * closed is requeued and stamped again when the mailbox flushes it.
   */
  windowClosesAt: number | undefined
  /** The broker incarnation that reported `windowClosesAt`: a crash ends every window. */
  windowEpoch: number | undefined
}

/** The note of a send frame's delivery fields; undefined for the default steer. */
export const deliveryNoteOf = (fields: {
  readonly delivery?: DeliveryMode | undefined
  readonly queueMode?: "stack" | "replace" | undefined
  readonly threadId?: string | undefined
}): DeliveryNote | undefined =>
  fields.delivery === undefined || fields.delivery === "steer"
    ? undefined
    : {
      mode: fields.delivery,
      threadId: fields.queueMode === "replace" ? fields.threadId : undefined,
      staged: false,
      replaced: false,
      windowClosesAt: undefined,
      windowEpoch: undefined
    }

/** The sender read `delivery_queued` for `record`, whose window closes at `deliverAt`, from broker incarnation `epoch`. */
export const stagedRead = (record: MessageRecord, deliverAt: number, epoch: number): void => {
  if (record.delivery === undefined) return
  record.delivery.staged = true
  record.delivery.windowClosesAt = deliverAt
  record.delivery.windowEpoch = epoch
}

/**
 * Whether `sender`'s reply to `questionId` was still staged at `at`: its sender read `delivery_queued`
 * for it from a broker incarnation that has not crashed, its window closes past `at`, no later message
 * of its key replaced it, and the broker has written it to no connection. Such a reply can leave staging
 * only after `at` (simulation/answerMailbox.ts asks it at the replier's close). A walk over the run's
 * messages: the op asks once, not the per-frame path.
 */
export const replyStagedAt = (state: LedgerState, sender: string, questionId: string, at: number): boolean => {
  for (const record of state.messages.values()) {
    if (record.kind !== "reply" || record.sender !== sender || record.replyTo !== questionId) continue
    const delivery = record.delivery
    if (
      delivery?.staged === true && !delivery.replaced && delivery.windowClosesAt !== undefined &&
      delivery.windowClosesAt > at && delivery.windowEpoch !== undefined &&
      !state.crashedEpochs.has(delivery.windowEpoch) && record.writtenTo.length === 0
    ) return true
  }
  return false
}

/** The sender read a `superseded` receipt for `record`. */
export const replacedRead = (state: LedgerState, record: MessageRecord, detail: string | undefined): void => {
  if (record.delivery === undefined) return
  record.delivery.replaced = true
  note(state, `   ${nameOf(state, record.sender)} told ${record.alias} was replaced: ${detail ?? ""}`)
}

/**
 * The intents the simulation's bare connections hand their mail over with:
 * a held return's connection of its own (simulation/heldReturn.ts) and a
 * hostile session's (simulation/hostile.ts). Both register without
 * `delivery-v1`, and the broker never tells such a base client a message's
 * mode (docs/protocol.md, `delivery-v1`: "a `message` frame to such a client
 * never carries them"), so nothing on its side can keep passive mail from a
 * model: `passive-woke-model` does not judge these hand-offs.
 */
export const BaseClientIntent = { ownConnection: "own-connection", hostile: "hostile" } as const

/**
 * A passive message reached its host: with any intent but `passive` it would
 * have started or steered a turn — unless the host is a base client's
 * (`BaseClientIntent`), which is never told the mode.
 */
export const checkPassiveIntent = (state: LedgerState, record: MessageRecord, receiver: string, intent: string): void => {
  if (record.delivery?.mode !== "passive") return
  if (intent === BaseClientIntent.ownConnection || intent === BaseClientIntent.hostile) return
  check(state, intent === "passive", "passive-woke-model", () =>
    `${record.alias} (passive, ${nameOf(state, record.sender)} → ${nameOf(state, receiver)}) was handed to the host as "${intent}": it would wake the model`)
}

/** Whether a staged message's fate is explained by its replacement (the sender was told, or the broker's record says so). */
export const wasReplaced = (record: MessageRecord): boolean =>
  record.delivery?.staged === true && (record.delivery.replaced || record.recordSays === "E_DELIVERY_SUPERSEDED")

const isDelivered = (record: MessageRecord): boolean => record.reads.length > 0 || record.hostDeliveries > 0

/**
 * At the end of a run: for each (sender, recipient, thread), a delivered
 * staged message must have been the last of its window, and no other window
 * of its key that ran to its close may have been open at the same time (one
 * cut short by its recipient leaving ends before its `deliverAt`; windows of
 * two broker incarnations, or of a run whose wall clock went back, are not
 * compared) — the broker keeps one
 * staged message per key, and a later one replaces it. A window is known by
 * its close (`deliverAt`, shared by every message that replaced into it) and
 * opened `replaceWindowMs` before. The time the broker read a later message
 * is no proof that it was staged then: a reader held back behind its
 * connection's parked output handles what it read later (PeerReader.ts).
 * Also a message reported replaced must never have been delivered.
 */
export const checkReplaceLatest = (state: LedgerState): void => {
  const byKey = new Map<string, Array<MessageRecord>>()
  for (const record of state.messages.values()) {
    const threadId = record.delivery?.threadId
    if (threadId === undefined || record.delivery?.staged !== true || record.target === undefined) continue
    const key = `${record.sender}\u0000${record.target}\u0000${threadId}`
    const list = byKey.get(key) ?? []
    list.push(record)
    byKey.set(key, list)
  }
  const window = state.replaceWindowMs
  for (const records of byKey.values()) {
    for (const record of records) {
      if (!isDelivered(record)) continue
      state.checkCount++
      if (record.delivery?.replaced === true) {
        violate(state, "replace-not-latest", `${record.alias} was reported replaced, yet it was delivered`)
        continue
      }
      const closes = record.delivery?.windowClosesAt
      if (closes === undefined) continue
      const later = records.find((other) => {
        const otherCloses = other.delivery?.windowClosesAt
        if (other === record || otherCloses === undefined) return false
        // Its own window: a message the broker took after it should have replaced it.
        if (otherCloses === closes) return (other.acceptSeq ?? 0) > (record.acceptSeq ?? 0)
        // Another window of the same key that ran to its close (its message was delivered) and was open at the
        // same time. A window cut short (its recipient left: its message expired) may be followed by one that
        // overlaps its span; windows are compared in the broker's clock, so not across a crash or a jump back.
        return isDelivered(other) && other.delivery?.windowEpoch === record.delivery?.windowEpoch &&
          !state.clockWentBack && Math.abs(otherCloses - closes) < window
      })
      if (later !== undefined) {
        const laterCloses = later.delivery?.windowClosesAt ?? 0
        violate(
          state,
          "replace-not-latest",
          `${record.alias} (${nameOf(state, record.sender)} → ${nameOf(state, record.target ?? "?")}, thread "${
            record.delivery?.threadId ?? ""
          }") was delivered though ${later.alias} of the same thread was staged ${
            laterCloses === closes
              ? `after it in the same window (closing at ${closes} ms)`
              : `in a window open from ${laterCloses - window} to ${laterCloses} ms, while its own was open (to ${closes} ms)`
          }`
        )
      }
    }
  }
}
