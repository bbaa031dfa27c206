/**
 * Size: about 410 lines, one concept — the file's rules (read it, append
 * accepted and consumed lines, rewrite it, and the ports that mark) over
 * state those rules share. Its errors are in parentJournalErrors.ts and its
 * lock in config/FileLock.ts; the header is a quarter of it.
 *
 * The parent journal: what a workflow parent session accepted and what its
 * agent got, in a file, so that a restarted parent process gets back a
 * message its idle queue held, and drops the broker's copy of one the agent
 * took (C-DLV-14 for a parent; known issue 6 in docs/testing.md). What it
 * does not cover — a checkpoint that could not be written, lines a power
 * loss takes (appends are not synced), messages that leave the parent
 * without a port — is in docs/workflow.md, "A parent that restarts".
 *
 * Why the layer keeps it: a parent's `deliver` (ParentSession.ts) returns
 * once the inbox has decided, which for a busy parent means the message
 * waits in the in-memory idle queue. The session's client has confirmed it
 * to the broker by then (it confirms what the runtime checkpointed and
 * handed on), so the broker forgets it; a crash before the agent got it
 * would lose it. And a message the
 * agent got whose confirmation never reached the broker comes again to a
 * new process, whose in-memory guards are empty. The layer is the one place
 * that sees both moments: the runtime's checkpoint before the hand-off
 * (`InboundJournal.checkpoint`) and the agent's ports succeeding
 * (`ParentAgent.deliverBatch`, `surface`, `passive`, `dispatchTerminal`, a
 * routed `routeReply`), plus what the parent drops without a port
 * (`dropped`, C-DLV-17).
 *
 * It owns one file of JSON lines, mode 0600 in a 0700 directory:
 *
 *   {"a":<JournalRecord>}        accepted: checkpointed before the parent got it
 *   {"c":{"f":<sender id>,"m":<message id>,"t":<ms>}}   consumed: an agent port took it
 *
 * A consumed line is appended once the port succeeded, in the same
 * uninterruptible step, so a crash in between costs at worst a copy handed
 * over again, never a message marked consumed that the agent did not get.
 * A new journal over the file answers the runtime's `undelivered` with the
 * accepted records that have no consumed line, oldest first — once: after
 * that they are in its parent session's hands, and a later call (the
 * runtime asks again when the agent's run settles) returns nothing, so a
 * message waiting in the idle queue is not handed over a second time. Its
 * `handled` is the consumed messages, the newest `capacity` (1,000), for the
 * runtime's de-duplication window. The file is rewritten (to a synced temp
 * file, then renamed) with the newest consumed lines and the accepted
 * records still pending once it holds twice as many lines as those; a line
 * that does not parse (a torn last line after a crash) is skipped and
 * counted in a warning.
 *
 * One journal per parent session generation, created with it and over its
 * session's own file. It holds an exclusive lock on `<file>.lock`
 * (config/FileLock.ts) while its Scope is open, so a second journal over
 * the same file — another parent process, or this process's next
 * generation made before the previous one's Scope closed — fails with
 * `ParentJournalInUse` instead of restoring the other's messages into its
 * own parent. A writer the lock cannot stop (one that does not take it, or
 * a file system without POSIX locks) is still noticed: a journal that finds
 * the file changed by another writer (its size is not what this journal
 * left) warns and stops rewriting it, since a rewrite from what it alone
 * knows would drop the other's lines; the file then grows. Its state (the
 * pending records, the consumed lines, the line count, the size it left) is
 * written only by its own synchronous code.
 */
