/**
 * The hand-off of inbound messages to the host (C-DLV-12): a FIFO drained by
 * one fiber, which hands each message to `Host.deliver` and, while
 * the host refuses it, tries again every 100 ms for as long as the session
 * generation is current: a refused message is not redelivered by the broker
 * while this generation lives, so it must be retried here. (An abandoned one
 * is the journal's to restore, or, when nothing saved it, still the client's:
 * Inbound.ts.)
 *
 * Order is kept by construction: one fiber hands over the head of one FIFO,
 * and a message leaves it only once the host took it. Replies to this
 * session's own ask never enter the FIFO (the inbound handling routes them to
 * the waiter first, C-ORD-32), so a stuck hand-off cannot hold them.
 *
 * When the generation's Scope closes, a finalizer (uninterruptible, as every
 * finalizer) stops the fiber, then makes exactly one more attempt for each
 * message not yet taken — the one being retried first, then the queued ones
 * in order — and abandons those the host still refuses, with a warning that
 * names the sender and the message id and the `inboundAbandoned` counter.
 * An attempt is uninterruptible, so the fiber stops between two attempts,
 * never inside one: whether the host took a message is what `deliver`
 * returned, and one it took is never handed to it again (known issue 18).
 *
 * A host whose output is gone (`deliver` fails with `HostOutputGone`:
 * `intercom watch`'s stdout closed by its reader) can take nothing more in
 * this generation: from then on nothing is handed over — no retry, no last
 * attempts at the close, no warning, no count. Those messages were not taken,
 * so they stay where an abandoned one does, for the next generation or
 * process.
 *
 * It owns the waiting messages: a FIFO (Fifo.ts), and the same by sender and
 * id for `withdraw` (a message its sender withdrew keeps how, and is prepared
 * again before its next attempt), that the fiber, `enqueue`, `withdraw` and the finalizer
 * touch only from synchronous code, and that the finalizer reads only after
 * the fiber stopped.
 */
import { Cause, Duration, Effect, Exit, Fiber, Metric, Option, Queue, type Scope } from "effect"
import { Fifo } from "../client/Fifo.ts"
import type { MessageControl, SessionInfo } from "../protocol/frames.ts"
import { HostOutputGone, type HostService, type Inbound } from "./Host.ts"
import { handingOff } from "./InboundTracing.ts"
import { type InboundContext, newerThanControl } from "./ReplyTracker.ts"

/**
 * How long the hand-off waits before trying a refused message again (C-DLV-12).
 *
 * @category constants
 * @since 0.1.0
 */
export const HANDOFF_RETRY_INTERVAL: Duration.Duration = Duration.millis(100)

/**
 * Counts inbound messages abandoned because the host did not take them
 * before their session generation ended (C-DLV-12).
 *
 * @category metrics
 * @since 0.1.0
 */
export const inboundAbandoned: Metric.Counter<number> = Metric.counter("intercom_session_inbound_abandoned", {
  description: "Inbound messages the host did not take before their session generation ended",
  incremental: true,
  attributes: { unit: "{message}" }
})

/**
 * What the inbound handling decides around a hand-off.
 *
 * @category models
 * @since 0.1.0
 */
export interface HandoffHooks {
  /**
   * How the host gets the message (intent, rendering). Runs once per message,
   * when it reaches the head of the queue, so the intent reflects the
   * session's state when the host is about to see it; `withdrawn`: how its
   * sender withdrew it (P73), if it did before the host took it (then it is
   * prepared again before its next attempt).
   */
  readonly prepare: (context: InboundContext, withdrawn: MessageControl["action"] | undefined) => Effect.Effect<Inbound>
  /** The host took the message. Runs uninterruptibly, right after the host did. */
  readonly taken: (context: InboundContext) => Effect.Effect<void>
}

