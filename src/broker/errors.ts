/**
 * Why a broker could not start (`runBroker`): one error whose message names
 * the file or directory at fault and says what to do, for the CLI to print as
 * it is.
 */
import { Data } from "effect"
import { causeText } from "../protocol/causeText.ts"

/**
 * Why a broker could not start; `message` says what to do about it.
 * "NotADirectory": a file is where the intercom dir (or a directory above it)
 * must be; `detail` names it.
 * "StoreUnusable": the database could not be opened, and `detail` is the
 * store's own message, which names the file and the remedy. "StoreUnreadable":
 * it opened, but what it holds cannot be read (a row that does not decode);
 * `detail` names the row, the message the file.
 */
export class BrokerStartupError extends Data.TaggedError("BrokerStartupError")<{
  readonly kind: "AlreadyRunning" | "DirectoryUnusable" | "NotADirectory" | "ListenFailed" | "StoreUnusable" | "StoreUnreadable"
  readonly path: string
  readonly detail: string
}> {
  override get message(): string {
    switch (this.kind) {
      case "AlreadyRunning":
        return `An intercom broker is already running (${this.detail}) on ${this.path}. Use it, or stop it with \`intercom broker stop\`.`
      case "DirectoryUnusable":
        return `Cannot use the intercom directory ${this.path}: ${causeText(this.detail)}. Check that it is writable by this user, or pass another one with --dir.`
      case "NotADirectory":
        return `Cannot use the intercom directory ${this.path}: ${causeText(this.detail)}. Move that file out of the way, or pass another agent dir with --dir.`
      case "ListenFailed":
        return `Cannot listen on ${this.path}: ${causeText(this.detail)}.`
      case "StoreUnusable":
        return `The broker did not start: ${causeText(this.detail)} (docs/store.md, "Faults"; \`intercom broker --durability memory\` runs without the database).`
      case "StoreUnreadable":
        return `The broker did not start: its saved mail in ${this.path} cannot be read: ${causeText(this.detail)}. ` +
          `Nothing stored in it was dropped (opening it may have migrated its schema and copied a leftover -wal into it). ` +
          `To start with an empty database, move the file aside with any -wal and -shm ` +
          `files beside it (the undelivered mail, questions and results in it are then not used), or run ` +
          `\`intercom broker --durability memory\` without a database (docs/store.md, "Faults").`
    }
  }
}

/**
 * A broker option set to something it cannot hold (`checkCoreOptions`,
 * options.ts): `Broker.make` and `runBroker` fail with it before anything
 * starts, so that a `NaN`, a negative, a fractional count or an infinite
 * duration cannot silently turn a bound off. The message names the option,
 * what it allows and the value given ("topicRecords must be a whole number ≥ 1,
 * got NaN").
 */
export class BrokerOptionError extends Data.TaggedError("BrokerOptionError")<{
  /** The option's name in `BrokerCoreOptions` (`topicRecords`). */
  readonly option: string
  /** What it allows, in words ("a whole number ≥ 1"). */
  readonly allowed: string
  /** The value given, as shown in the message (`NaN`, `-1`, `"soon"`). */
  readonly value: string
}> {
  override get message(): string {
    return `${this.option} must be ${this.allowed}, got ${this.value}`
  }
}
