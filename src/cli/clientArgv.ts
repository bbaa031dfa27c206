/**
 * The `send` fast path's argv check. `intercom send` is what scripts and
 * agents run most often, and the effect/cli program costs it 40–50 ms of
 * module loading and parsing before anything connects; so `main.ts`
 * recognises the plain shapes of `send` here, as argv.ts does for
 * `intercom broker`, and runs them through the lean clientEntry.ts:
 *
 *   send <to> <message...> [--name n] [--dir d] [--group g] [--json]
 *        [--delivery steer|queue|passive] [--queue-mode stack|replace] [--thread t]
 *
 * flags and words in any order, as effect/cli takes them. Imports nothing at
 * run time (main.ts loads it before choosing a path).
 *
 * The check errs towards the full program, which stays the single authority
 * on help, errors and exit codes: an argv accepted here must mean exactly
 * what it means to effect/cli. So anything starting with `-` other than the
 * flags above (`--help`, `--name=x`, `--`, `--log-level`, a message word
 * like `-v` or `-3`), a flag given twice or without a value, a value starting
 * with `-`, a blank `--dir`/`--group`, an unknown `--delivery`/`--queue-mode`
 * value, a `--json` followed by a word effect/cli would read as its boolean
 * value (`true`, `no`, `1`, …), or fewer than two words sends the command
 * line to the full program. The `--name` check (nameProblem, which needs
 * more than this module may load) is made by clientEntry.ts, which hands a
 * bad name to the full program too.
 */
import type { IntercomToolParams } from "../session/IntercomSession.ts"

/** `--delivery` values (`delivery-v1`). */
const DELIVERIES = ["steer", "queue", "passive"] as const
/** `--queue-mode` values (`delivery-v1`). */
const QUEUE_MODES = ["stack", "replace"] as const

/** The words effect/cli reads as a boolean flag's value when one follows the flag. */
const BOOLEAN_WORDS: ReadonlySet<string> = new Set(["true", "yes", "on", "1", "y", "false", "no", "off", "0", "n"])

/** A well-formed `intercom send` command line, as plain values. */
export interface SendArgv {
  readonly to: string
  /** The message words, joined with spaces into the message. */
  readonly words: ReadonlyArray<string>
  readonly name: string | undefined
  readonly json: boolean
  readonly dir: string | undefined
  readonly group: string | undefined
  readonly delivery: (typeof DELIVERIES)[number] | undefined
  readonly queueMode: (typeof QUEUE_MODES)[number] | undefined
  readonly thread: string | undefined
}

/** The flags of `send` that take a value. */
type ValueFlag = "--name" | "--dir" | "--group" | "--delivery" | "--queue-mode" | "--thread"

const isValueFlag = (arg: string): arg is ValueFlag =>
  arg === "--name" || arg === "--dir" || arg === "--group" || arg === "--delivery" || arg === "--queue-mode" ||
  arg === "--thread"

const oneOf = <const A extends string>(values: ReadonlyArray<A>, value: string | undefined): A | undefined =>
  values.find((candidate) => candidate === value)

/**
 * `args` (argv without node and script) when it is exactly a well-formed
 * `send` invocation (see the module header); `undefined` for anything else.
 *
 * @example
 * parseSendArgv(["send", "planner", "build", "done", "--json"])
 * // { to: "planner", words: ["build", "done"], json: true, … }
 * parseSendArgv(["send", "planner", "--help"]) // undefined: the full program answers
 */
export const parseSendArgv = (args: ReadonlyArray<string>): SendArgv | undefined => {
  if (args[0] !== "send") return undefined
  const values = new Map<ValueFlag, string>()
  const words: Array<string> = []
  let json = false
  for (let i = 1; i < args.length; i++) {
    const arg = args[i] ?? ""
    if (isValueFlag(arg)) {
      const value = args[++i]
      if (value === undefined || value.startsWith("-") || values.has(arg)) return undefined
      values.set(arg, value)
    } else if (arg === "--json") {
      const next = args[i + 1]
      if (json || (next !== undefined && BOOLEAN_WORDS.has(next))) return undefined
      json = true
    } else if (arg.startsWith("-")) {
      return undefined
    } else {
      words.push(arg)
    }
  }
  const [to, ...message] = words
  if (to === undefined || message.length === 0) return undefined
  const dir = values.get("--dir")
  const group = values.get("--group")
  if ((dir !== undefined && dir.trim() === "") || (group !== undefined && group.trim() === "")) return undefined
  const deliveryText = values.get("--delivery")
  const queueModeText = values.get("--queue-mode")
  const delivery = oneOf(DELIVERIES, deliveryText)
  const queueMode = oneOf(QUEUE_MODES, queueModeText)
  if ((deliveryText !== undefined && delivery === undefined) || (queueModeText !== undefined && queueMode === undefined)) {
    return undefined
  }
  return { to, words: message, name: values.get("--name"), json, dir, group, delivery, queueMode, thread: values.get("--thread") }
}

/**
 * The tool parameters of a `send` from its command-line values: the one
 * mapping both ways in use (the effect/cli command in client/commands.ts and
 * the fast path), so that they cannot drift apart. Absent flags leave their
 * parameter out.
 */
export const sendToolParams = (input: {
  readonly to: string
  readonly words: ReadonlyArray<string>
  readonly delivery: string | undefined
  readonly queueMode: string | undefined
  readonly thread: string | undefined
  readonly group: string | undefined
}): IntercomToolParams => ({
  action: "send",
  to: input.to,
  message: input.words.join(" "),
  ...(input.delivery === undefined ? {} : { delivery: input.delivery }),
  ...(input.queueMode === undefined ? {} : { queueMode: input.queueMode }),
  ...(input.thread === undefined ? {} : { threadId: input.thread }),
  ...(input.group === undefined ? {} : { group: input.group })
})
