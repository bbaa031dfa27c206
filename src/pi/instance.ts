/**
 * The intercom client instance (`rejoin-v1`'s `instanceId`) of a pi session
 * generation, kept with the inbound journal so that a resumed process is the
 * instance that was given the messages it restores.
 *
 * The broker sends a cancel or supersede of a message only to the client
 * instance it gave the message to. A pi process that resumes a session file
 * restores that file's checkpoints (journal.ts): it holds those messages, so
 * it continues the instance the latest checkpoint names (`inheritedInstance`)
 * and the broker's cancel of one of them reaches it. Every checkpoint names
 * the instance that received it.
 *
 * Two live processes must never share an instance: the broker takes a
 * `register` with the holder's `instanceId` for the holder's own reconnect,
 * destroys the holder's connection without telling it and hands its
 * unconfirmed mail over, and the holder's reconnect does the same back. So
 * an instance is held with an exclusive lock (FileLock.ts: the kernel drops
 * it when its process dies, however it dies) on
 * `<intercomDir>/instances/<instanceId>.lock` for as long as the generation
 * runs. A process that resumes a file whose instance a live generation holds
 * — the same session open twice, in this process or another — takes a fresh
 * instance: its registration is a takeover, as it was before, and a cancel of
 * a message the other one was given does not reach it. Which of the
 * journal's undelivered messages a generation restores is decided per
 * checkpoint (`liveInstances`): one naming an instance another live
 * generation holds is that one's, which received or restored it. Any doubt
 * (no lock directory, a lock file that cannot be used, an id that is not a
 * UUID) means a fresh instance too: the behaviour from before this module.
 *
 * A fresh instance is locked only before the first checkpoint that names it
 * (`forCheckpoint`), since until one does no process can inherit it: a
 * session that never receives mail leaves no lock file behind. A generation
 * that ends cleanly removes its lock file as it lets go (FileLock.ts
 * `holdRemovableFileLock`: every locker checks that the path still names the
 * file it locked, so a removal never lets two processes hold one instance);
 * a process that dies leaves it, for the next resume to take.
 */
import { Effect, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { holdRemovableFileLock, isFileLockHeldPassively } from "../config/FileLock.ts"

/**
 * The instance of one generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface PiInstance {
  /** The client's `instanceId`, the same on each of its connections. */
  readonly instanceId: string
  /**
   * The id to name in a checkpoint: this instance's, once it is held (a fresh
   * one is locked on the first call); undefined when it cannot be, so no
   * later process inherits an instance it cannot tell is live.
   */
  readonly forCheckpoint: Effect.Effect<string | undefined>
  /**
   * The instance the journal names is held by another live generation (the
   * session open twice), which is why this one is fresh. Which undelivered
   * messages are left to that one is `liveInstances`'s, per checkpoint.
   */
  readonly inheritedLive: boolean
}

/** The ids this module writes and accepts back (`randomUUID`): also safe as a file name. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * Whether `id` could be an instance id this module made: a lowercase UUID.
 * A checkpoint naming anything else is not inherited.
 *
 * @category predicates
 * @since 0.1.0
 */
export const isInstanceId = (id: string): boolean => UUID.test(id)

/** The directory of the instance locks under the intercom dir. */
export const instancesDir = (intercomDir: string): string => path.join(intercomDir, "instances")

/** How taking an instance's lock went: held (for the current Scope), held by a live generation, or not usable. */
type Hold = "held" | "live" | "unusable"

/** Holds `instanceId`'s lock for the current Scope (its file removed as it lets go), if it can. */
const hold = (intercomDir: string, instanceId: string): Effect.Effect<Hold, never, Scope.Scope> =>
  Effect.suspend(() => {
    const dir = instancesDir(intercomDir)
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    } catch {
      return Effect.succeed<Hold>("unusable")
    }
    return holdRemovableFileLock(path.join(dir, `${instanceId}.lock`), { probeGraceMs: 0 }).pipe(
      Effect.as<Hold>("held"),
      Effect.catchTag("FileLockHeld", () => Effect.succeed<Hold>("live")),
      Effect.orElseSucceed((): Hold => "unusable")
    )
  })

/**
 * The instance of a generation whose journal names `inherited` (the
 * latest checkpoint's, `inheritedInstance`; undefined when it names none):
 * that one when no live generation holds it — held from now until the
 * current Scope closes — else a fresh one, saying whether a live generation
 * holds the inherited one. Never fails.
 *
 * @category constructors
 * @since 0.1.0
 */
export const claimInstance = (input: {
  readonly intercomDir: string
  readonly inherited: string | undefined
}): Effect.Effect<PiInstance, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { inherited, intercomDir } = input
    const claimed = inherited !== undefined && isInstanceId(inherited) ? yield* hold(intercomDir, inherited) : "unusable"
    if (inherited !== undefined && claimed === "held") {
      return { instanceId: inherited, forCheckpoint: Effect.succeed(inherited), inheritedLive: false }
    }
    const fresh = randomUUID()
    // Forked now, so the lock taken later is let go where the claim stands in the current Scope: after what
    // was built after it (the client, which leaves the bus first), not before.
    const lockScope = yield* Scope.fork(yield* Effect.scope, "sequential")
    const freshHold = yield* Effect.cached(Scope.provide(hold(intercomDir, fresh), lockScope))
    return {
      instanceId: fresh,
      forCheckpoint: Effect.map(freshHold, (held) => held === "held" ? fresh : undefined),
      inheritedLive: claimed === "live"
    }
  })

/**
 * Which of `instanceIds` a live generation holds (this process's others
 * included): the instances whose checkpointed messages that generation has
 * (it received them, or restored them when it started), so another one
 * leaves them to it (journal.ts `undeliveredIn`). Looks without taking or
 * creating anything (`isFileLockHeldPassively`), so a generation claiming one
 * of them meanwhile is not refused; an id that is not one of ours is never
 * held (nor made a path).
 *
 * @category getters
 * @since 0.1.0
 */
export const liveInstances = (
  intercomDir: string,
  instanceIds: ReadonlyArray<string>
): Effect.Effect<ReadonlySet<string>> =>
  Effect.map(
    Effect.forEach(instanceIds, (id) =>
      isInstanceId(id)
        ? Effect.map(isFileLockHeldPassively(path.join(instancesDir(intercomDir), `${id}.lock`)), (live) => live ? [id] : [])
        : Effect.succeed([])),
    (found) => new Set(found.flat())
  )
