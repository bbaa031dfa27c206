/**
 * `cli-send`: `intercom send <target> <text>` as a process against a running
 * target with a registered live recipient — the wall time from spawn() to the
 * process's close, median of N after one unmeasured send (page cache), with
 * `node -e 0` timed in the same rep as the floor under it. Every send must
 * exit 0 and reach the recipient.
 */
import { spawn } from "node:child_process"
import fs from "node:fs"
import path from "node:path"
import { connectAndRegister } from "./client.ts"
import { median, maxOf, minOf } from "./stats.ts"
import { benchEnv, repoRoot, type TargetSpec, trackChild } from "./targets.ts"
import { type RunResult, withInstance, withTimeout } from "./harness.ts"

/** The executable package.json's `bin` names (the bundle). */
export const cliBin = (): string => path.join(repoRoot, "dist", "bin", "intercom.mjs")

const RECIPIENT = "bench-recipient"

/**
 * Spawn → close of `argv`, ms; rejects on a non-zero exit (with its stderr),
 * or after `timeoutMs`, once the process, killed then, has closed: a hung
 * `intercom send` is not left running (nor, the target stopped, spawning a
 * broker of its own). The process is also killed by `cleanupAll` (Ctrl-C,
 * `--ci`'s watchdog).
 */
export const timedProcess = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<number> =>
  new Promise<number>((resolve, reject) => {
    const [file = "", ...args] = argv
    const what = argv.slice(1, 3).join(" ")
    const t0 = performance.now()
    const child = spawn(file, args, { env, stdio: ["ignore", "ignore", "pipe"] })
    trackChild(child)
    let stderr = ""
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGKILL")
    }, timeoutMs)
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      if (stderr.length < 4096) stderr += d
    })
    child.on("error", (e) => {
      clearTimeout(timer)
      reject(e)
    })
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      const ms = performance.now() - t0
      if (timedOut) reject(new Error(`${what}: timed out after ${timeoutMs} ms (pid ${child.pid ?? "?"}, killed)`))
      else if (code === 0) resolve(ms)
      else reject(new Error(`${argv.slice(1).join(" ")} exited ${signal ?? code}: ${stderr.trim().slice(-400)}`))
    })
  })

/** One `cli-send` run against a fresh instance of `spec`: `sends` measured sends (see the header). */
export const cliSendRun = (spec: TargetSpec, sends: number): Promise<RunResult> =>
  withInstance(spec, undefined, async (inst) => {
    const bin = cliBin()
    if (!fs.existsSync(bin)) throw new Error(`${bin} not found: run \`npm run build\``)
    const { client: recipient } = await connectAndRegister(inst.socketPath, RECIPIENT, { name: RECIPIENT })
    try {
      let received = 0
      let onReceived = (): void => {}
      recipient.onFrame = (frame) => {
        if (frame["type"] !== "message") return
        received++
        onReceived()
      }
      const env = benchEnv(inst.dir)
      const send = (i: number): Promise<number> => timedProcess([process.execPath, bin, "send", RECIPIENT, `cli-send ${i}`], env)
      await send(0)
      const sendMs: Array<number> = []
      const nodeMs: Array<number> = []
      for (let i = 1; i <= sends; i++) {
        nodeMs.push(await timedProcess([process.execPath, "-e", "0"], env))
        sendMs.push(await send(i))
      }
      // `send` returns once the target acknowledged; the recipient reads its copy independently.
      await withTimeout(
        new Promise<void>((resolve) => {
          onReceived = () => {
            if (received >= sends + 1) resolve()
          }
          onReceived()
        }),
        10_000,
        `the recipient receiving ${sends + 1} messages (has ${received})`
      )
      const over = sendMs.map((ms, i) => ms - (nodeMs[i] ?? Number.NaN))
      return {
        metrics: {
          sendMs: median(sendMs),
          sendMinMs: minOf(sendMs),
          sendMaxMs: maxOf(sendMs),
          nodeMs: median(nodeMs),
          sendOverNodeMs: median(over)
        },
        notes: []
      }
    } finally {
      recipient.close()
    }
  })
