/**
 * Replies taken as the client reads them (C-ORD-32): a reply to the live
 * ask resolves its waiter on the client's read path, ahead of the messages
 * read before it, however long the host journal takes to checkpoint those.
 *
 * - `takeAtRead` (plain synchronous code, `IntercomClient.takeOnRead`) takes
 *   only a message whose `replyTo` is the live waiter's question and that
 *   the message fiber has not seen, is not holding, admitting or — inside
 *   its own route, where the wait resumes synchronously and may bind again
 *   (review revbn BN1) — routing; it routes it (`slot.route`) and commits it
 *   to the generation's admission window.
 * - Binding a waiter takes a reply read before it was bound from the
 *   client's unhandled messages (`slot.onBound`, the client's look-back),
 *   which then leaves the client as handled once answered.
 * - One fiber posts each taken reply's `receiver_received`, activity and
 *   `acknowledged "matched reply waiter"` in its receive span, one reply at
 *   a time inside an uninterruptible step (review revbj BJ1); what it had not
 *   reached when the generation closes gets its receipts as the Scope closes.
 *
 * The wait's continuation runs inside `slot.route` (Effect resumes a fiber
 * awaiting a Deferred at once, up to its first suspension or its fiber's
 * step budget), so on the client's read path or inside a bind's look-back.
 * The rule that keeps that safe: everything owed to a taken reply — its
 * admission commit, its place in the receipts queue, the look-back's mark —
 * is done in `route`'s `taking`, before the resume; after it only the
 * routing mark is restored. What the continuation can do there:
 * - bind again (a failed-turn reply, C-DQ-8, BN1), and so look back: the
 *   routing mark and the admission window leave it every copy of the reply
 *   being routed; the client's look-back only asks, and removes what was
 *   taken once its search returned (UnhandledMessages.ts);
 * - close this generation: the finalizer finds the reply queued and posts
 *   its receipts (and `handled`, for one the look-back took);
 * - anything else is on clients' and slots' plain synchronous code or
 *   suspends the fiber: it cannot call the reader's `offer` (only the
 *   connection's reader does), and a wait that blocks suspends its own
 *   fiber, not the read.
 *
 * Owns the queue of taken replies and the routing mark; the waiter slot is
 * `ReplyWaiter.ts`'s, the admission window `InboundAdmission.ts`'s, and the
 * message fiber's own route (a reply read before its wait, reached in
 * order) stays in Inbound.ts.
 */
import { Clock, Effect, Queue, type Scope } from "effect"
import type { IntercomClientService } from "../client/IntercomClient.ts"
import type { InboundMessage } from "../client/events.ts"
import type { ReceiptStatus } from "../protocol/frames.ts"
import type { InboundAdmission } from "./InboundAdmission.ts"
import { receiving } from "./InboundTracing.ts"
import type { ReplyWaiterSlot } from "./ReplyWaiter.ts"

/**
 * What the read-time route needs of its generation's inbound handling.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReplyAtReadPorts {
  readonly client: IntercomClientService
  readonly slot: ReplyWaiterSlot
  readonly admission: InboundAdmission
  /** Whether the message fiber is admitting a copy of this (sender, message id): left to it. */
  readonly admitting: (fromId: string, messageId: string) => boolean
  /** Posts a receipt about `messageId` to its sender (queued on the connection, never waited for). */
  readonly receipt: (messageId: string, status: ReceiptStatus, detail?: string) => Effect.Effect<void>
  /** What follows a reply the live waiter took: the activity, then `acknowledged "matched reply waiter"`. */
  readonly answeredWaiter: (messageId: string) => Effect.Effect<void>
}

