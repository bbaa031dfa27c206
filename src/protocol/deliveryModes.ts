/**
 * Delivery modes (extension `delivery-v1`, C-DLV-1…4, C-ASK-10): the one place
 * that decides whether a combination of `delivery`, `queueMode`, `threadId`
 * and the legacy `passive` alias is valid. The session runtime, the CLI, the
 * client and the broker all call `checkDelivery`, so the same input is refused
 * with the same text everywhere, before anything is sent.
 *
 * Pure and allocation-free for the common case (nothing given: `STEER`).
 */
import { LABEL_CONTROL, MAX_ID_LENGTH } from "./limits.ts"
import { shownValue } from "./shownValue.ts"

/** How a message reaches a busy recipient (C-DLV-1). */
export type DeliveryMode = "steer" | "queue" | "passive"

/** With `queue`: `stack` keeps every message, `replace` keeps only the latest per thread (C-DLV-4, C-DLV-5). */
export type QueueMode = "stack" | "replace"

/** The delivery modes, in the order documentation lists them. */
export const DELIVERY_MODES: ReadonlyArray<DeliveryMode> = ["steer", "queue", "passive"]

/** The queue modes. */
export const QUEUE_MODES: ReadonlyArray<QueueMode> = ["stack", "replace"]

/** A checked delivery choice; `queueMode` only with `queue`, `threadId` only with `replace`. */
export interface DeliveryChoice {
  readonly delivery: DeliveryMode
  readonly queueMode?: QueueMode | undefined
  readonly threadId?: string | undefined
}

/** The default choice: `steer`, no queue mode, no thread (C-DLV-2). */
export const STEER: DeliveryChoice = { delivery: "steer" }

/** What a caller may give; anything not a string (or boolean for `passive`) is refused. */
export interface DeliveryInput {
  readonly delivery?: unknown
  readonly queueMode?: unknown
  readonly threadId?: unknown
  /** Legacy, send-only alias for `delivery: "passive"` (C-DLV-3). */
  readonly passive?: unknown
}

/** Which outgoing operation the choice is for: `passive` is send-only, and an ask is never passive. */
export type DeliveryKind = "send" | "ask" | "reply"

/** A refused combination: the text names what was wrong and what to do. */
export interface DeliveryRefusal {
  readonly _tag: "DeliveryRefusal"
  readonly reason: string
}

const refuse = (reason: string): DeliveryRefusal => ({ _tag: "DeliveryRefusal", reason })

/** True for a refusal from `checkDelivery`. */
export const isDeliveryRefusal = (value: DeliveryChoice | DeliveryRefusal): value is DeliveryRefusal =>
  "_tag" in value

const isMode = (value: unknown): value is DeliveryMode => value === "steer" || value === "queue" || value === "passive"
const isQueueMode = (value: unknown): value is QueueMode => value === "stack" || value === "replace"

/**
 * Checks a delivery choice for `kind` (C-DLV-2…4, C-ASK-10): `delivery`
 * defaults to `steer`; `passive: true` is `delivery: "passive"` on a send
 * only; an ask is never passive; `queueMode` only with `queue`; `replace`
 * needs a `threadId`; `threadId` only with `replace`. Anything else is a
 * `DeliveryRefusal` saying what to change.
 *
 * @example
 * ```ts
 * import { checkDelivery } from "effect-intercom/protocol"
 *
 * checkDelivery({}, "send") // { delivery: "steer" }
 * checkDelivery({ delivery: "queue", queueMode: "replace", threadId: "build" }, "send")
 * checkDelivery({ delivery: "passive" }, "ask") // refused: an ask is never passive
 * ```
 */
export const checkDelivery = (input: DeliveryInput, kind: DeliveryKind): DeliveryChoice | DeliveryRefusal => {
  const { delivery, queueMode, threadId, passive } = input
  if (delivery === undefined && queueMode === undefined && threadId === undefined && passive === undefined) return STEER
  if (delivery !== undefined && !isMode(delivery)) {
    return refuse(`Invalid delivery ${shownValue(delivery)}: use "steer", "queue" or "passive"`)
  }
  if (passive !== undefined && typeof passive !== "boolean") {
    return refuse(`Invalid passive ${shownValue(passive)}: it is true or false (or use delivery: "passive")`)
  }
  if (passive === true) {
    if (kind !== "send") {
      return refuse(`passive: true is a send-only alias; ${kind === "ask" ? "an ask is never passive" : `use delivery: "passive" for a reply`}`)
    }
    if (delivery !== undefined && delivery !== "passive") {
      return refuse(`passive: true conflicts with delivery: "${delivery}"; give one of them`)
    }
  }
  if (passive === false && delivery === "passive") {
    return refuse(`passive: false conflicts with delivery: "passive"; give one of them`)
  }
  const mode: DeliveryMode = passive === true ? "passive" : delivery ?? "steer"
  if (kind === "ask" && mode === "passive") {
    return refuse(`An ask is never passive: it waits for an answer, so the recipient must see it; use send for a passive note`)
  }
  if (queueMode !== undefined) {
    if (!isQueueMode(queueMode)) return refuse(`Invalid queueMode ${shownValue(queueMode)}: use "stack" or "replace"`)
    if (mode !== "queue") return refuse(`queueMode is only valid with delivery: "queue" (got delivery: "${mode}")`)
  }
  if (threadId !== undefined) {
    if (queueMode !== "replace") return refuse(`threadId is only valid with delivery: "queue" and queueMode: "replace"`)
    if (typeof threadId !== "string" || threadId.trim() === "") {
      return refuse(`Invalid threadId: it must be a non-empty string naming the thread whose latest message replaces earlier ones`)
    }
    if (threadId.length > MAX_ID_LENGTH) return refuse(`Invalid threadId: it is longer than ${MAX_ID_LENGTH} characters`)
    if (LABEL_CONTROL.test(threadId)) return refuse(`Invalid threadId: it contains a control character`)
    return { delivery: "queue", queueMode: "replace", threadId }
  }
  if (queueMode === "replace") {
    return refuse(`queueMode: "replace" needs a threadId: messages with the same threadId replace each other`)
  }
  if (mode === "steer") return STEER
  return queueMode === undefined ? { delivery: mode } : { delivery: mode, queueMode }
}

/** True when the choice is the default (`steer`, nothing else): nothing goes on the wire for it. */
export const isDefaultDelivery = (choice: DeliveryChoice): boolean =>
  choice.delivery === "steer" && choice.queueMode === undefined && choice.threadId === undefined

/** True when the broker stages the message for coalescing (C-DLV-5). */
export const isReplace = (choice: DeliveryChoice | undefined): boolean => choice?.queueMode === "replace"

