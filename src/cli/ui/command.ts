/**
 * `intercom ui [--dir <dir>] [--port <n>] [--stuck-after <duration>]`: the
 * web view of a broker (docs/ui.md). Only the command line is here; the
 * handler loads src/ui (HTTP server, page) when it runs, so no other command
 * loads them. Its URL is its only line on stdout, through stdout.ts
 * (`printOrQuit`): stdout gone before the URL was written ends it quietly,
 * another write failure with exit 1. The line saying what it watches goes to
 * stderr, so once a reader has taken the URL (`intercom ui | head -1`) and
 * left, nothing more is written to the dead pipe and the UI keeps serving
 * until its usual signals (Ctrl-C, SIGTERM, SIGHUP). Its agent dir is checked
 * first, as a client command's is (agentDirReport.ts).
 */
import * as Command from "effect/cli/Command"
import * as Flag from "effect/cli/Flag"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { checkedProcessPaths } from "../agentDirReport.ts"
import { parseTimeout } from "../client/duration.ts"
import { reportError } from "../foreground.ts"
import { printOrQuit } from "../stdout.ts"

const dirFlag = Flag.String("dir").pipe(
  Flag.withDescription(
    "Agent directory of the broker to watch (default: $ATOMIC_CODING_AGENT_DIR, else $PI_CODING_AGENT_DIR, else ~/.pi/agent)."
  ),
  Flag.filter((dir) => dir.trim().length > 0, () => "--dir must not be empty"),
  Flag.optional
)

const portFlag = Flag.Int("port").pipe(
  Flag.withDescription("TCP port on 127.0.0.1 (default 0: any free port; the URL printed says which)."),
  Flag.filter((n) => n >= 0 && n <= 65_535, (n) => `--port must be from 0 to 65535, got ${n}`),
  Flag.optional
)

const stuckAfterFlag = Flag.String("stuck-after").pipe(
  Flag.withDescription("Show an ask open this long as stuck: a duration (30s, 2m, 90000). Default 30s."),
  Flag.filterMap(
    (text) => Option.fromUndefinedOr(parseTimeout(text)),
    (text) => `--stuck-after must be a positive duration such as 30s or 2m; got ${JSON.stringify(text)}`
  ),
  Flag.optional
)

/** `intercom ui`. */
export const uiCommand = Command.make("ui", { dir: dirFlag, port: portFlag, stuckAfter: stuckAfterFlag }, (input) =>
  Effect.gen(function*() {
    // A --dir that is a file, or a file in the intercom dir's place: said as the client commands say it.
    const paths = yield* checkedProcessPaths(Option.getOrUndefined(input.dir))
    const ui = yield* Effect.promise(() => import("../../ui/runUi.ts"))
    return yield* ui.runUi({
      socketPath: paths.socketPath,
      port: Option.getOrElse(input.port, () => 0),
      stuckAfterMs: Option.getOrElse(input.stuckAfter, () => ui.DEFAULT_STUCK_AFTER_MS),
      intervalMs: ui.DEFAULT_UI_INTERVAL_MS
    }, printOrQuit, Console.error).pipe(Effect.catchTag("UiServeError", reportError))
  })).pipe(
    Command.withShortDescription("Serve a live web view of the broker on 127.0.0.1 (prints its URL)"),
    Command.withDescription(
      "Serve a live web view of the broker on 127.0.0.1: sessions, queues, open and stuck asks, refusals, and a sequence chart of recent traffic. Prints a URL with a random token; requests without it, or from another origin, are refused. Runs until Ctrl-C."
    )
  )
