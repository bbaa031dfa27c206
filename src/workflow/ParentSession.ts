/**
 * A parent session's inbound ordering, assembled: what an engine builds
 * once per session generation of a main agent (a parent that is not itself
 * in a stage) to put the workflow rules between the session runtime and
 * its agent.
 *
 * It starts, in the current Scope (the session generation's), the idle
 * queue (C-DLV-10), the foreground detach handshake with its in-process
 * child side (`ForegroundDetach`, C-ORD-10…21), the terminal barrier over
 * that idle queue (C-ORD-25…31) and the parent inbox that sequences them
 * for one message (C-ORD-18, C-ORD-32). Its `deliver` is the session
 * runtime's `Host.deliver`: the runtime has already de-duplicated the
 * message and routed a reply to its own `ask` to the waiter (C-ORD-32), and
 * it retries a hand-off that fails (C-DLV-12). While the Scope is open,
 * `deliver` does not fail: once it returns, the message is the parent's —
 * delivered, surfaced, or waiting in the idle queue. Once the Scope has
 * closed (also for a message whose hand-off was still under way then and
 * left it in the idle queue) it fails with `ParentSessionClosed`, so the
 * runtime does not confirm a message nobody will flush: it retries and, when
 * its generation ends, abandons it to the session's next generation. When
 * the Scope closes with messages still in the idle queue, one warning says
 * how many the agent never got: a `ParentJournal` hands them to the next
 * generation; without one they are lost.
 *
 * `deliver` returns when the inbox has decided, which for a message from
 * the foreground child of a busy parent includes the handshake (at most one
 * `ackTimeout` per phase). The runtime hands messages over one at a time,
 * so their order is kept; the handshake runs in process and does not wait
 * on the bus.
 *
 * The sender's delivery mode (C-DLV-1, as the runtime's intent says it) is
 * kept: a `passive` message starts no turn and steers nothing (`passive`
 * port); a `queue` message to a busy parent waits in the idle queue until
 * the parent is idle (C-DLV-10); a `steer` message to a busy parent is first
 * owned by the idle queue and offered to the foreground child like any
 * other (C-ORD-18), then steers the running turn whatever the handshake
 * said — unless the setting `busySteer: "queue"` keeps it queued too, as
 * Atomic's idle queue does with every message (open question 5).
 *
 * Owner: nothing of its own; each part owns its state in this Scope.
 */
import { Effect, type Scope } from "effect"
import type { InboundMessage } from "../client/events.ts"
import type { Inbound } from "../session/Host.ts"
import type { BarrierRegistry } from "./BarrierRegistry.ts"
import type { DetachHandshakeSettings } from "./DetachHandshake.ts"
import { type ForegroundDetach, makeForegroundDetach } from "./ForegroundDetach.ts"
import { type IdleQueue, type IdleQueueSettings, makeIdleQueue } from "./IdleQueue.ts"
import { inboundEntry, inboundMessageOf, type SourceResolver } from "./InboundAdapter.ts"
import type { InboundEntry } from "./InboundEntry.ts"
import { type DispatchError, type IdleQueueClosed, ParentSessionClosed, type TerminalAdmissionError } from "./orderingErrors.ts"
import { type InboxOutcome, makeParentInbox } from "./ParentInbox.ts"
import {
  makeTerminalBarrier,
  type TerminalBarrier,
  type TerminalBarrierSettings,
  type TerminalBatch,
  type TerminalNotice,
  type TerminalOutcome
} from "./TerminalBarrier.ts"

/**
 * A parent entry: an inbound message, with the message as its payload.
 *
 * @category models
 * @since 0.1.0
 */
export type ParentEntry = InboundEntry<InboundMessage>

/**
 * The parent's agent, as the engine runs it. `T` is the engine's terminal
 * notice value.
 *
 * @category ports
 * @since 0.1.0
 */
export interface ParentAgent<T> {
  /** Whether the agent can take a new turn now (no turn, no foreground tool call). */
  readonly isIdle: Effect.Effect<boolean>
  /**
   * Starts a turn with the first entry; the rest are follow-ups of the same
   * batch. Fails with how many it took. It should return once the turn has
   * started, not when it ends: it runs uninterruptibly (the idle queue's
   * lane; a `ParentJournal`'s mark), so a closing generation waits for it (a
   * wait inside may be made `Effect.interruptible` where an interruption
   * means it took nothing).
   */
  readonly deliverBatch: (batch: ReadonlyArray<ParentEntry>) => Effect.Effect<void, DispatchError>
  /** Puts an entry into the busy agent's model-visible steering queue (after a committed detach, C-ORD-13). */
  readonly surface: (entry: ParentEntry) => Effect.Effect<void, DispatchError>
  /** Shows and stores a message that starts no turn and steers nothing (the sender chose `passive`, or `inboundTrigger` said no). */
  readonly passive: (entry: ParentEntry) => Effect.Effect<void>
  /**
   * Hands a child's claimed messages and then its terminal notice over,
   * without waiting for a turn (C-ORD-31); uninterruptibly, as `deliverBatch`.
   */
  readonly dispatchTerminal: (batch: TerminalBatch<InboundMessage, T>) => Effect.Effect<void, DispatchError>
  /**
   * Resolves the agent's own reply waiter with the entry (C-ORD-32). Only
   * needed when messages reach `receive` from below the session runtime,
   * which routes its own waiter's replies first; default: never a reply.
   */
  readonly routeReply?: ((entry: ParentEntry) => Effect.Effect<boolean>) | undefined
}