import { Clock, Effect, Exit, Schema, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { errorMessage } from "../config/errno.ts"
import { holdFileLock } from "../config/FileLock.ts"
import { appendPrivateLogSync, readBytesIfAnySync, sizeIfAnySync, writePrivateFileSync } from "../config/privateFile.ts"
import type { HandledMessage, HostService, InboundJournal, JournalRecord } from "../session/Host.ts"
import { JournalRecordSchema } from "../session/InboundJournal.ts"
import { type InboundEntry } from "./InboundEntry.ts"
import {
  ParentJournalInUse,
  ParentJournalLockFailed,
  ParentJournalUnreadable,
  ParentJournalWriteFailed
} from "./parentJournalErrors.ts"
import type { ParentAgent } from "./ParentSession.ts"

/**
 * How many consumed messages a parent journal keeps by default: the de-duplication window's default capacity.
 *
 * @since 0.1.0
 */
export const PARENT_JOURNAL_CAPACITY = 1000

export { ParentJournalInUse, ParentJournalLockFailed, ParentJournalUnreadable, ParentJournalWriteFailed } from "./parentJournalErrors.ts"

/**
 * The accepted and consumed messages of one parent session, in a file.
 *
 * @category models
 * @since 0.1.0
 */
export interface ParentJournal {
  /** The file. */
  readonly file: string
  /** The session runtime's journal for the parent's host (`withParentJournal` puts it there). */
  readonly journal: InboundJournal & Required<Pick<InboundJournal, "checkpoint" | "undelivered">>
  /** `agent` with every port that takes a message marking it consumed once it succeeded. */
  readonly agent: <T>(agent: ParentAgent<T>) => ParentAgent<T>
  /**
   * Marks entries the parent dropped without a port (C-DLV-17's finished
   * child's progress) as done, so a restart does not hand them over: give it
   * to `makeParentSession` as `onDropped`.
   */
  readonly dropped: (entries: ReadonlyArray<InboundEntry<unknown>>) => Effect.Effect<void>
  /** Accepted messages no port has taken yet (for diagnostics and tests). */
  readonly pending: Effect.Effect<number>
}

const Consumed = Schema.Struct({ f: Schema.String, m: Schema.String, t: Schema.Finite })

const Line = Schema.Union([Schema.Struct({ a: JournalRecordSchema }), Schema.Struct({ c: Consumed })])

const decodeLine = Schema.decodeUnknownExit(Schema.fromJsonString(Line))

const keyOf = (fromId: string, messageId: string): string => `${fromId}\u0000${messageId}`

/**
 * The lock file of the parent journal `file`: `<file>.lock`, beside it.
 * Never delete it while a journal may be open: a new file at that path is a
 * new lock, and the open journal's no longer excludes anyone. A crashed
 * process leaves nothing to clean up (the kernel drops its lock).
 *
 * @category utils
 * @since 0.1.0
 */
export const lockFileOf = (file: string): string => `${file}.lock`


/** Holds `file`'s lock for the current Scope, creating its directory (0700) first. */
const holdLock = (file: string): Effect.Effect<void, ParentJournalInUse | ParentJournalLockFailed, Scope.Scope> => {
  const lock = lockFileOf(file)
  return Effect.try({
    try: () => fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 }),
    catch: (error) => new ParentJournalLockFailed({ file, lock, detail: errorMessage(error) })
  }).pipe(
    // Nothing probes a journal's lock: a held one fails at once rather than blocking the thread.
    Effect.andThen(holdFileLock(lock, { probeGraceMs: 0 })),
    Effect.mapError((error) =>
      error._tag === "FileLockHeld"
        ? new ParentJournalInUse({ file, lock })
        : error._tag === "FileLockFailed"
        ? new ParentJournalLockFailed({ file, lock, detail: error.detail })
        : error
    )
  )
}

