/**
 * The handled log: for a host that keeps no history of its own (a headless
 * host, `intercom watch`), a small file of the messages it took, so that a
 * new process of the same session does not hand them over again when the
 * broker sends a copy (known issue 6: the old process read a message and
 * never got to confirm it, or the broker crashed before storing the
 * confirmation). `withHandledLog` gives such a host a journal whose only
 * part is `handled` (`InboundJournal.handled`).
 *
 * It owns one file: one JSON line per message the host took,
 * `{"f":<sender id>,"m":<message id>,"t":<ms>}`, appended *after* the host
 * took it — a crash in between leaves at worst a copy handed over again,
 * never a message marked handled that the host did not get. A line that
 * does not parse (a torn last line after a crash) is skipped, and a log's
 * first append ends such a line before it writes its own. The file is
 * kept to the newest `capacity` lines (1,000, the de-duplication window's
 * default): once it holds twice that, it is rewritten with the newest. Mode
 * 0600 in a 0700 directory, as the intercom dir's other private files.
 *
 * Its state, the line count and whether it has appended yet, is written
 * only by its own synchronous code.
 */
import { Clock, Data, Effect } from "effect"
import { appendPrivateLogSync, readFileIfAnySync, writePrivateFileSync } from "../config/privateFile.ts"
import type { HandledMessage, HostService } from "./Host.ts"

/** How many lines a handled log keeps by default: the de-duplication window's default capacity. */
export const HANDLED_LOG_CAPACITY = 1000

/**
 * A handled log could not be read (it exists and is not readable). The
 * session then remembers nothing from it, and a copy the broker sends again
 * may reach the host twice.
 *
 * @category errors
 * @since 0.1.0
 */
export class HandledLogUnreadable extends Data.TaggedError("HandledLogUnreadable")<{
  readonly file: string
  readonly detail: string
}> {
  override get message(): string {
    return `cannot read the handled log ${this.file} (${this.detail}); messages taken before this process may be shown again. Check the file's owner and mode (0600)`
  }
}

/**
 * The messages a host took, in a file.
 *
 * @category models
 * @since 0.1.0
 */
export interface HandledLog {
  /** The file. */
  readonly file: string
  /** Appends that the host took this message at `at` (ms); a failure is logged, never fatal. */
  readonly record: (fromId: string, messageId: string, at: number) => Effect.Effect<void>
  /** The messages in the file, oldest first (none when there is no file yet). */
  readonly handled: Effect.Effect<ReadonlyArray<HandledMessage>, HandledLogUnreadable>
}

const lineOf = (fromId: string, messageId: string, at: number): string =>
  `${JSON.stringify({ f: fromId, m: messageId, t: at })}\n`

/** The entry a line holds, or undefined when it is not one (a torn or foreign line). */
const parseLine = (line: string): HandledMessage | undefined => {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    return undefined
  }
  if (typeof value !== "object" || value === null) return undefined
  const f: unknown = Reflect.get(value, "f")
  const m: unknown = Reflect.get(value, "m")
  const t: unknown = Reflect.get(value, "t")
  if (typeof f !== "string" || typeof m !== "string") return undefined
  return typeof t === "number" && Number.isFinite(t) ? { fromId: f, messageId: m, receivedAt: t } : { fromId: f, messageId: m }
}

const readLines = (file: string): ReadonlyArray<string> =>
  readFileIfAnySync(file).split("\n").filter((line) => line !== "")

/**
 * A handled log over `file`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { HandledLog, headless } from "effect-intercom/session"
 *
 * const log = HandledLog.make("/home/me/.pi/agent/intercom/watch/reviewer.handled.jsonl")
 * const host = HandledLog.withHandledLog(
 *   headless({ name: "reviewer", cwd: "/work", model: "none" }, (inbound) => Effect.log(inbound.text)),
 *   log
 * )
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (file: string, options: { readonly capacity?: number } = {}): HandledLog => {
  const capacity = Math.max(1, Math.trunc(options.capacity ?? HANDLED_LOG_CAPACITY))
  /** Lines in the file as far as this log knows (read by `handled`, counted by `record`). */
  let lines = 0
  /** Whether this log has appended yet (its first append checks the file's last line and the directory's mode). */
  let appended = false
  const compact = (): void => {
    // Counted down first: a compaction that fails is tried again `capacity` records later, not on every one.
    lines = capacity
    const kept = readLines(file).slice(-capacity)
    writePrivateFileSync(file, kept.map((line) => `${line}\n`).join(""), { sync: true })
    lines = kept.length
  }
  return {
    file,
    record: (fromId, messageId, at) =>
      Effect.try({
        try: () => {
          try {
            appendPrivateLogSync(file, lineOf(fromId, messageId, at), !appended)
          } catch (error) {
            // The next append checks for a torn last line again.
            appended = false
            throw error
          }
          appended = true
          if (++lines >= capacity * 2) compact()
        },
        catch: (error) => error
      }).pipe(
        Effect.catch((error) => Effect.logWarning(`Intercom could not record message ${messageId} in ${file}`, error))
      ),
    handled: Effect.try({
      try: () => {
        const all = readLines(file)
        lines = all.length
        const entries: Array<HandledMessage> = []
        for (const line of all.slice(-capacity)) {
          const entry = parseLine(line)
          if (entry !== undefined) entries.push(entry)
        }
        return entries
      },
      catch: (error) => new HandledLogUnreadable({ file, detail: error instanceof Error ? error.message : String(error) })
    })
  }
}

/**
 * `host` with a journal whose `handled` is `log`: every message it takes is
 * recorded once `deliver` succeeded, and a new generation (or process)
 * remembers them, so the broker's copy of one is dropped. Only for a
 * `deliver` that completes once the message has had its effect (shown,
 * stored): one that completes when it only queued the message in memory (a
 * workflow parent's, docs/workflow.md) would have a crash lose a message the
 * log already calls handled (a workflow parent has `ParentJournal`). A journal the host
 * has already keeps its checkpoint and restore; its `handled`, if any, is
 * replaced by the log's. Without one, the host's journal is only `handled`
 * and saves nothing, so a message stays unconfirmed until `deliver` took it
 * (one `intercom watch` could not print comes again to the next watch). For a host with a saved history of its own, a
 * `handled` read from that history is the better answer (pi's).
 *
 * @category combinators
 * @since 0.1.0
 */
export const withHandledLog = (host: HostService, log: HandledLog): HostService => ({
  ...host,
  deliver: (inbound) =>
    Effect.tap(host.deliver(inbound), () =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => log.record(inbound.from.id, inbound.message.id, now))),
  // Without a journal of the host's, one that saves nothing: a message stays unconfirmed until the host took it.
  journal: { ...host.journal, handled: log.handled }
})