/**
 * The hand-off queue of one session generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface HostHandoff {
  /** Queues a message for the host, behind every message not yet taken; `withdrawn` if its sender withdrew it already. */
  readonly enqueue: (context: InboundContext, withdrawn?: MessageControl["action"]) => Effect.Effect<void>
  /**
   * Its sender withdrew the message `messageId` of `fromId` (P73): if the
   * host has not taken it yet, it keeps `action` and its next attempt
   * prepares it again (`HandoffHooks.prepare`); an attempt in progress is
   * left as it is. Says whether such a message was waiting, and what it was
   * last prepared as: an attempt in progress may have handed that to the host
   * already (`deliver` returned, the hand-off has not let the message go yet).
   * `readBy`: the control's read number (`ControlEvent` `read`); a waiting
   * message the client read after it (its `InboundContext.read` higher) is a
   * newer one under the same id, which the control does not withdraw: left
   * as it is, and not `waiting` (review revbb BB2). `controlAt`: the
   * control's broker stamp (`MessageControl.timestamp`); a waiting message
   * the broker received after it (its `brokerReceivedAt` higher: one
   * restored from a journal has no read number) is newer too
   * (`newerThanControl`, review revbi BI2).
   */
  readonly withdraw: (
    fromId: string,
    messageId: string,
    action: MessageControl["action"],
    readBy?: number,
    controlAt?: number
  ) => HandoffWithdrawal
}

/**
 * What `HostHandoff.withdraw` found: `waiting`, the message was not taken yet
 * (as far as the hand-off knows); `prepared`, what it was last prepared as,
 * if it was.
 *
 * @category models
 * @since 0.1.0
 */
export interface HandoffWithdrawal {
  readonly waiting: boolean
  readonly prepared: Inbound | undefined
  readonly already?: MessageControl["action"] | undefined
}

/**
 * A message not yet taken by the host; `inbound` is set once it was prepared, `stale` once it must be again,
 * `withdrawn` once its sender withdrew it.
 */
interface Entry {
  readonly context: InboundContext
  inbound: Inbound | undefined
  stale: boolean
  withdrawn: MessageControl["action"] | undefined
}

/** Whether an attempt's exit is the host saying its output is gone (`HostOutputGone`): final for the generation. */
const outputGone = (exit: Exit.Exit<void, unknown>): boolean =>
  Exit.isFailure(exit) && Option.exists(Cause.findErrorOption(exit.cause), (error) => error instanceof HostOutputGone)

/** A message's key: its sender's session id and its id (two senders may use one id). */
const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

const describe = (from: SessionInfo): string => {
  const name = from.name?.trim()
  return name === undefined || name.length === 0 ? from.id : `"${name}" (${from.id})`
}

