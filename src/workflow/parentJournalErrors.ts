/**
 * The errors of a parent journal (ParentJournal.ts): a file it cannot read,
 * a file another journal holds, a lock file it cannot use, a line it
 * cannot write. Each message says what to do.
 */
import { Data } from "effect"

/**
 * A parent journal's file exists and could not be read. Nothing is
 * restored from it; fix its owner or mode (0600), or move it away to start
 * empty.
 *
 * @category errors
 * @since 0.1.0
 */
export class ParentJournalUnreadable extends Data.TaggedError("ParentJournalUnreadable")<{
  readonly file: string
  readonly detail: string
}> {
  override get message(): string {
    return `cannot read the parent journal ${this.file} (${this.detail}); check the file's owner and mode (0600), or move it away to start with an empty journal`
  }
}

/**
 * Another parent journal over the same file is open — in another process,
 * or in this one (a parent session's next journal made before the previous
 * one's Scope closed): it holds the lock `lock`. Give each parent session
 * its own journal file, and make a session's next journal only once the
 * previous one's Scope has closed.
 *
 * @category errors
 * @since 0.1.0
 */
export class ParentJournalInUse extends Data.TaggedError("ParentJournalInUse")<{
  readonly file: string
  readonly lock: string
}> {
  override get message(): string {
    return `the parent journal ${this.file} is in use: another journal over it (in this process or another) holds its lock ${this.lock}. Give each parent session its own journal file, and make a session's next journal only after the previous one's Scope closed`
  }
}

/**
 * A parent journal's lock file (`<file>.lock`) or its directory could not be
 * used: nothing was read. The directory must be writable by this user; a
 * lock file that is not one (another program's file at that path) must be
 * moved away.
 *
 * @category errors
 * @since 0.1.0
 */
export class ParentJournalLockFailed extends Data.TaggedError("ParentJournalLockFailed")<{
  readonly file: string
  readonly lock: string
  readonly detail: string
}> {
  override get message(): string {
    return `cannot lock the parent journal ${this.file} (${this.detail}); check that its directory is writable by this user, and move ${this.lock} away if it is not a lock file this library made`
  }
}

/**
 * A parent journal could not save an accepted message. The session runtime
 * logs it and hands the message over anyway: it reaches the agent, but a
 * crash before the agent took it would lose it.
 *
 * @category errors
 * @since 0.1.0
 */
export class ParentJournalWriteFailed extends Data.TaggedError("ParentJournalWriteFailed")<{
  readonly file: string
  readonly messageId: string
  readonly detail: string
}> {
  override get message(): string {
    return `cannot save message ${this.messageId} in the parent journal ${this.file} (${this.detail}); check the disk and the directory's owner and mode (0700)`
  }
}
