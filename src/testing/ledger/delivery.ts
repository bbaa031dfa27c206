/**
 * The ledger's view of delivery modes (`delivery-v1`): what a sender asked
 * for, what the broker made of a replace message, and the two invariants
 * that follow — "only the latest replace per key is delivered, and exactly
 * once" (`replace-not-latest`; "exactly once" is `duplicate-delivery` and
 * `silent-loss`, which hold for staged messages like any other) and "passive
 * never triggers a model turn" (`passive-woke-model`).
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
  /** Simulated time at which the broker read the attempt it accepted. */
  brokerReadAt: number | undefined
  /**
   * `deliverAt` of the `delivery_queued` its sender read: when the window of
   * its key closes and it leaves staging, if still the latest. Not the
   * `brokerDeliveredAt` of a `message` frame a client reads: a message handed
   * over but still in the broker's output when its recipient's connection
   * closed is requeued and stamped again when the mailbox flushes it.
   */
  windowClosesAt: number | undefined
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
      brokerReadAt: undefined,
      windowClosesAt: undefined
    }

/** The broker read the accepted attempt of `record`. */
export const brokerReadDelivery = (state: LedgerState, record: MessageRecord): void => {
  if (record.delivery !== undefined) record.delivery.brokerReadAt = state.now()
}

/** The sender read `delivery_queued` for `record`, whose window closes at `deliverAt`. */
export const stagedRead = (record: MessageRecord, deliverAt: number): void => {
  if (record.delivery === undefined) return
  record.delivery.staged = true
  record.delivery.windowClosesAt = deliverAt
}

/** The sender read a `superseded` receipt for `record`. */
export const replacedRead = (state: LedgerState, record: MessageRecord, detail: string | undefined): void => {
  if (record.delivery === undefined) return
  record.delivery.replaced = true
  note(state, `   ${nameOf(state, record.sender)} told ${record.alias} was replaced: ${detail ?? ""}`)
}

/** A passive message reached its host: with any intent but `passive` it would have started or steered a turn. */
export const checkPassiveIntent = (state: LedgerState, record: MessageRecord, receiver: string, intent: string): void => {
  if (record.delivery?.mode !== "passive") return
  check(state, intent === "passive", "passive-woke-model", () =>
    `${record.alias} (passive, ${nameOf(state, record.sender)} → ${nameOf(state, receiver)}) was handed to the host as "${intent}": it would wake the model`)
}

/** Whether a staged message's fate is explained by its replacement (the sender was told, or the broker's record says so). */
export const wasReplaced = (record: MessageRecord): boolean =>
  record.delivery?.staged === true && (record.delivery.replaced || record.recordSays === "E_DELIVERY_SUPERSEDED")

/**
 * At the end of a run: for each (sender, recipient, thread), a staged message
 * whose window had not closed (its `deliverAt`) when a later message of its
 * key was staged must not have been delivered — the later one should have
 * replaced it. Also a message reported replaced must never have been
 * delivered.
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
  for (const records of byKey.values()) {
    for (const record of records) {
      const delivered = record.reads.length > 0 || record.hostDeliveries > 0
      if (!delivered) continue
      state.checkCount++
      if (record.delivery?.replaced === true) {
        violate(state, "replace-not-latest", `${record.alias} was reported replaced, yet it was delivered`)
        continue
      }
      const leftStaging = record.delivery?.windowClosesAt
      if (leftStaging === undefined) continue
      const later = records.find((other) => {
        const readAt = other.delivery?.brokerReadAt
        const ownRead = record.delivery?.brokerReadAt
        return other !== record && readAt !== undefined && ownRead !== undefined && readAt > ownRead && readAt < leftStaging
      })
      if (later !== undefined) {
        violate(
          state,
          "replace-not-latest",
          `${record.alias} (${nameOf(state, record.sender)} → ${nameOf(state, record.target ?? "?")}, thread "${
            record.delivery?.threadId ?? ""
          }") was delivered though ${later.alias} of the same thread was staged at ${
            later.delivery?.brokerReadAt ?? "?"
          } ms, before its window closed at ${leftStaging} ms`
        )
      }
    }
  }
}
