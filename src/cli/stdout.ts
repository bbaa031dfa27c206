/**
 * Writing a command's result to stdout so that a write that fails is known.
 * `Console.log` drops write errors (stdout a full disk, `/dev/full`, a pipe
 * whose reader has gone), so a command whose only output was lost would exit
 * 0; the short-lived commands print their result through `writeStdout`
 * instead and end with exit 1 and a line on stderr when it fails
 * (`printOrExit`; client/run.ts for the client commands). The commands that
 * print a view for a person or a pipeline (`top --once`, `ui`'s URL) end
 * quietly with exit 0 when stdout's reader has gone (EPIPE: `| head -1`) and
 * with exit 1 on another failure (`printOrQuit`); `ui` writes nothing to
 * stdout after its URL, so a reader that took the URL and left does not end
 * it (ui/command.ts). `intercom watch` has its
 * own rule for a dead stdout (client/watch.ts).
 */
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { EXIT_FAILURE, EXIT_OK, ExitCode } from "./exit.ts"

/**
 * Stdout did not take a result (`detail`: the system's error, e.g.
 * `ENOSPC: no space left on device, write`; `code`: its code, `EPIPE` when
 * the reader of a pipe has gone).
 *
 * @category errors
 * @since 0.1.0
 */
export class StdoutWriteFailed extends Data.TaggedError("StdoutWriteFailed")<{
  readonly detail: string
  readonly code: string | undefined
}> {
  override get message(): string {
    return `Cannot write the result to stdout (${this.detail}). Check where stdout goes (a full disk, a closed pipe) and run the command again.`
  }
}

/**
 * Writes `text` and a newline to stdout; completes once the stream took it
 * (for a pipe, once it was flushed), and fails with `StdoutWriteFailed` if it
 * did not. Meanwhile it listens for stdout's 'error' event, which would
 * otherwise end the process with a stack trace; after a failure that listener
 * stays, as the stream is dead and may report the error again.
 */
export const writeStdout = (text: string): Effect.Effect<void, StdoutWriteFailed> =>
  Effect.callback<void, StdoutWriteFailed>((resume) => {
    let settled = false
    const failed = (error: NodeJS.ErrnoException) => {
      if (settled) return
      settled = true
      resume(Effect.fail(new StdoutWriteFailed({ detail: error.message, code: error.code })))
    }
    process.stdout.on("error", failed)
    process.stdout.write(`${text}\n`, (error) => {
      if (error !== null && error !== undefined) return failed(error)
      process.stdout.off("error", failed)
      if (settled) return
      settled = true
      resume(Effect.void)
    })
  })

/**
 * `writeStdout`, and on failure its message on stderr and `ExitCode` 1: for
 * a command whose result is all it does (`broker status`, `broker stats`).
 */
export const printOrExit = (text: string): Effect.Effect<void, ExitCode> =>
  writeStdout(text).pipe(
    Effect.catchTag("StdoutWriteFailed", (error) =>
      Console.error(error.message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))))
  )

/**
 * `writeStdout` for output a pipeline's reader may stop reading (`intercom
 * top --once | head -1`, `intercom ui` before its URL was written): stdout gone (EPIPE) ends
 * the command quietly with exit 0, as `head`'s writers usually end; another
 * failure (a full disk) is said on stderr, exit 1 (`printOrExit`).
 */
export const printOrQuit = (text: string): Effect.Effect<void, ExitCode> =>
  writeStdout(text).pipe(
    Effect.catchTag("StdoutWriteFailed", (error) =>
      error.code === "EPIPE"
        ? Effect.fail(new ExitCode({ code: EXIT_OK }))
        : Console.error(error.message).pipe(Effect.andThen(Effect.fail(new ExitCode({ code: EXIT_FAILURE })))))
  )
