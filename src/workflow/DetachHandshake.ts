/**
 * The parent side of the foreground detach handshake (C-ORD-10…17).
 *
 * A busy parent whose `subagent` call is waiting on a foreground child asks
 * that exact child whether it claims an inbound message from it: `probe`,
 * then (after the child reserved the route) `commit`; the child detaches
 * itself from foreground supervision and acknowledges. Only then is the
 * message `delivered` (surfaced to the parent's model). A missing or late
 * acknowledgement in either phase gives `unclaimed` — the caller's ordinary
 * fallback, never a drop; ending the generation gives `abandoned`.
 *
 * Owner: one actor per runtime generation — a fiber taking commands from a
 * typed queue, living in a Scope of that generation. It alone changes the
 * generation's tables: handshakes in flight (concurrent deliveries of the
 * same message share one, C-ORD-17), keys already delivered, and the
 * acknowledgements each phase waits for (matched on every route field,
 * C-ORD-15). Each handshake runs in its own fiber in the same Scope.
 * `renew`/`cancel` close that Scope: every handshake in flight ends
 * `abandoned` and the tables go with it (C-ORD-16), so a stale
 * acknowledgement can neither surface a message nor detach a child.
 */
import { Deferred, Duration, Effect, Exit, Option, Queue, Scope, Semaphore } from "effect"
import { childTargetOf, entryKey, type InboundEntry } from "./InboundEntry.ts"
import {
  type DetachAck,
  type DetachPhase,
  type DetachRequest,
  type DetachRoute,
  type HandoffDisposition,
  routeOf,
  sameRoute
} from "./DetachRoute.ts"

/**
 * The exact live foreground child of the parent: the names and broker ids
 * it is known by (C-ORD-10).
 *
 * @category models
 * @since 0.1.0
 */
export interface ForegroundOwner {
  readonly targets: ReadonlyArray<string>
}

/**
 * What the handshake needs from the engine: who the live foreground child
 * is (if any), and a way to send it a request. Acknowledgements come back
 * through `DetachHandshake.acknowledge`.
 *
 * @category ports
 * @since 0.1.0
 */
export interface DetachChannel {
  readonly foreground: Effect.Effect<ForegroundOwner | undefined>
  readonly send: (request: DetachRequest) => Effect.Effect<void, unknown>
}

/**
 * Handshake settings.
 *
 * @category models
 * @since 0.1.0
 */
export interface DetachHandshakeSettings {
  /** How long each phase waits for its acknowledgement (C-ORD-14: 50 ms in-process; about 500 ms across processes). */
  readonly ackTimeout: Duration.Input
}

/**
 * The contract's in-process handshake settings.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultDetachHandshakeSettings: DetachHandshakeSettings = { ackTimeout: "50 millis" }

/**
 * The parent's handshake actor.
 *
 * @category models
 * @since 0.1.0
 */
export interface DetachHandshake {
  /**
   * Offers a message from a foreground child to that child (C-ORD-10…13):
   * `delivered` once the child committed, `unclaimed` when no matching live
   * child acknowledged in time, `abandoned` when the generation ended.
   * Concurrent calls for one (generation, sender, message) share a
   * handshake; a message already delivered in this generation is
   * `delivered` again without one (C-ORD-17). Never fails.
   */
  readonly handoff: <A>(entry: InboundEntry<A>) => Effect.Effect<HandoffDisposition>
  /** An acknowledgement from a child; ignored unless it matches a waiting phase exactly (C-ORD-15). */
  readonly acknowledge: (ack: DetachAck) => Effect.Effect<void>
  /** A new runtime generation: aborts every handshake in flight and clears all keys (C-ORD-16). */
  readonly renew: (generation: string) => Effect.Effect<void>
  /** The current generation was cancelled: as `renew`, and handoffs are `abandoned` until the next `renew`. */
  readonly cancel: Effect.Effect<void>
  /** The current runtime generation, if any. */
  readonly generation: Effect.Effect<string | undefined>
}

type Command =
  | { readonly _tag: "Begin"; readonly entry: InboundEntry<unknown>; readonly done: Deferred.Deferred<HandoffDisposition> }
  | { readonly _tag: "Ack"; readonly ack: DetachAck }
  | { readonly _tag: "Await"; readonly key: string; readonly waiter: Waiter }
  | { readonly _tag: "Forget"; readonly key: string }
  | { readonly _tag: "Finished"; readonly key: string; readonly disposition: HandoffDisposition }

interface Waiter {
  readonly route: DetachRoute
  readonly phase: DetachPhase
  readonly acked: Deferred.Deferred<void>
}

interface Generation {
  readonly id: string
  readonly scope: Scope.Closeable
  readonly commands: Queue.Queue<Command>
}

const waiterKey = (route: DetachRoute, phase: DetachPhase): string =>
  `${phase}\u0000${route.requestId}\u0000${route.messageId}\u0000${route.senderId}\u0000${route.runtimeGeneration}`

