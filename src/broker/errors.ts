/**
 * Why a broker could not start (`runBroker`): one error whose message names
 * the file or directory at fault and says what to do, for the CLI to print as
 * it is.
 */
import { Data } from "effect"

/**
 * Why a broker could not start; `message` says what to do about it.
 * "StoreUnusable": the database could not be opened, and `detail` is the
 * store's own message, which names the file and the remedy. "StoreUnreadable":
 * it opened, but what it holds cannot be read (a row that does not decode);
 * `detail` names the row, the message the file.
 */
export class BrokerStartupError extends Data.TaggedError("BrokerStartupError")<{
  readonly kind: "AlreadyRunning" | "DirectoryUnusable" | "ListenFailed" | "StoreUnusable" | "StoreUnreadable"
  readonly path: string
  readonly detail: string
}> {
  override get message(): string {
    switch (this.kind) {
      case "AlreadyRunning":
        return `An intercom broker is already running (${this.detail}) on ${this.path}. Use it, or stop it with \`intercom broker stop\`.`
      case "DirectoryUnusable":
        return `Cannot use the intercom directory ${this.path}: ${this.detail}. Check that it is writable by this user, or pass another one with --dir.`
      case "ListenFailed":
        return `Cannot listen on ${this.path}: ${this.detail}.`
      case "StoreUnusable":
        return `The broker did not start: ${this.detail} (docs/store.md, "Faults"; \`intercom broker --durability memory\` runs without the database).`
      case "StoreUnreadable":
        return `The broker did not start: its saved mail in ${this.path} cannot be read: ${this.detail}. ` +
          `Nothing stored in it was dropped (opening it may have migrated its schema and copied a leftover -wal into it). ` +
          `To start with an empty database, move the file aside with any -wal and -shm ` +
          `files beside it (the undelivered mail, questions and results in it are then not used), or run ` +
          `\`intercom broker --durability memory\` without a database (docs/store.md, "Faults").`
    }
  }
}