/**
 * A parent journal over `file`, locked for the current Scope and read now:
 * what an earlier process (or generation) accepted and no port took is what
 * `journal.undelivered` answers, once. Make it after the previous parent
 * session's Scope closed: while another journal over `file` is open, this
 * one fails with `ParentJournalInUse`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { headless, Host } from "effect-intercom/session"
 * import { makeParentSession, type ParentAgent, ParentJournal } from "effect-intercom/workflow"
 *
 * declare const agent: ParentAgent<string> // the engine's main agent
 *
 * const parentHost = Effect.gen(function*() {
 *   const journal = yield* ParentJournal.make("/var/lib/engine/main.parent-journal.jsonl")
 *   const parent = yield* makeParentSession(journal.agent(agent), { generation: "1", onDropped: journal.dropped })
 *   const host = ParentJournal.withParentJournal(
 *     headless({ name: "main", cwd: process.cwd(), model: "m" }, parent.deliver),
 *     journal
 *   )
 *   return { parent, host: Host.layer(host) }
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  file: string,
  options: { readonly capacity?: number } = {}
): Effect.Effect<ParentJournal, ParentJournalUnreadable | ParentJournalInUse | ParentJournalLockFailed, Scope.Scope> =>
  Effect.gen(function*() {
    // The lock in a Scope of its own, closed at once if this journal is not made (the caller may retry in its Scope).
    const lockScope = yield* Scope.fork(yield* Effect.scope)
    return yield* open(file, options, lockScope).pipe(Effect.onError(() => Scope.close(lockScope, Exit.void)))
  })

/** `make` once its lock's Scope exists: takes the lock into it, reads the file, builds the journal. */
const open = (
  file: string,
  options: { readonly capacity?: number },
  lockScope: Scope.Scope
): Effect.Effect<ParentJournal, ParentJournalUnreadable | ParentJournalInUse | ParentJournalLockFailed, Scope.Scope> =>
  Effect.gen(function*() {
    yield* holdLock(file).pipe(Scope.provide(lockScope))
    /** The journal's Scope closed: its lock is gone, so it writes nothing more (set by the finalizer below). */
    let closed = false
    const capacity = Math.max(1, Math.trunc(options.capacity ?? PARENT_JOURNAL_CAPACITY))
    // One read gives both the text and the size this journal starts from.
    const { size: sizeRead, text } = yield* Effect.try({
      try: () => {
        const bytes = readBytesIfAnySync(file)
        return { text: bytes.toString("utf8"), size: bytes.length }
      },
      catch: (error) => new ParentJournalUnreadable({ file, detail: errorMessage(error) })
    })
    /** Accepted and not consumed, by (sender id, message id), in the order accepted: each with its line. */
    const pending = new Map<string, { readonly record: JournalRecord; readonly line: string }>()
    /** Consumed lines, oldest first, at most `capacity` after a compaction. */
    let consumed: Array<{ readonly handled: HandledMessage; readonly line: string }> = []
    let lines = 0
    let skipped = 0
    for (const raw of text.split("\n")) {
      if (raw === "") continue
      lines++
      const exit = decodeLine(raw)
      if (Exit.isFailure(exit)) {
        skipped++
        continue
      }
      const value = exit.value
      if ("a" in value) {
        pending.set(keyOf(value.a.from.id, value.a.message.id), { record: value.a, line: raw })
      } else {
        pending.delete(keyOf(value.c.f, value.c.m))
        consumed.push({ handled: { fromId: value.c.f, messageId: value.c.m, receivedAt: value.c.t }, line: raw })
      }
    }
    if (consumed.length > capacity) consumed = consumed.slice(-capacity)
    if (skipped > 0) {
      yield* Effect.logWarning(
        `Intercom skipped ${skipped} unreadable line(s) of the parent journal ${file} (a torn last line after a crash is expected)`
      )
    }
    /** The records an earlier process left pending: handed to the runtime once. */
    let restorable: ReadonlyArray<JournalRecord> | undefined = [...pending.values()].map((entry) => entry.record)
    let appended = false
    /** The file's size as this journal left it: another writer's lines make it differ. */
    let size = sizeRead
    /** Another writer was seen: this journal appends but never rewrites the file (it would drop their lines). */
    let shared = false
    let sharedWarned = false
    const sharedWarning = Effect.logWarning(
      `Another program writes to the parent journal ${file} without its lock: this journal no longer rewrites the file, and it keeps growing. Only one parent session may use a journal file, and only through ParentJournal.make.`
    )

    /**
     * Rewrites the file with what is pending and the newest consumed lines once it holds twice as many
     * lines as those. Run after the state took the line just written, never before: a rewrite must not
     * drop a record it has not seen. A failed rewrite is logged, and tried again as many lines later. A
     * file another journal writes to is never rewritten.
     */
    const compact = Effect.suspend(() => {
      if (!shared && lines < 2 * (pending.size + capacity)) return Effect.void
      try {
        if (!shared && sizeIfAnySync(file) !== size) shared = true
      } catch (error) {
        return Effect.logWarning(`Intercom could not read the size of the parent journal ${file}`, error)
      }
      if (shared) {
        if (sharedWarned) return Effect.void
        sharedWarned = true
        return sharedWarning
      }
      if (consumed.length > capacity) consumed = consumed.slice(-capacity)
      // Consumed first: a message accepted again after it was consumed (a copy the window no longer held)
      // stays pending after the rewrite as before it.
      const kept = [...consumed.map((entry) => entry.line), ...[...pending.values()].map((entry) => entry.line)]
      lines = pending.size + capacity
      const rewritten = kept.map((line) => `${line}\n`).join("")
      try {
        writePrivateFileSync(file, rewritten, { sync: true })
      } catch (error) {
        return Effect.logWarning(`Intercom could not rewrite the parent journal ${file}; it keeps growing until it can`, error)
      }
      lines = kept.length
      size = Buffer.byteLength(rewritten, "utf8")
      return Effect.void
    })

    /**
     * Appends one line (throws what `fs` throws; the next append then checks for a torn last line again).
     * A file that was not as this journal left it has another writer.
     */
    const append = (line: string): void => {
      if (closed) throw new Error("the journal's Scope has closed (its lock with it); use the journal made after it")
      let sizes: { readonly sizeBefore: number; readonly sizeAfter: number }
      try {
        sizes = appendPrivateLogSync(file, `${line}\n`, !appended)
      } catch (error) {
        appended = false
        throw error
      }
      appended = true
      lines++
      if (sizes.sizeBefore !== size) shared = true
      size = sizes.sizeAfter
    }

    const checkpoint = (record: JournalRecord): Effect.Effect<void, ParentJournalWriteFailed> =>
      Effect.try({
        try: () => {
          const line = JSON.stringify({ a: record })
          append(line)
          pending.set(keyOf(record.from.id, record.message.id), { record, line })
        },
        catch: (error) =>
          new ParentJournalWriteFailed({
            file,
            messageId: record.message.id,
            detail: errorMessage(error)
          })
      }).pipe(Effect.andThen(compact))

    /** Marks `entries` consumed; a failure to write is logged (the message may then come again after a restart). */
    const consume = (entries: ReadonlyArray<InboundEntry<unknown>>): Effect.Effect<void> =>
      entries.length === 0 ? Effect.void : Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.try({
          try: () => {
            for (const entry of entries) {
              const line = JSON.stringify({ c: { f: entry.senderId, m: entry.messageId, t: now } })
              append(line)
              pending.delete(keyOf(entry.senderId, entry.messageId))
              consumed.push({ handled: { fromId: entry.senderId, messageId: entry.messageId, receivedAt: now }, line })
              if (consumed.length > 2 * capacity) consumed = consumed.slice(-capacity)
            }
          },
          catch: (error) => error
        }).pipe(
          Effect.catch((error) =>
            Effect.logWarning(`Intercom could not record in ${file} that the agent took a message`, error)
          ),
          Effect.andThen(compact)
        ))

    /**
     * `port` that marks what it took consumed: all of `entries` on success, the first `delivered` on a
     * `DispatchError`. Port and mark run uninterruptibly, as the runtime runs `Host.deliver`: an
     * interruption (a closing generation) cannot fall between the port taking a message and its mark. A
     * port that waits may make that wait `Effect.interruptible` if an interruption there means it took nothing.
     */
    const marking = <E extends { readonly delivered: number }>(
      entries: ReadonlyArray<InboundEntry<unknown>>,
      port: Effect.Effect<void, E>
    ): Effect.Effect<void, E> =>
      Effect.uninterruptible(port.pipe(
        Effect.tapError((error) => consume(entries.slice(0, error.delivered))),
        Effect.tap(() => consume(entries))
      ))

    /** `port` that marks `entry` consumed when it succeeds with a value `took` accepts; both uninterruptibly. */
    const markingIf = <A>(entry: InboundEntry<unknown>, port: Effect.Effect<A>, took: (a: A) => boolean): Effect.Effect<A> =>
      Effect.uninterruptible(Effect.tap(port, (a) => took(a) ? consume([entry]) : Effect.void))

    const journal: ParentJournal["journal"] = {
      checkpoint,
      // Once, and only what no port took since the file was read (an engine may `receive` before the runtime starts).
      undelivered: Effect.sync(() => {
        const records = (restorable ?? []).filter((record) => pending.has(keyOf(record.from.id, record.message.id)))
        restorable = undefined
        return records
      }),
      handled: Effect.sync(() => consumed.slice(-capacity).map((entry) => entry.handled))
    }

    // Added after the lock's Scope was forked, so it runs first when the caller's Scope closes: no write
    // after the lock went.
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
      })
    )
    return {
      file,
      journal,
      agent: <T>(agent: ParentAgent<T>): ParentAgent<T> => {
        const routeReply = agent.routeReply
        return {
          isIdle: agent.isIdle,
          deliverBatch: (batch) => marking(batch, agent.deliverBatch(batch)),
          surface: (entry) => marking([entry], agent.surface(entry)),
          passive: (entry) => markingIf(entry, agent.passive(entry), () => true),
          dispatchTerminal: (batch) => marking(batch.prelude, agent.dispatchTerminal(batch)),
          ...(routeReply === undefined ? {} : {
            routeReply: (entry) => markingIf(entry, routeReply(entry), (routed) => routed)
          })
        }
      },
      dropped: consume,
      pending: Effect.sync(() => pending.size)
    }
  })

/**
 * `host` (a parent's, whose `deliver` is `makeParentSession(...).deliver`)
 * with `journal` as its inbound journal: the runtime checkpoints every
 * accepted message before the parent gets it, restores what an earlier
 * process left pending, and drops a copy of a message the agent already
 * took. A journal the host had is replaced.
 *
 * @category combinators
 * @since 0.1.0
 */
export const withParentJournal = (host: HostService, journal: ParentJournal): HostService => ({
  ...host,
  journal: journal.journal
})
