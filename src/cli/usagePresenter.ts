/**
 * How the full program (program.ts) presents a command line effect/cli could
 * not parse. effect/cli's default prints the help on stdout and the errors on
 * stderr; ours puts both on stderr, where every error of this CLI goes, so
 * stdout carries results only (docs/cli.md, "Output and `--json`"). With
 * `--json` among the arguments it also prints the one JSON object every
 * command promises on stdout, success or not:
 * `{"ok":false,"action":"send","text":"<the errors>","details":{"error":"InvalidArguments"}}`.
 * Requested help (`--help`) and `--version` are presented as effect/cli does.
 */
import * as CliOutput from "effect/cli/CliOutput"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

/**
 * The `--json` object of a command line that did not parse: `commandPath` is
 * effect/cli's (`["intercom", "send"]`), `messages` its errors' texts.
 *
 * @category formatting
 * @since 0.1.0
 */
export const invalidInvocationJson = (
  commandPath: ReadonlyArray<string>,
  messages: ReadonlyArray<string>
): Record<string, unknown> => ({
  ok: false,
  action: commandPath.slice(1).join(" ") || commandPath.join(" "),
  text: messages.join("\n"),
  details: { error: "InvalidArguments" }
})

/**
 * The presenter for `argv` (the process's arguments: `--json` among them asks
 * for the JSON object). Provide it with `CliOutput.layerPresenter`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const usagePresenter = (argv: ReadonlyArray<string>): CliOutput.Presenter => {
  const json = argv.includes("--json")
  return {
    present: (event) =>
      event._tag !== "InvalidInvocation"
        ? CliOutput.defaultPresenter.present(event)
        : Effect.gen(function*() {
          const formatter = yield* CliOutput.Formatter
          yield* Console.error(formatter.formatHelpDoc(event.helpDoc))
          yield* Console.error(formatter.formatErrors(event.errors))
          if (json) {
            yield* Console.log(JSON.stringify(invalidInvocationJson(event.commandPath, event.errors.map((error) => error.message))))
          }
        })
  }
}
