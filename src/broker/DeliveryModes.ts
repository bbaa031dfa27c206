/**
 * The `delivery-v1` fields of a `send`, as the broker reads them: undefined
 * (the default `steer`, or a sender not granted the extension, whose fields
 * are ignored like any unknown field), a checked `DeliveryChoice`, or the
 * refusal of an invalid combination (`checkDelivery`, the same rules and texts
 * the client applies before sending).
 *
 * Costs a plain send three property reads and nothing else.
 */
import { DeliveryCode } from "../protocol/delivery.ts"
import { checkDelivery, type DeliveryChoice, isDefaultDelivery, isDeliveryRefusal } from "../protocol/deliveryModes.ts"
import { DELIVERY_V1 } from "../protocol/features.ts"
import type { Message } from "../protocol/frames.ts"
import type { Session } from "./Registry.ts"
import type { Refusal } from "./SendStage.ts"

/** The delivery choice of a send frame from `sender`; see the module header. */
export const deliveryOfFrame = (
  frame: { readonly [key: string]: unknown },
  sender: Session,
  message: Message
): DeliveryChoice | Refusal | undefined => {
  const { delivery, queueMode, threadId } = frame
  if (delivery === undefined && queueMode === undefined && threadId === undefined) return undefined
  if (!sender.peer.features.has(DELIVERY_V1)) return undefined
  const kind = message.expectsReply === true ? "ask" : message.replyTo === undefined ? "send" : "reply"
  const choice = checkDelivery({ delivery, queueMode, threadId }, kind)
  if (isDeliveryRefusal(choice)) return { code: DeliveryCode.InvalidMessage, reason: choice.reason }
  return isDefaultDelivery(choice) ? undefined : choice
}

/** True for a refusal from `deliveryOfFrame`. */
export const isRefusal = (value: DeliveryChoice | Refusal): value is Refusal => "code" in value
