/**
 * The bench scripts' command-line reading, shared by `bench/run.ts` and
 * `bench/profile-options.ts`: `--flag value` or `--flag=value`, integers in
 * a range, comma lists, and the target list. Each script keeps its own
 * switch of flags; this module only walks the argv and reads values.
 */
import { cleanupAll, TARGET_ORDER, type TargetName } from "./targets.ts"

/** One argument as a script's switch sees it. */
export interface Arg {
  /** The flag, without any `=value`. */
  readonly key: string
  /** The argument as given (for "unknown argument" messages). */
  readonly raw: string
  /** The flag's value: after `=`, else the next argument (consumed); throws with the usage when missing. */
  value(): string
  /** The value as an integer in lo..hi; throws naming the flag otherwise. */
  int(lo: number, hi: number): number
  /** The value as a comma-separated list, blanks dropped. */
  list(): Array<string>
}

/**
 * Calls `handle` for each argument of `argv` in order; a value read with
 * `Arg.value` is consumed, so the next call sees the argument after it.
 *
 * @example
 * eachArg(process.argv.slice(2), usage, (arg) => {
 *   if (arg.key === "--reps") reps = arg.int(1, 50)
 *   else throw new Error(`unknown argument ${arg.raw}\n${usage}`)
 * })
 */
export const eachArg = (argv: ReadonlyArray<string>, usage: string, handle: (arg: Arg) => void): void => {
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i] ?? ""
    const eq = raw.indexOf("=")
    const key = eq >= 0 ? raw.slice(0, eq) : raw
    const value = (): string => {
      if (eq >= 0) return raw.slice(eq + 1)
      const v = argv[++i]
      if (v === undefined) throw new Error(`${key} needs a value\n${usage}`)
      return v
    }
    handle({
      key,
      raw,
      value,
      int: (lo, hi) => {
        const n = Number(value())
        if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`${key} must be an integer in ${lo}..${hi}`)
        return n
      },
      list: () => value().split(",").map((s) => s.trim()).filter((s) => s !== "")
    })
  }
}

/** `--targets`' list as target names, in the order given, each once; throws on an unknown or empty list. */
export const parseTargets = (list: ReadonlyArray<string>): Array<TargetName> => {
  const out: Array<TargetName> = []
  for (const raw of list) {
    const t = TARGET_ORDER.find((name) => name === raw)
    if (t === undefined) throw new Error(`--targets: unknown target ${raw} (one of ${TARGET_ORDER.join(", ")})`)
    if (!out.includes(t)) out.push(t)
  }
  if (out.length === 0) throw new Error("--targets needs at least one target")
  return out
}

/**
 * The last case of a script's switch: `--help` or `-h` prints the usage and
 * exits 0; anything else is an unknown argument (thrown with the usage).
 */
export const helpOrUnknown = (arg: Arg, usage: string): never => {
  if (arg.key === "--help" || arg.key === "-h") {
    process.stdout.write(`${usage}\n`)
    process.exit(0)
  }
  throw new Error(`unknown argument ${arg.raw}\n${usage}`)
}

/**
 * Runs a bench script's `main` and exits with its code; a failure prints
 * `<name>: <message>` and exits 2. The processes it started are stopped
 * either way.
 */
export const runScript = (name: string, main: () => Promise<number>): void => {
  Promise.resolve()
    .then(main)
    .then(
      (code) => {
        cleanupAll()
        process.exit(code)
      },
      (e: unknown) => {
        process.stderr.write(`${name}: ${e instanceof Error ? e.message : String(e)}\n`)
        cleanupAll()
        process.exit(2)
      }
    )
}