/**
 * Settings of `makeParentSession`; every part has the contract's default.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParentSessionSettings<T = unknown> {
  /** The session's runtime generation (C-ORD-10). */
  readonly generation: string
  readonly idleQueue?: IdleQueueSettings | undefined
  readonly handshake?: Partial<DetachHandshakeSettings> | undefined
  readonly barrier?: TerminalBarrierSettings | undefined
  /** Names the source of a bridged child's plain sends (see `InboundAdapter`). */
  readonly resolveSource?: SourceResolver | undefined
  /**
   * What a busy parent does with a message whose sender chose `steer` (the
   * default mode): `steer` (default) hands it to the running turn once it
   * is owned and offered to the foreground child; `queue` keeps it in the
   * idle queue until the parent is idle, as for `queue` messages.
   */
  readonly busySteer?: "steer" | "queue" | undefined
  /**
   * The process's barrier registry (`TerminalBarriers`), for companions that
   * deliver terminal notices without holding this session (C-ORD-33): the
   * barrier is registered for as long as this Scope lives, current while
   * the handshake has a generation (not `cancel`led).
   */
  readonly registry?: BarrierRegistry<T> | undefined
  /**
   * Told the entries `idleQueue.dropFinishedProgress` dropped (C-DLV-17):
   * they reach no port of the agent. A `ParentJournal`'s `dropped`, so that
   * a restarted process does not hand them over.
   */
  readonly onDropped?: ((entries: ReadonlyArray<ParentEntry>) => Effect.Effect<void>) | undefined
}

/**
 * How a message is to reach the parent: the sender's mode as the session
 * runtime resolved it.
 *
 * @category models
 * @since 0.1.0
 */
export type ParentDelivery = "steer" | "queue" | "passive"

/**
 * What became of a message: the inbox's outcome, or `passive` (shown and
 * stored, no turn).
 *
 * @category models
 * @since 0.1.0
 */
export type ParentOutcome = InboxOutcome | { readonly _tag: "passive" }

/**
 * The delivery of a message read from `IntercomClient.messages`: its
 * sender's `delivery-v1` mode, `steer` when it chose none.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parentDeliveryOf = (inbound: InboundMessage): ParentDelivery =>
  inbound.delivery?.delivery === "passive" ? "passive" : inbound.delivery?.delivery === "queue" ? "queue" : "steer"

/**
 * The delivery of a message the session runtime handed its host: `passive`
 * when its intent is (the sender chose it, or `inboundTrigger` said no),
 * else the sender's mode.
 *
 * @category constructors
 * @since 0.1.0
 */
export const parentDeliveryOfInbound = (inbound: Pick<Inbound, "intent" | "delivery">): ParentDelivery =>
  inbound.intent === "passive" || inbound.delivery === "passive" ? "passive" : inbound.delivery === "queue" ? "queue" : "steer"

/**
 * A parent session's assembled inbound ordering.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParentSession<T> {
  /**
   * The session runtime's `Host.deliver`: never fails while the Scope is
   * open; after it closed, fails with `ParentSessionClosed` (see the module
   * header).
   */
  readonly deliver: (inbound: Inbound) => Effect.Effect<void, ParentSessionClosed>
  /**
   * The same path for a message read from `IntercomClient.messages` directly;
   * `delivery` defaults to the sender's mode. Fails as `deliver` does.
   */
  readonly receive: (inbound: InboundMessage, delivery?: ParentDelivery) => Effect.Effect<ParentOutcome, ParentSessionClosed>
  /** Admits a background child's terminal notice with its pre-terminal messages (C-ORD-25…31). */
  readonly terminal: (notice: TerminalNotice<T>) => Effect.Effect<TerminalOutcome, TerminalAdmissionError>
  /** The agent went idle: flush the idle queue now instead of at the next recheck. */
  readonly idle: Effect.Effect<void>
  /** The foreground side: `attach` a foreground child for as long as the `subagent` call waits on it. */
  readonly foreground: ForegroundDetach
  readonly idleQueue: IdleQueue<InboundMessage>
  readonly barrier: TerminalBarrier<T>
}

