/**
 * A parent session's inbound path, in contract order: the reply-waiter
 * bypass (C-ORD-32), immediate delivery to an idle parent (C-DLV-10), and
 * for a busy parent the idle queue first (C-ORD-18) and then the foreground
 * detach handshake (C-ORD-10…14).
 *
 * - A message that answers the parent's live `ask` (exact sender and
 *   `replyTo`) resolves that wait before anything else: it never waits
 *   behind queued messages, a barrier or a handshake.
 * - An idle parent gets the message at once (it starts a turn), through the
 *   idle queue: behind what still waits there, in one batch with it, so a
 *   message never overtakes an older one that a flush has not handed over yet.
 * - A busy parent queues it first, so it is owned before anything async
 *   starts; then its foreground child, if the message is from it, is asked
 *   to claim it. On `delivered` the message leaves the queue and is
 *   surfaced — unless a terminal barrier has claimed it meanwhile, in which
 *   case it was already handed over with its terminal and is not surfaced
 *   twice. `unclaimed` and `abandoned` leave it queued for the next flush:
 *   nothing is dropped (C-ORD-14).
 *
 * Owner: nothing of its own; it sequences the idle queue and the handshake,
 * which own their state.
 */
import { Effect } from "effect"
import type { DetachHandshake } from "./DetachHandshake.ts"
import type { HandoffDisposition } from "./DetachRoute.ts"
import type { DispatchError, IdleQueueClosed } from "./orderingErrors.ts"
import type { IdleQueue } from "./IdleQueue.ts"
import type { InboundEntry } from "./InboundEntry.ts"

/**
 * What the parent's host provides to the inbox.
 *
 * @category ports
 * @since 0.1.0
 */
export interface ParentInboxHost<A> {
  /** Resolves the live reply waiter with this entry if it is its correlated reply; true when it did (C-ORD-32). */
  readonly routeReply: (entry: InboundEntry<A>) => Effect.Effect<boolean>
  /** Whether the parent can take a new turn now. */
  readonly isIdle: Effect.Effect<boolean>
  /** Puts the entry into the busy parent's model-visible steering queue (after a committed detach, C-ORD-13). */
  readonly surface: (entry: InboundEntry<A>) => Effect.Effect<void, DispatchError>
}

/**
 * What became of an inbound entry:
 * - `reply`: it resolved the live waiter (C-ORD-32);
 * - `delivered`: an idle parent took it;
 * - `surfaced`: the foreground child detached and the busy parent was steered with it;
 * - `claimed`: the child detached, but the entry had already been handed over (a terminal barrier
 *   claimed it, or a flush delivered it), so it is not surfaced twice;
 * - `queued`: it waits in the idle queue (with the handshake's disposition, when one ran).
 *
 * @category models
 * @since 0.1.0
 */
export type InboxOutcome =
  | { readonly _tag: "reply" }
  | { readonly _tag: "delivered" }
  | { readonly _tag: "surfaced" }
  | { readonly _tag: "claimed" }
  | { readonly _tag: "queued"; readonly handoff: HandoffDisposition | undefined }

/**
 * A parent's inbound path.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParentInbox<A> {
  /** Fails with `IdleQueueClosed`, taking nothing, once the idle queue's Scope has closed. */
  readonly receive: (entry: InboundEntry<A>) => Effect.Effect<InboxOutcome, IdleQueueClosed>
}

/**
 * Makes a parent's inbound path over its idle queue and handshake.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeParentInbox = <A>(
  host: ParentInboxHost<A>,
  idleQueue: IdleQueue<A>,
  handshake: DetachHandshake
): ParentInbox<A> => {
  const queued = (handoff: HandoffDisposition | undefined): InboxOutcome => ({ _tag: "queued", handoff })
  return {
    receive: (entry) =>
      Effect.gen(function*() {
        if (yield* host.routeReply(entry)) return { _tag: "reply" } as const
        // C-DLV-10: an idle parent gets it now, but after what already waits (one batch, in the queue's lane).
        if ((yield* host.isIdle) && (yield* idleQueue.deliverIdle(entry))) return { _tag: "delivered" } as const
        // C-ORD-18: owned by the queue before anything asynchronous starts (one an idle parent refused already is).
        yield* idleQueue.enqueue(entry)
        const disposition = yield* handshake.handoff(entry)
        if (disposition !== "delivered") return queued(disposition)
        // Out of the queue and into the steering queue in one lane step; a refusal puts it back in place.
        const surfaced = yield* Effect.result(idleQueue.claimAndDispatch(
          () => (queuedEntry) => queuedEntry.senderId === entry.senderId && queuedEntry.messageId === entry.messageId,
          (claimed) => {
            const [taken] = claimed
            return taken === undefined ? Effect.succeed(false) : Effect.as(host.surface(taken), true)
          }
        ))
        if (surfaced._tag === "Success") return surfaced.success ? { _tag: "surfaced" } as const : { _tag: "claimed" } as const
        return queued(disposition)
      })
  }
}
