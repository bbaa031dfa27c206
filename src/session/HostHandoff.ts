/**
 * The hand-off of inbound messages to the host (C-DLV-12): a FIFO queue
 * drained by one fiber, which hands each message to `Host.deliver` and, while
 * the host refuses it, tries again every 100 ms for as long as the session
 * generation is current. The broker never redelivers a message it delivered,
 * so a refused hand-off must be retried here or the message is lost.
 *
 * Order is kept by construction: one fiber, one queue, and a message is taken
 * from the queue only after the one before it was taken by the host. Replies
 * to this session's own ask never enter the queue (the inbound handling routes
 * them to the waiter first, C-ORD-32), so a stuck hand-off cannot hold them.
 *
 * When the generation's Scope closes, a finalizer (uninterruptible, as every
 * finalizer) stops the fiber, then makes exactly one more attempt for each
 * message not yet taken — the one being retried first, then the queued ones
 * in order — and abandons those the host still refuses, with a warning that
 * names the sender and the message id and the `inboundAbandoned` counter.
 *
 * It owns the queue and the message in hand (a plain field written by the
 * fiber and read by the finalizer only after the fiber stopped).
 */
import { Duration, Effect, Exit, Fiber, Metric, Queue, type Scope } from "effect"
import type { SessionInfo } from "../protocol/frames.ts"
import type { HostService, Inbound } from "./Host.ts"
import type { InboundContext } from "./ReplyTracker.ts"

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
  incremental: true
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
   * session's state when the host is about to see it.
   */
  readonly prepare: (context: InboundContext) => Effect.Effect<Inbound>
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
  /** Queues a message for the host, behind every message not yet taken. */
  readonly enqueue: (context: InboundContext) => Effect.Effect<void>
}

interface Prepared {
  readonly context: InboundContext
  readonly inbound: Inbound
}

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
    const queue = yield* Queue.unbounded<InboundContext>()
    /** Prepared and handed to the host at least once, not yet taken. */
    let inHand: Prepared | undefined

    /** One hand-off; a defect of the host counts as a refusal. */
    const attempt = (prepared: Prepared): Effect.Effect<Exit.Exit<void, unknown>> =>
      Effect.suspend(() => deliver(prepared.inbound)).pipe(
        // Bookkept in the same step as the success, so an interruption cannot split them.
        Effect.onExit((exit) =>
          Exit.isSuccess(exit)
            ? Effect.andThen(
              Effect.sync(() => {
                inHand = undefined
              }),
              hooks.taken(prepared.context)
            )
            : Effect.void
        ),
        Effect.exit
      )

    const handOver = (context: InboundContext): Effect.Effect<void> =>
      Effect.gen(function*() {
        const prepared: Prepared = { context, inbound: yield* hooks.prepare(context) }
        inHand = prepared
        let exit = yield* attempt(prepared)
        if (Exit.isSuccess(exit)) return
        yield* Effect.logWarning(
          `Intercom host did not take message ${context.message.id} from ${describe(context.from)}; ` +
            `retrying every ${Duration.toMillis(HANDOFF_RETRY_INTERVAL)} ms`,
          exit.cause
        )
        while (Exit.isFailure(exit)) {
          yield* Effect.sleep(HANDOFF_RETRY_INTERVAL)
          exit = yield* attempt(prepared)
        }
      })

    /** The one attempt after the generation retired; abandons the message if the host still refuses. */
    const lastAttempt = (prepared: Prepared): Effect.Effect<void> =>
      Effect.gen(function*() {
        const exit = yield* attempt(prepared)
        if (Exit.isSuccess(exit)) return
        yield* Metric.update(inboundAbandoned, 1)
        yield* Effect.logWarning(
          `Intercom abandoned message ${prepared.context.message.id} from ${describe(prepared.context.from)}: ` +
            "the host did not take it before the session ended",
          exit.cause
        )
      })

    const worker = yield* Effect.forkScoped(Effect.forever(Effect.flatMap(Queue.take(queue), handOver)), {
      startImmediately: true
    })

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Fiber.interrupt(worker)
        const queued = yield* Queue.clear(queue)
        yield* Queue.shutdown(queue)
        const left = inHand
        inHand = undefined
        if (left !== undefined) yield* lastAttempt(left)
        for (const context of queued) yield* lastAttempt({ context, inbound: yield* hooks.prepare(context) })
      })
    )

    return {
      enqueue: (context) =>
        Effect.flatMap(Queue.offer(queue, context), (queued) =>
          queued
            ? Effect.void
            // The generation already retired: this message gets its one attempt now.
            : Effect.flatMap(hooks.prepare(context), (inbound) => lastAttempt({ context, inbound })))
    }
  })
