/**
 * The `NotifyPort` of a run whose parent is reached through a session
 * runtime: notices and results are ordinary `send`s of the engine's own
 * `IntercomSession`. A send counts as acknowledged when the broker accepted
 * it (delivered, queued for a session that is away, or staged); anything
 * else — a refusal, a declined confirmation, a lost connection — is a
 * `DeliveryRefused` with the session's own message, so `ResultDelivery`
 * retries it. `wake: false` sends `passive` (shown, starts no turn).
 */
import { Effect } from "effect"
import type { IntercomSessionService } from "../session/models.ts"
import type { NotifyPort } from "./RunNotifications.ts"
import { DeliveryRefused } from "./ResultDelivery.ts"

/** A `NotifyPort` over `session.send`; `parentSession` is the port's parent (C-WFD-4). */
export const sessionNotifyPort = (
  session: Pick<IntercomSessionService, "send">,
  parentSession: string | undefined
): NotifyPort => ({
  parentSession,
  send: (target, text, { wake }) =>
    session.send({ to: target, message: text, delivery: wake ? "steer" : "passive" }).pipe(
      Effect.mapError((error) => new DeliveryRefused({ reason: error.message })),
      Effect.flatMap((sent) =>
        sent._tag === "Sent" ? Effect.void : Effect.fail(new DeliveryRefused({ reason: "the send was declined" }))
      )
    )
})
