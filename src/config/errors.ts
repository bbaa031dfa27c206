/**
 * What can be wrong with the intercom configuration. Both errors carry a
 * user-facing `message` that names the file or variable and what was expected.
 *
 * - `IntercomConfigFileError` is not fatal: the whole file is ignored, every
 *   setting takes its default, and the caller logs the error (C-CFG-2).
 * - `IntercomEnvError` is a startup error: a variable that must be a positive
 *   integer holds something else, and the session should not start with a
 *   value the user did not ask for.
 * - `SocketPathError` (defined with the socket-path rule in socketPath.ts) is
 *   a startup error too: the agent dir has no usable broker socket path.
 */
import * as Data from "effect/Data"
import type { SocketPathError } from "./socketPath.ts"
import { causeText } from "../protocol/causeText.ts"

/** One known key of `config.json` with a value of the wrong type. */
export interface InvalidField {
  /** The key, e.g. `"askTimeoutMs"`. */
  readonly field: string
  /** What the key needs, e.g. `"a positive integer (milliseconds)"`. */
  readonly expected: string
  /** A short rendering of what the file holds, e.g. `-1` or `"yes"`. */
  readonly found: string
}

/** Why a `config.json` was rejected: it cannot be read, is not JSON, is not an object, or has wrong-typed keys. */
export type ConfigFileProblem = "Unreadable" | "InvalidJson" | "NotAnObject" | "InvalidFields"

/**
 * A `config.json` was rejected as a whole (C-CFG-2): every setting takes its
 * default. Not fatal — log its `message`, which names the file and each bad key.
 */
export class IntercomConfigFileError extends Data.TaggedError("IntercomConfigFileError")<{
  /** The file that was rejected. */
  readonly path: string
  readonly problem: ConfigFileProblem
  /** The read or parse failure, or what the JSON was instead of an object; empty for `InvalidFields`. */
  readonly detail: string
  /** Every wrong-typed known key (non-empty exactly when `problem` is `"InvalidFields"`). */
  readonly fields: ReadonlyArray<InvalidField>
}> {
  override get message(): string {
    const prefix = `Ignoring intercom config ${this.path}; every setting uses its default.`
    switch (this.problem) {
      case "Unreadable":
        return `${prefix} The file cannot be read: ${causeText(this.detail)}.`
      case "InvalidJson":
        return `${prefix} It is not valid JSON: ${causeText(this.detail)}.`
      case "NotAnObject":
        return `${prefix} It must be a JSON object, but it is ${this.detail}.`
      case "InvalidFields":
        return `${prefix} ${
          this.fields.map((f) => `"${f.field}" must be ${f.expected}, found ${f.found}.`).join(" ")
        }`
    }
  }
}

/**
 * An environment variable that must be a positive integer holds something
 * else (only `…_ASK_TIMEOUT_MS` is this strict). A startup error: refuse to start.
 */
export class IntercomEnvError extends Data.TaggedError("IntercomEnvError")<{
  /** The environment variable, e.g. `ATOMIC_INTERCOM_ASK_TIMEOUT_MS`. */
  readonly variable: string
  /** Its (raw) value. */
  readonly value: string
  /** What it must be, e.g. `"a positive integer (milliseconds)"`. */
  readonly expected: string
}> {
  override get message(): string {
    return `Environment variable ${this.variable} must be ${this.expected}, but it is ${
      JSON.stringify(this.value)
    }. Fix it or unset it.`
  }
}

/** Also `SocketPathError` (socketPath.ts): no usable socket path for the agent dir, a startup error. */
export type IntercomConfigError = IntercomConfigFileError | IntercomEnvError | SocketPathError
