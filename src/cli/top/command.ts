/**
 * The `intercom top` command line (docs/cli.md): flags around `runTop`,
 * which is loaded only when the command runs. The live view needs stdout
 * and stdin to be a terminal; without one it is a usage error naming `--once`.
 * The agent dir is checked next, as a client command's is (agentDirReport.ts),
 * a `--dir` that does not exist included.
 */
import * as Command from "effect/cli/Command"
import * as Console from "effect/Console"
import * as Flag from "effect/cli/Flag"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { checkedProcessPaths } from "../agentDirReport.ts"
import { EXIT_USAGE, ExitCode } from "../exit.ts"
import { reportError } from "../foreground.ts"
import { parseTimeout } from "../client/duration.ts"

const dirFlag = Flag.String("dir").pipe(
  Flag.withDescription(
    "Agent directory of the broker to watch (default: $ATOMIC_CODING_AGENT_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent)."
  ),
  Flag.filter((dir) => dir.trim().length > 0, () => "--dir must not be empty"),
  Flag.optional
)

const intervalFlag = Flag.String("interval").pipe(
  Flag.withDescription("How often the view updates: a duration from 100ms to 60s (500, 2s). Default 1s."),
  Flag.filterMap(
    (text) => {
      const ms = parseTimeout(text)
      return ms === undefined || ms < 100 || ms > 60_000 ? Option.none() : Option.some(ms)
    },
    (text) => `--interval must be a duration from 100ms to 60s such as 500 or 2s; got ${JSON.stringify(text)}`
  ),
  Flag.withDefault(1_000)
)

const onceFlag = Flag.Boolean("once").pipe(
  Flag.withDescription("Print one snapshot and exit instead of the live view."),
  Flag.withDefault(false)
)

const jsonFlag = Flag.Boolean("json").pipe(
  Flag.withDescription("With --once: the snapshot as one line of JSON (the observe-v1 BrokerSnapshot)."),
  Flag.withDefault(false)
)

/** Which of stdout and stdin is not a terminal (the live view needs both), or undefined. */
const liveViewBlocker = (): string | undefined =>
  process.stdout.isTTY !== true ? "stdout" : process.stdin.isTTY !== true ? "stdin" : undefined

/** `intercom top [--dir <dir>] [--interval <duration>] [--once [--json]]`. */
export const top = Command.make("top", { dir: dirFlag, interval: intervalFlag, once: onceFlag, json: jsonFlag }).pipe(
  Command.withHandler((input) =>
    Effect.gen(function*() {
      // A flag that does not fit the others: a bad invocation (exit 2), as effect/cli's own errors are.
      if (input.json && !input.once) {
        yield* Console.error("--json needs --once: the live view is for a terminal; `intercom top --once --json` prints one snapshot.")
        return yield* new ExitCode({ code: EXIT_USAGE })
      }
      // The live view draws on the alternate screen and reads keys: into a file or a pipe it would
      // write escape sequences, and with stdin not a terminal it would quit at once. Refused (exit 2).
      const notTerminal = input.once ? undefined : yield* Effect.sync(liveViewBlocker)
      if (notTerminal !== undefined) {
        yield* Console.error(
          `intercom top's live view needs a terminal, and ${notTerminal} is not one. For a script or a pipe, print one snapshot: \`intercom top --once\` (as JSON: \`intercom top --once --json\`).`
        )
        return yield* new ExitCode({ code: EXIT_USAGE })
      }
      // A --dir that is a file, or a file in the intercom dir's place: said as the client commands say it.
      // A --dir that does not exist too: top never waits for a broker to start, so "no broker" would hide the typo.
      const dir = Option.getOrUndefined(input.dir)
      yield* checkedProcessPaths(dir, "refuse")
      const { runTop } = yield* Effect.promise(() => import("./runTop.ts"))
      yield* runTop({ dir, intervalMs: input.interval, once: input.once, json: input.json }).pipe(
        Effect.catchTag("ObserveError", reportError),
        Effect.catchTag("PlatformError", reportError)
      )
    })
  ),
  Command.withShortDescription("Live view of the running broker: sessions, traffic, queues, open asks, refusals"),
  Command.withDescription(
    "A live terminal view of the running broker (read-only): sessions with status, health, pending asks and last activity; traffic rates; queue depths; open asks with their age; recent refusals with their codes. Keys: s cycles the sort column, / filters (Enter keeps, Esc clears), q quits. --once prints one snapshot (--json: as JSON) for scripts."
  )
)