/** Starts the handshake actor of one runtime generation, in a Scope of its own. */
const startGeneration = (
  id: string,
  channel: DetachChannel,
  ackTimeout: Duration.Duration
): Effect.Effect<Generation> =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const commands = yield* Queue.unbounded<Command>()
    /** Handshakes in flight, by (sender, message): everyone waiting for the shared outcome. */
    const pending = new Map<string, Array<Deferred.Deferred<HandoffDisposition>>>()
    /** (sender, message) already delivered in this generation. */
    const delivered = new Set<string>()
    /** Phases waiting for their acknowledgement. */
    const waiters = new Map<string, Waiter>()

    // C-ORD-16: whatever is still open when the generation ends is abandoned.
    yield* Scope.addFinalizer(scope, Effect.gen(function*() {
      for (const command of yield* Queue.clear(commands)) {
        if (command._tag === "Begin") yield* Deferred.succeed(command.done, "abandoned")
      }
      yield* Queue.shutdown(commands)
      for (const waiting of pending.values()) {
        for (const done of waiting) yield* Deferred.succeed(done, "abandoned")
      }
      pending.clear()
      delivered.clear()
      waiters.clear()
    }))

    const awaitPhase = (route: DetachRoute, phase: DetachPhase): Effect.Effect<boolean> =>
      Effect.gen(function*() {
        const acked = yield* Deferred.make<void>()
        const key = waiterKey(route, phase)
        // Registered ahead of the request in the actor's FIFO queue, so even an
        // acknowledgement sent back synchronously finds its waiter.
        yield* Queue.offer(commands, { _tag: "Await", key, waiter: { route, phase, acked } })
        const sent = yield* Effect.exit(channel.send({ ...route, phase }))
        const outcome = Exit.isFailure(sent)
          ? Option.none()
          : yield* Deferred.await(acked).pipe(Effect.timeoutOption(ackTimeout))
        yield* Queue.offer(commands, { _tag: "Forget", key })
        return Option.isSome(outcome)
      })

    const handshake = (entry: InboundEntry<unknown>, key: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        const owner = yield* channel.foreground
        // C-ORD-19: only the matching live foreground child is asked.
        if (owner === undefined || !(owner.targets.includes(entry.senderId) ||
          (entry.senderName !== undefined && owner.targets.includes(entry.senderName)))) {
          return "unclaimed" as const
        }
        const route: DetachRoute = {
          requestId: entry.messageId,
          messageId: entry.messageId,
          childIntercomTarget: childTargetOf(entry),
          senderId: entry.senderId,
          runtimeGeneration: id
        }
        if (!(yield* awaitPhase(route, "probe"))) return "unclaimed" as const
        if (!(yield* awaitPhase(route, "commit"))) return "unclaimed" as const
        return "delivered" as const
      }).pipe(
        Effect.flatMap((disposition) => Queue.offer(commands, { _tag: "Finished", key, disposition })),
        Effect.asVoid
      )

    const handle = (command: Command): Effect.Effect<void> => {
      switch (command._tag) {
        case "Begin": {
          const key = entryKey(command.entry)
          if (delivered.has(key)) return Deferred.succeed(command.done, "delivered").pipe(Effect.asVoid)
          const shared = pending.get(key)
          if (shared !== undefined) {
            shared.push(command.done)
            return Effect.void
          }
          pending.set(key, [command.done])
          return Effect.asVoid(Effect.forkIn(handshake(command.entry, key), scope))
        }
        case "Ack": {
          const { ack } = command
          if (ack.accepted !== true) return Effect.void
          const waiter = waiters.get(waiterKey(ack, ack.phase))
          if (waiter === undefined || !sameRoute(waiter.route, routeOf(ack))) return Effect.void
          return Deferred.succeed(waiter.acked, undefined).pipe(Effect.asVoid)
        }
        case "Await": {
          waiters.set(command.key, command.waiter)
          return Effect.void
        }
        case "Forget": {
          waiters.delete(command.key)
          return Effect.void
        }
        case "Finished": {
          const waiting = pending.get(command.key) ?? []
          pending.delete(command.key)
          if (command.disposition === "delivered") delivered.add(command.key)
          return Effect.forEach(waiting, (done) => Deferred.succeed(done, command.disposition), { discard: true })
        }
      }
    }

    yield* Effect.forkIn(Effect.forever(Effect.flatMap(Queue.take(commands), handle)), scope)
    return { id, scope, commands }
  })

/**
 * Makes the parent's handshake actor in the current Scope (the parent
 * session's): closing it ends the current generation (`abandoned`). It has
 * no generation until the first `renew`; handoffs before that are `abandoned`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeDetachHandshake = (
  channel: DetachChannel,
  settings: DetachHandshakeSettings = defaultDetachHandshakeSettings
): Effect.Effect<DetachHandshake, never, Scope.Scope> =>
  Effect.gen(function*() {
    const ackTimeout = Duration.fromInputUnsafe(settings.ackTimeout)
    let current: Generation | undefined
    /** `renew` and `cancel` one at a time: a generation ends before the next starts. */
    const switching = yield* Semaphore.make(1)
    const end = Effect.suspend(() => {
      const ending = current
      current = undefined
      return ending === undefined ? Effect.void : Scope.close(ending.scope, Exit.void)
    })
    yield* Effect.addFinalizer(() => end)

    return {
      handoff: (entry) =>
        Effect.suspend(() => {
          if (current === undefined) return Effect.succeed<HandoffDisposition>("abandoned")
          const done = Deferred.makeUnsafe<HandoffDisposition>()
          if (!Queue.offerUnsafe(current.commands, { _tag: "Begin", entry, done })) {
            return Effect.succeed<HandoffDisposition>("abandoned")
          }
          return Deferred.await(done)
        }),
      acknowledge: (ack) =>
        Effect.sync(() => {
          if (current !== undefined && ack.runtimeGeneration === current.id) {
            Queue.offerUnsafe(current.commands, { _tag: "Ack", ack })
          }
        }),
      renew: (generation) =>
        switching.withPermit(Effect.andThen(end, Effect.flatMap(startGeneration(generation, channel, ackTimeout), (started) =>
          Effect.sync(() => {
            current = started
          })))),
      cancel: switching.withPermit(end),
      generation: Effect.sync(() => current?.id)
    }
  })
