/**
 * `pi` as a process (`pi --mode json`, or `--mode rpc` with commands on stdin) for the extension's black-box tests:
 * the faux provider scripted through PI_FAUX_SCRIPT (fixtures/fauxScript.ts),
 * a private agent dir, JSONL events read as they come, completion on the
 * child's `close` (both pipes drained). Waiting for an event is event-driven;
 * a child that closes without it fails the wait at once.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"
import { ROOT, WAIT_TOOL, type World } from "./support.ts"

export const PI_CLI = path.join(ROOT, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js")
export const FAUX = path.join(ROOT, "test", "pi", "fixtures", "fauxScript.ts")

/** One scripted model turn of a pi process. */
export type Step =
  | { readonly tool: string; readonly args: Record<string, unknown> }
  | { readonly text: string }
  /** Says `echo` followed by the text of the last tool result the model was sent. */
  | { readonly echo: string }

/** A JSONL record of pi's event stream. */
export type Record_ = { readonly type: string; readonly [key: string]: unknown }

export interface PiProcess {
  readonly child: ChildProcess
  readonly records: Array<Record_>
  /** Resolves on the first record (already seen or later) matching `predicate`. */
  readonly waitFor: (what: string, predicate: (record: Record_) => boolean) => Promise<Record_>
  /** Resolves when the process closed: its exit code and signal, stdout fully read. */
  readonly closed: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly stderr: () => string
  /** Writes one JSONL command to pi's stdin (`--mode rpc`). */
  readonly send: (command: Record<string, unknown>) => void
}

/** The text of a tool result record's content. */
export const resultText = (record: Record_): string => {
  const result = record["result"]
  const content: unknown = typeof result === "object" && result !== null ? Reflect.get(result, "content") : undefined
  return Array.isArray(content)
    ? content.map((part: unknown) =>
      typeof part === "object" && part !== null ? String(Reflect.get(part, "text") ?? "") : ""
    ).join("")
    : ""
}

/** Starts `pi --mode json` in `world` with `script`, the given extensions and arguments. */
export const runPi = (
  world: World,
  script: ReadonlyArray<Step>,
  args: ReadonlyArray<string>,
  options: {
    readonly extensions?: ReadonlyArray<string>
    readonly env?: Record<string, string>
    /** `rpc`: commands on stdin (`send`), until stdin ends. Default `json`. */
    readonly mode?: "json" | "rpc"
  } = {}
): PiProcess => {
  const extensions = options.extensions ?? []
  const mode = options.mode ?? "json"
  const child = spawn(process.execPath, [
    PI_CLI,
    "--mode",
    mode,
    "--provider",
    "faux",
    "--model",
    "faux-1",
    "--no-builtin-tools",
    "--no-skills",
    "--no-context-files",
    "-e",
    FAUX,
    "-e",
    WAIT_TOOL,
    ...extensions.flatMap((extension) => ["-e", extension]),
    ...args
  ], {
    cwd: world.cwd,
    env: {
      ...process.env,
      PI_CODING_AGENT_DIR: world.agentDir,
      PI_OFFLINE: "1",
      PI_SKIP_VERSION_CHECK: "1",
      PI_TELEMETRY: "0",
      PI_FAUX_SCRIPT: JSON.stringify(script),
      ...options.env
    },
    stdio: [mode === "rpc" ? "pipe" : "ignore", "pipe", "pipe"]
  })
  const records: Array<Record_> = []
  let waiters: Array<(record: Record_ | undefined) => boolean> = []
  let buffered = ""
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => void (stderr += chunk.toString("utf8")))
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8")
    let newline = buffered.indexOf("\n")
    while (newline >= 0) {
      const line = buffered.slice(0, newline).trim()
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf("\n")
      if (line === "") continue
      const parsed: unknown = JSON.parse(line)
      if (typeof parsed !== "object" || parsed === null || typeof Reflect.get(parsed, "type") !== "string") continue
      const record: Record_ = { type: String(Reflect.get(parsed, "type")), ...parsed }
      records.push(record)
      waiters = waiters.filter((waiter) => !waiter(record))
    }
  })
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      waiters.forEach((waiter) => waiter(undefined))
      waiters = []
      resolve({ code, signal })
    })
  )
  return {
    child,
    records,
    closed,
    stderr: () => stderr,
    send: (command) => void child.stdin?.write(`${JSON.stringify(command)}\n`),
    waitFor: (what, predicate) =>
      new Promise((resolve, reject) => {
        const seen = records.find(predicate)
        if (seen !== undefined) return resolve(seen)
        waiters.push((record) => {
          if (record === undefined) {
            reject(new Error(`pi closed before ${what}\n--- stderr:\n${stderr}\n--- records:\n${records.map((r) => r.type).join(" ")}`))
            return true
          }
          if (!predicate(record)) return false
          resolve(record)
          return true
        })
      })
  }
}

/** A `tool_execution_end` of `tool` (the n-th, counting from 1). */
export const toolEnd = (tool: string, nth = 1) => {
  let seen = 0
  return (record: Record_): boolean => record.type === "tool_execution_end" && record["toolName"] === tool && ++seen === nth
}