/**
 * Installs the read-time route for the generation's Scope: the client's
 * taker, the look-back on each bind, and the fiber that answers each taken
 * reply. Removed in reverse as the Scope closes: the look-back, then the
 * taker (none is taken after), then the fiber (once done with the reply it
 * is at), then the receipts of what it had not reached.
 *
 * @example
 * ```ts
 * // In a generation's inbound handling, before the message fiber starts:
 * yield* runReplyAtRead({ client, slot, admission, admitting, receipt, answeredWaiter })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const runReplyAtRead = (ports: ReplyAtReadPorts): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { admission, answeredWaiter, client, receipt, slot } = ports
    const clock = yield* Clock.Clock
    /** Replies `takeAtRead` gave their waiter, whose receipts, activity and span are still to come. */
    const takenAtRead = yield* Queue.unbounded<InboundMessage>()
    /** Those of them the client's look-back took from its unhandled messages: marked handled there once answered. */
    const tookBack = new WeakSet<InboundMessage>()
    /** The reply `takeAtRead` is routing, during its `slot.route` (review revbn BN1). */
    let routing: InboundMessage | undefined
    /** Whether `takeAtRead` is being asked by the client's look-back (during `lookBack`), not by a read. */
    let lookingBack = false
    /** The client's `handled` for a reply the look-back took (under `confirmWhenHandled`, it confirms what it held). */
    const leftClient = (inbound: InboundMessage): Effect.Effect<void> =>
      tookBack.has(inbound) ? client.handled(inbound) : Effect.void

    /**
     * Plain synchronous code on the client's read path: resolves the live waiter with its reply, true when it
     * did. A copy of a message admitted already, being admitted, still being handed over or being routed here is
     * left to the message fiber, which answers it as a duplicate or joins it, as it would have.
     */
    const takeAtRead = (inbound: InboundMessage): boolean => {
      const { from, message } = inbound
      // The common case first, and cheap: no live waiter on the question this answers (most messages answer none).
      if (message.replyTo === undefined || slot.current()?.questionId !== message.replyTo) return false
      const now = clock.currentTimeMillisUnsafe()
      if (admission.seen(from.id, message.id, now) || admission.holds(from.id, message.id)) return false
      if (ports.admitting(from.id, message.id)) return false
      if (routing !== undefined && routing.from.id === from.id && routing.message.id === message.id) return false
      const outer = routing
      routing = inbound
      const fromLookBack = lookingBack
      try {
        // Everything owed to the reply is done before the waiter resumes (inside `route`): the wait's continuation
        // may bind again (a nested look-back) or close this generation, whose finalizer must find the reply queued.
        return slot.route(inbound, () => {
          admission.commit(from.id, message.id, now)
          if (fromLookBack) tookBack.add(inbound)
          Queue.offerUnsafe(takenAtRead, inbound)
        })
      } finally {
        routing = outer
      }
    }

    const afterTaken = (inbound: InboundMessage): Effect.Effect<void> =>
      Effect.andThen(
        receiving(inbound, () =>
          Effect.as(Effect.andThen(receipt(inbound.message.id, "receiver_received"), answeredWaiter(inbound.message.id)), "reply_waiter")),
        leftClient(inbound)
      )
    // What the fiber had not reached at close gets its receipts (the generation is over: no activity, no span).
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.clear(takenAtRead), (left) =>
        Effect.forEach(left, (inbound) =>
          Effect.andThen(
            receipt(inbound.message.id, "receiver_received"),
            Effect.andThen(receipt(inbound.message.id, "acknowledged", "matched reply waiter"), leftClient(inbound))
          ), { discard: true }))
    )
    // One reply at a time, taken from the queue inside the uninterruptible step that handles it: a stream would take
    // every queued reply at once, and a close between two of them would leave the later ones out of the queue the
    // finalizer clears, their receipts never posted (review revbj BJ1).
    yield* Effect.forkScoped(
      Effect.forever(Effect.uninterruptibleMask((restore) => Effect.flatMap(restore(Queue.take(takenAtRead)), afterTaken))),
      { startImmediately: true }
    )
    const lookBack = yield* client.takeOnRead(takeAtRead)
    // A reply read before its waiter was bound waits in the client behind what the message fiber has not reached:
    // binding the waiter takes it there, at once. Removed before the taker (the Scope closes in reverse).
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        slot.onBound(() => {
          // Only the messages answering the bound question are looked at: none, for a brand-new question.
          const questionId = slot.current()?.questionId
          if (questionId === undefined) return
          const outer = lookingBack
          lookingBack = true
          try {
            lookBack(questionId)
          } finally {
            lookingBack = outer
          }
        })
      ),
      (remove) => Effect.sync(remove)
    )
  })
