import { Data } from "effect"

/** Why a broker could not start; `message` says what to do about it. */
export class BrokerStartupError extends Data.TaggedError("BrokerStartupError")<{
  readonly kind: "AlreadyRunning" | "DirectoryUnusable" | "ListenFailed" | "StoreUnusable"
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
        return `The broker did not start: ${this.detail} (docs/store.md).`
    }
  }
}