/**
 * Starts a parent session's inbound ordering in the current Scope (the
 * session generation's); closing it stops every part.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { headless, Host } from "effect-intercom/session"
 * import { makeParentSession, type ParentAgent } from "effect-intercom/workflow"
 *
 * declare const agent: ParentAgent<string> // the engine's main agent
 *
 * const parentHost = Effect.gen(function*() {
 *   const parent = yield* makeParentSession(agent, { generation: "1" })
 *   // the session runtime hands every inbound message to the workflow rules
 *   return { parent, host: Host.layer(headless({ name: "main", cwd: process.cwd(), model: "m" }, parent.deliver)) }
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeParentSession = <T>(
  agent: ParentAgent<T>,
  settings: ParentSessionSettings<T>
): Effect.Effect<ParentSession<T>, never, Scope.Scope> =>
  Effect.gen(function*() {
    // False once the Scope began to close: nothing is taken after that.
    let open = true
    let queued: IdleQueue<InboundMessage> | undefined
    // Registered first, so it runs last, once the idle queue's flusher has stopped.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        open = false
        if (queued === undefined) return Effect.void
        return Effect.flatMap(queued.entries, (left) =>
          left.length === 0 ? Effect.void : Effect.logWarning(
            `Parent session generation ${settings.generation} closed with ${left.length} message(s) in its idle queue ` +
              `that its agent never got (${left.map((entry) => entry.messageId).join(", ")}): a parent journal ` +
              "(ParentJournal) hands them to the session's next generation; without one they are lost"
          ))
      })
    )
    const idleQueue = yield* makeIdleQueue<InboundMessage>(
      { isIdle: agent.isIdle, deliverBatch: agent.deliverBatch },
      settings.idleQueue
    )
    const foreground = yield* makeForegroundDetach({
      generation: settings.generation,
      ...settings.handshake,
      resolveSource: settings.resolveSource
    })
    const barrier = yield* makeTerminalBarrier<InboundMessage, T>(
      idleQueue,
      { dispatch: agent.dispatchTerminal },
      settings.barrier
    )
    if (settings.registry !== undefined) {
      yield* settings.registry.register(
        barrier,
        Effect.map(foreground.handshake.generation, (generation) => generation !== undefined)
      )
    }
    const inbox = makeParentInbox<InboundMessage>(
      {
        routeReply: agent.routeReply ?? (() => Effect.succeed(false)),
        isIdle: agent.isIdle,
        surface: agent.surface
      },
      idleQueue,
      foreground.handshake
    )
    const steerBusy = settings.busySteer !== "queue"
    /** C-ORD-18 kept: the entry leaves the idle queue in one lane step; a barrier or flush that took it first already handed it over. */
    const steerNow = (entry: ParentEntry, queued: InboxOutcome): Effect.Effect<ParentOutcome> =>
      idleQueue.claimAndDispatch(
        () => (waiting) => waiting.senderId === entry.senderId && waiting.messageId === entry.messageId,
        (claimed) => {
          const [taken] = claimed
          return taken === undefined ? Effect.succeed(false) : Effect.as(agent.surface(taken), true)
        }
      ).pipe(
        Effect.map((surfaced): ParentOutcome => surfaced ? { _tag: "surfaced" } : { _tag: "claimed" }),
        // Refused: it went back to its place in the queue, for the next flush.
        Effect.catch(() => Effect.succeed<ParentOutcome>(queued))
      )
    const route = (entry: ParentEntry, delivery: ParentDelivery): Effect.Effect<ParentOutcome, IdleQueueClosed> =>
      Effect.gen(function*() {
        if (delivery === "passive") {
          yield* agent.passive(entry)
          return { _tag: "passive" } as const
        }
        const outcome = yield* inbox.receive(entry)
        if (outcome._tag !== "queued" || outcome.handoff === "abandoned" || delivery !== "steer" || !steerBusy) return outcome
        // An idle parent that refused the message gets it with the next flush, as a turn.
        if (yield* agent.isIdle) return outcome
        return yield* steerNow(entry, outcome)
      })
    const closed = new ParentSessionClosed({ generation: settings.generation })
    const receive = (
      inbound: InboundMessage,
      delivery: ParentDelivery = parentDeliveryOf(inbound)
    ): Effect.Effect<ParentOutcome, ParentSessionClosed> =>
      Effect.gen(function*() {
        if (!open) return yield* closed
        const entry = inboundEntry(inbound, { resolveSource: settings.resolveSource })
        // The idle queue closed under this message (the Scope is closing): it took nothing.
        const outcome = yield* Effect.catchTag(route(entry, delivery), "IdleQueueClosed", () => closed)
        // The Scope closed while this message was handed over: one left in the idle queue is nobody's.
        if (!open && outcome._tag === "queued" && (yield* idleQueue.remove(entry)) !== undefined) return yield* closed
        return outcome
      })
    const onDropped = settings.onDropped
    queued = idleQueue
    // Registered last, so it runs first: a delivery that comes while the rest closes fails.
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      open = false
    }))
    return {
      deliver: (inbound) => Effect.asVoid(receive(inboundMessageOf(inbound), parentDeliveryOfInbound(inbound))),
      receive,
      terminal: barrier.admit,
      idle: idleQueue.wake,
      foreground,
      idleQueue: onDropped === undefined ? idleQueue : {
        ...idleQueue,
        // Drop and hook in one uninterruptible step: an interruption between them would leave the drop untold.
        dropFinishedProgress: (senderId, threadId) =>
          Effect.uninterruptible(Effect.tap(idleQueue.dropFinishedProgress(senderId, threadId), (dropped) =>
            dropped.length === 0 ? Effect.void : onDropped(dropped)))
      },
      barrier
    }
  })
