/**
 * The fast path's argv check. `intercom broker` is what every client spawns,
 * and it has to answer health within 150 ms; parsing it with effect/cli means
 * loading effect/cli first, which alone costs more than that budget. So
 * `main.ts` recognises the one well-formed shape
 *
 *   broker [--dir <dir>] [--max-sessions <n>] [--durability sqlite|memory] [--warm-up on|off] [<ignored-path>]   (any order)
 *
 * here, importing nothing but config/decimal.ts (itself import-free), and
 * hands everything else — status, stop, --help, bad or repeated flags, other
 * subcommands — to the effect/cli program, which stays the single authority
 * on help, errors and exit codes.
 *
 * The check errs towards the full program: an argv it accepts must mean the
 * same to effect/cli (`--dir` non-blank, `--max-sessions` a positive integer
 * in plain decimal, `--durability` and `--warm-up` one of their two values, each at most once,
 * values not starting with `-`), and the
 * ignored path must look like a path (`looksLikeBrokerScript`, which the
 * full program holds it to as well), so that it can never be a subcommand
 * name.
 */
import { parsePositiveDecimal } from "../config/decimal.ts"

/** The options of `intercom broker` (see commands.ts for their meaning). */
export interface BrokerFlags {
  readonly dir?: string | undefined
  readonly maxSessions?: number | undefined
  /** `--idle-exit`: milliseconds, `null` for never; the default (5 s) when absent. Full program only. */
  readonly idleExitMs?: number | null | undefined
  /** `--mailbox-retention`: milliseconds; the default (24 h) when absent. Full program only. */
  readonly mailboxRetentionMs?: number | undefined
  /** `--replace-window`: milliseconds; the default (1500 ms) when absent. Full program only. */
  readonly replaceWindowMs?: number | undefined
  /** `--topic-entries`: topic records and subscriptions per group; the default (4096) when absent. Full program only. */
  readonly topicEntriesPerGroup?: number | undefined
  /** `--topic-records`: topic records over all groups; the default (65,536) when absent. Full program only. */
  readonly topicRecords?: number | undefined
  /** `--topic-bytes`: about how many bytes of topic records over all groups; the default (64 MiB) when absent. Full program only. */
  readonly topicBytes?: number | undefined
  /** `--durability`: where the broker keeps its state; the config file's setting (default sqlite) when absent. */
  readonly durability?: "sqlite" | "memory" | undefined
  /** `--warm-up on|off`: whether the broker warms its own hot path once it listens (WarmUp.ts); off when absent. */
  readonly warmUp?: boolean | undefined
}

/**
 * Whether `arg` may be the ignored `<broker-script>` of `intercom broker`: it
 * contains `/` or ends in `.js`, `.mjs`, `.cjs` or `.ts`. Anything else could
 * be a mistyped subcommand (`stopp`), which must not start a broker; the fast
 * path and the full program (commands.ts) both hold the argument to this.
 */
export const looksLikeBrokerScript = (arg: string): boolean =>
  arg.includes("/") || /\.(?:m|c)?js$|\.ts$/.test(arg)

/**
 * `args` (argv without node and script) when it is exactly a well-formed
 * `broker` invocation, as flags; `undefined` for anything else.
 */
export const parseBrokerArgv = (args: ReadonlyArray<string>): BrokerFlags | undefined => {
  if (args[0] !== "broker") return undefined
  let dir: string | undefined
  let maxSessions: number | undefined
  let durability: "sqlite" | "memory" | undefined
  let warmUp: boolean | undefined
  let ignoredPath = false
  for (let i = 1; i < args.length; i++) {
    const arg = args[i] ?? ""
    if (arg === "--durability") {
      i++
      const value = args[i]
      if (durability !== undefined || (value !== "sqlite" && value !== "memory")) return undefined
      durability = value
    } else if (arg === "--warm-up") {
      i++
      const value = args[i]
      if (warmUp !== undefined || (value !== "on" && value !== "off")) return undefined
      warmUp = value === "on"
    } else if (arg === "--dir" || arg === "--max-sessions") {
      i++
      const value = args[i]
      if (value === undefined || value.startsWith("-")) return undefined
      if (arg === "--dir") {
        if (dir !== undefined || value.trim().length === 0) return undefined
        dir = value
      } else {
        const n = parsePositiveDecimal(value)
        if (maxSessions !== undefined || n === undefined) return undefined
        maxSessions = n
      }
    } else if (ignoredPath || arg.startsWith("-") || !looksLikeBrokerScript(arg)) {
      return undefined
    } else {
      ignoredPath = true
    }
  }
  return {
    dir,
    maxSessions,
    ...(durability === undefined ? {} : { durability }),
    ...(warmUp === undefined ? {} : { warmUp })
  }
}
