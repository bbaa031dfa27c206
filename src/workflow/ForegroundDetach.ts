/**
 * The foreground detach handshake of one session, both sides wired
 * together in process: the parent's `DetachHandshake` and the responders of
 * the foreground children the engine runs for it (C-ORD-10…21).
 *
 * In the seeds the handshake never crosses the bus: the parent's runtime
 * and the runner of its foreground `subagent` call live in one process, so
 * a probe or commit is a call into the live child's `DetachResponder` and
 * its acknowledgement a call back into the handshake (hence the 50 ms
 * default per phase). An engine `attach`es a foreground child for as long
 * as its `subagent` call waits on it (a Scope), with the `release` that ends
 * that call (a parallel group's shared release, C-ORD-21).
 *
 * It also gives the two hand-off shapes the rest of the layer takes:
 * `handoff` for a parent's `ParentInbox` (an `InboundEntry`) and
 * `stageHandoff`, the `ForegroundHandoff` port of `StagePorts`. Both only
 * decide: the handshake never surfaces an entry itself. The caller does, on
 * `delivered` (and a stage also on `unclaimed`), so an entry reaches the
 * model once.
 *
 * Owner: the table of attached children, changed only by the synchronous
 * steps of `attach` (acquire, release) and of a child's detach (a detached
 * child leaves the table at once: it is no longer the foreground owner);
 * the handshake actor owns the rest.
 */
import { Effect, type Scope } from "effect"
import { type DetachChannel, type DetachHandshake, type DetachHandshakeSettings, defaultDetachHandshakeSettings, makeDetachHandshake } from "./DetachHandshake.ts"
import { type DetachResponder, makeDetachResponder } from "./DetachResponder.ts"
import type { HandoffDisposition } from "./DetachRoute.ts"
import { inboundEntry, type SourceResolver } from "./InboundAdapter.ts"
import type { InboundEntry } from "./InboundEntry.ts"
import type { ForegroundHandoff } from "./StageAdmission.ts"

/**
 * A foreground child as the engine runs it.
 *
 * @category models
 * @since 0.1.0
 */
export interface ForegroundChild {
  /** The names and broker ids its messages come from (its intercom target first). */
  readonly targets: ReadonlyArray<string>
  /** Ends the parent's `subagent` call on it (C-ORD-12); for a parallel group, the group's release (C-ORD-21). */
  readonly release: Effect.Effect<void>
  /** How long an uncommitted reservation lasts; default 1 s (C-ORD-11). */
  readonly reservationTtlMs?: number | undefined
}

/**
 * Settings of `makeForegroundDetach`.
 *
 * @category models
 * @since 0.1.0
 */
export interface ForegroundDetachSettings extends Partial<DetachHandshakeSettings> {
  /** The session's runtime generation (C-ORD-10); a new one is started with `handshake.renew`. */
  readonly generation: string
  /** Names a sender's source when a stage message does not carry one (see `InboundAdapter`). */
  readonly resolveSource?: SourceResolver | undefined
}

/**
 * A session's foreground detach, wired in process.
 *
 * @category models
 * @since 0.1.0
 */
export interface ForegroundDetach {
  /** The parent's handshake actor (`renew`/`cancel` start and end runtime generations, C-ORD-16). */
  readonly handshake: DetachHandshake
  /** Offers an entry to the live foreground child; only decides (see the module header). */
  readonly handoff: <A>(entry: InboundEntry<A>) => Effect.Effect<HandoffDisposition>
  /** The `ForegroundHandoff` port of a stage: a message goes through the handshake, an engine notice is `unclaimed`. */
  readonly stageHandoff: ForegroundHandoff
  /**
   * Attaches a foreground child while the current Scope lives (its
   * `subagent` call): requests for its targets reach its responder, whose
   * acknowledgements reach the handshake.
   */
  readonly attach: (child: ForegroundChild) => Effect.Effect<DetachResponder, never, Scope.Scope>
}

interface Attached {
  readonly targets: ReadonlyArray<string>
  readonly responder: DetachResponder
}

/**
 * Makes a session's foreground detach in the current Scope (the session
 * generation's): the handshake starts in `settings.generation`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeForegroundDetach = (
  settings: ForegroundDetachSettings
): Effect.Effect<ForegroundDetach, never, Scope.Scope> =>
  Effect.gen(function*() {
    const attached = new Set<Attached>()
    const channel: DetachChannel = {
      foreground: Effect.sync(() =>
        attached.size === 0 ? undefined : { targets: [...attached].flatMap((child) => child.targets) }
      ),
      // C-ORD-11: only the child whose target is named answers; the others never see the request.
      send: (request) =>
        Effect.forEach(
          [...attached].filter((child) => child.targets.includes(request.childIntercomTarget)),
          (child) => child.responder.onRequest(request),
          { discard: true }
        )
    }
    const handshake = yield* makeDetachHandshake(channel, {
      ackTimeout: settings.ackTimeout ?? defaultDetachHandshakeSettings.ackTimeout
    })
    yield* handshake.renew(settings.generation)

    const attach = (child: ForegroundChild): Effect.Effect<DetachResponder, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.gen(function*() {
          let entry: Attached | undefined
          // A child that detached is no longer the foreground owner: later messages from it skip the handshake.
          const leave = Effect.sync(() => {
            if (entry !== undefined) attached.delete(entry)
          })
          const responder = yield* makeDetachResponder({
            targets: child.targets,
            release: Effect.andThen(leave, child.release),
            reply: handshake.acknowledge,
            ...(child.reservationTtlMs === undefined ? {} : { reservationTtlMs: child.reservationTtlMs })
          })
          entry = { targets: child.targets, responder }
          attached.add(entry)
          return entry
        }),
        (entry) => Effect.sync(() => attached.delete(entry))
      ).pipe(Effect.map((entry) => entry.responder))

    return {
      handshake,
      handoff: handshake.handoff,
      stageHandoff: (entry) =>
        entry._tag === "Notice"
          ? Effect.succeed<HandoffDisposition>("unclaimed")
          : handshake.handoff(inboundEntry(entry.inbound, { resolveSource: settings.resolveSource })),
      attach
    }
  })