/**
 * Starts the hand-off fiber in the current Scope (the generation's) and
 * registers the finalizer that makes the last attempts when it closes.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeHostHandoff = (
  deliver: HostService["deliver"],
  hooks: HandoffHooks
): Effect.Effect<HostHandoff, never, Scope.Scope> =>
  Effect.gen(function*() {
    /**
     * Every message not yet taken, in arrival order; the head is the one being
     * handed over. An entry leaves only when the host took it or at retirement,
     * so none can be lost between two steps of the fiber.
     */
    const waiting = new Fifo<Entry>()
    let retired = false
    /** The host said its output is gone (`HostOutputGone`): nothing more is handed over in this generation. */
    let gone = false
    const wake = yield* Queue.sliding<true>(1)

    /** The same entries by sender and message id, for `withdraw`. */
    const byKey = new Map<string, Entry>()
    const entryKey = (entry: Entry): string => keyOf(entry.context.from.id, entry.context.message.id)

    const leave = (entry: Entry): void => {
      waiting.remove(entry)
      if (byKey.get(entryKey(entry)) === entry) byKey.delete(entryKey(entry))
    }

    const prepared = (entry: Entry): Effect.Effect<Inbound> =>
      entry.inbound !== undefined && !entry.stale
        ? Effect.succeed(entry.inbound)
        : Effect.map(Effect.suspend(() => {
          entry.stale = false
          return hooks.prepare(entry.context, entry.withdrawn)
        }), (inbound) => {
          entry.inbound = inbound
          return inbound
        })

    /**
     * One hand-off: prepare (which may call the host, `exposeTool`), then
     * deliver; a defect of the host in either counts as a refusal, so it never
     * stops the fiber or the finalizer. Uninterruptible (known issue 18): an
     * interruption that came in after the host took the message but before
     * `deliver` returned turned that success into an interruption, and the
     * finalizer's last attempt handed the message to the same host again. A
     * closing generation waits for the attempt in progress.
     */
    const attempt = (entry: Entry): Effect.Effect<Exit.Exit<void, unknown>> =>
      Effect.uninterruptible(Effect.exit(Effect.flatMap(prepared(entry), (inbound) =>
        handingOff(
          entry.context.trace,
          { "intercom.message.id": entry.context.message.id, "intercom.intent": inbound.intent },
          Effect.suspend(() => deliver(inbound))
        ).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? Effect.andThen(Effect.sync(() => leave(entry)), hooks.taken(entry.context))
              : Effect.void
          )
        ))))

    /** Records that the host's output is gone, if `exit` says so (once, at debug level: it is how a watch ends). */
    const checkGone = (exit: Exit.Exit<void, unknown>): Effect.Effect<boolean> =>
      Effect.suspend(() => {
        if (!outputGone(exit)) return Effect.succeed(false)
        gone = true
        return Effect.as(
          Effect.logDebug(
            `Intercom host's output is gone; ${waiting.size} message(s) not taken stay unconfirmed for the next session`
          ),
          true
        )
      })

    const handOver = (entry: Entry): Effect.Effect<void> =>
      Effect.gen(function*() {
        let exit = yield* attempt(entry)
        if (Exit.isSuccess(exit) || (yield* checkGone(exit))) return
        yield* Effect.logWarning(
          `Intercom host did not take message ${entry.context.message.id} from ${describe(entry.context.from)}; ` +
            `retrying every ${Duration.toMillis(HANDOFF_RETRY_INTERVAL)} ms`,
          exit.cause
        )
        while (Exit.isFailure(exit)) {
          yield* Effect.sleep(HANDOFF_RETRY_INTERVAL)
          exit = yield* attempt(entry)
          if (yield* checkGone(exit)) return
        }
      })

    /**
     * The one attempt after the generation retired; abandons the message if the host still refuses.
     * None once the host's output is gone: the message is left as it is, quietly.
     */
    const lastAttempt = (entry: Entry): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (gone) return
        const exit = yield* attempt(entry)
        if (Exit.isSuccess(exit) || (yield* checkGone(exit))) return
        yield* Metric.update(inboundAbandoned, 1)
        yield* Effect.logWarning(
          `Intercom abandoned message ${entry.context.message.id} from ${describe(entry.context.from)}: ` +
            "the host did not take it before the session ended",
          exit.cause
        )
      })

    const worker = yield* Effect.forkScoped(
      Effect.forever(Effect.suspend(() => {
        const head = gone ? undefined : waiting.peek()
        return head === undefined ? Effect.asVoid(Queue.take(wake)) : handOver(head)
      })),
      { startImmediately: true }
    )

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        retired = true
        yield* Fiber.interrupt(worker)
        byKey.clear()
        for (const entry of waiting.takeAll()) yield* lastAttempt(entry)
      })
    )

    return {
      enqueue: (context, withdrawn) =>
        Effect.suspend(() => {
          const entry: Entry = { context, inbound: undefined, stale: false, withdrawn }
          // After retirement a late message gets its one attempt at once.
          if (retired) return lastAttempt(entry)
          waiting.push(entry)
          byKey.set(entryKey(entry), entry)
          return Effect.asVoid(Queue.offer(wake, true))
        }),
      withdraw: (fromId, messageId, action, readBy, controlAt) => {
        const entry = byKey.get(keyOf(fromId, messageId))
        if (entry === undefined || newerThanControl(entry.context, readBy, controlAt)) {
          return { waiting: false, prepared: undefined }
        }
        const already = entry.withdrawn
        if (already !== undefined) return { waiting: true, prepared: entry.inbound, already }
        entry.withdrawn = action
        entry.stale = true
        return { waiting: true, prepared: entry.inbound }
      }
    }
  })
