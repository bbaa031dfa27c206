/**
 * How the host gets an inbound message (C-DLV-1): its intent — trigger,
 * steer, follow-up or passive — and its rendering, decided when the hand-off
 * is about to give it to the host (`HandoffHooks.prepare`), so the intent
 * reflects the session's state then. A message its sender withdrew (P73) is
 * prepared passive, marked withdrawn, its queued turn dropped; a busy
 * headless host that exits when done answers an ask it cannot take
 * (C-DLV-13); an actionable message makes a lazily exposed tool visible
 * before the host gets it (C-TOOL-15).
 *
 * Owns the intent each message was prepared with, until the host took it
 * (`intentOf`, `forget`: the journal keeper is told whether a taken message
 * waits in the host's queue, where Esc can clear it, C-DLV-16). The state is
 * one generation's: a WeakMap by context, built by `makeInboundIntents`.
 *
 * Why a module of its own: the intent rules are a decision about one message
 * against the session's settings and the host's state, apart from the
 * message fiber's admission and the control rules (Inbound.ts,
 * InboundControls.ts).
 */
import { Effect } from "effect"
import type { DeliveryMode } from "../protocol/deliveryModes.ts"
import type { Message, MessageControl } from "../protocol/frames.ts"
import type { Generation } from "./Generation.ts"
import type { DeliveryIntent, Inbound } from "./Host.ts"
import { type LifecycleStatus, NON_INTERACTIVE_BUSY_REPLY, renderInbound } from "./render.ts"
import type { InboundContext } from "./ReplyTracker.ts"
import { newMessage } from "./Sending.ts"
import type { ToolExposure } from "./ToolExposure.ts"

const isBusy = (status: LifecycleStatus): boolean => status !== "idle"

/**
 * The intent of a message the session may hand over (C-DLV-1): passive
 * never wakes the model; an idle agent starts a turn; a busy one is steered
 * (steer) or gets it as a follow-up after its current work (queue).
 *
 * @category delivery
 * @since 0.1.0
 */
export const intentFor = (
  delivery: DeliveryMode | undefined,
  triggers: boolean,
  busy: boolean
): DeliveryIntent =>
  !triggers || delivery === "passive" ? "passive" : !busy ? "trigger" : delivery === "queue" ? "followUp" : "steer"

/**
 * The intent rules of one generation and the intents they handed out.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundIntents {
  /**
   * How the host gets a message, decided when it is about to be handed over
   * (C-DLV-1): `trigger` when idle (steer or queue), `steer` when busy and
   * the sender chose steer, `followUp` when busy and it chose queue,
   * `passive` when the sender chose passive, `inboundTrigger` says no, or a
   * busy headless host already answered the ask; `passive` and marked so when
   * `withdrawn`.
   */
  readonly prepare: (context: InboundContext, withdrawn: MessageControl["action"] | undefined) => Effect.Effect<Inbound>
  /** The intent `context` was last prepared with, until `forget`. */
  readonly intentOf: (context: InboundContext) => DeliveryIntent | undefined
  /** The host took `context`: its intent is no longer kept. */
  readonly forget: (context: InboundContext) => void
}

/**
 * Builds the intent rules of a generation. `lifecycle` reads the host's
 * current status, which decides between `trigger` and `steer`.
 *
 * @example
 * ```ts
 * const intents = makeInboundIntents(generation, lifecycle, exposure)
 * const handoff = yield* makeHostHandoff(host.deliver, { prepare: intents.prepare, taken })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeInboundIntents = (
  generation: Generation,
  lifecycle: () => LifecycleStatus,
  exposure: ToolExposure
): InboundIntents => {
  const { background, client, host, settings, tracker } = generation
  /** The intent each message was prepared with, until the host took it. */
  const intents = new WeakMap<InboundContext, DeliveryIntent>()

  const shouldTrigger = (message: Message): boolean =>
    settings.inboundTrigger === "always" || (settings.inboundTrigger === "replies" && message.replyTo !== undefined)

  /** C-DLV-13 / open question 11: a busy headless session that will exit answers an ask it cannot take. */
  const answerBusy = (context: InboundContext): Effect.Effect<void> =>
    Effect.gen(function*() {
      const message = yield* newMessage(NON_INTERACTIVE_BUSY_REPLY, undefined, { replyTo: context.message.id })
      yield* background(
        client.send({ to: context.from.id, message }).pipe(
          Effect.tap(() => Effect.andThen(Effect.sync(() => tracker.markReplied(context.from.id, context.message.id)), generation.pendingChanged))
        )
      )
    })

  const prepare = (context: InboundContext, withdrawn: MessageControl["action"] | undefined): Effect.Effect<Inbound> =>
    Effect.gen(function*() {
      const { from, message } = context
      const expectsReply = message.expectsReply === true
      const busy = isBusy(lifecycle())
      let intent: DeliveryIntent
      if (withdrawn !== undefined) {
        // P73: withdrawn before the host took it — shown and stored, marked so, but no turn acts on it (the
        // turn an earlier preparation queued it for will not come). Its ask was closed when the withdrawal
        // came, or when it was recorded (Inbound.ts `handOver`).
        tracker.unqueueTurn(from.id, message.id)
        intent = "passive"
      } else if (!host.hasUI && host.exitsWhenDone === true && busy && expectsReply && message.replyTo === undefined) {
        yield* answerBusy(context)
        intent = "passive"
      } else {
        intent = intentFor(context.delivery, shouldTrigger(message), busy)
      }
      if (intent !== "passive") yield* exposure.expose
      // After the host's exposeTool: a prepare that died there is run again, and must not queue the turn twice.
      if (intent === "trigger" || intent === "followUp") tracker.queueTurn(context)
      intents.set(context, intent)
      return {
        intent,
        from,
        message,
        text: renderInbound(from, message, settings.replyHint, withdrawn),
        expectsReply,
        delivery: context.delivery ?? "steer",
        ...(context.channel === undefined ? {} : { channel: context.channel }),
        ...(context.read === undefined ? {} : { read: context.read })
      }
    })

  return {
    prepare,
    intentOf: (context) => intents.get(context),
    forget: (context) => {
      intents.delete(context)
    }
  }
}
