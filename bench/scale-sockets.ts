/**
 * Scale measurement over real sockets (issue 16, docs/performance.md "Scale"):
 * spawns a broker (or the raw relay), registers N idle sessions from this
 * process (`--concurrency` at once, scopes of `--scope-size`, or one scope),
 * and reports the registration time, the broker's RSS before and after, its
 * peak RSS (VmHWM) and RSS per session. The clients read and discard
 * whatever arrives, like an idle session's reader. `--snapshot` sends SIGUSR2
 * at the end (start the broker with `--heapsnapshot-signal=SIGUSR2`).
 * `--memory` splits the broker's RSS at the end (/proc's smaps_rollup, and
 * the JS heap when the broker runs `--import bench/memory-probe.ts`).
 *
 *   node bench/scale-sockets.ts --cmd "node dist/bin/intercom.mjs broker --dir {dir} --durability memory" \
 *     --sessions 10000 --scope-size 100
 *
 * One process holds at most `ulimit -n` descriptors, the broker as well as
 * this script: past it, use the in-process measurement (scale-inprocess.ts).
 */
import { spawn } from "node:child_process"
import fs from "node:fs"
import net from "node:net"
import path from "node:path"
import { encodeFrame } from "./framing.ts"

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback
}
const sessions = Number(arg("sessions", "1000"))
const scopeSize = Number(arg("scope-size", String(sessions)))
const concurrency = Number(arg("concurrency", "32"))
const template = arg("cmd", `node ${path.resolve("dist/bin/intercom.mjs")} broker --dir {dir} --durability memory`)
const snapshot = process.argv.includes("--snapshot")
const memory = process.argv.includes("--memory")

const dir = fs.mkdtempSync("/tmp/scale-")
const sock = path.join(dir, "intercom", "broker.sock")
fs.mkdirSync(path.join(dir, "intercom"), { recursive: true, mode: 0o700 })
const argv = template.trim().split(/\s+/).map((tok, i) =>
  i === 0 && tok === "node" ? process.execPath : tok.replaceAll("{dir}", dir).replaceAll("{sock}", sock)
)
const probeOut = path.join(dir, "memory-probe.json")
const child = spawn(argv[0]!, argv.slice(1), {
  stdio: ["ignore", "pipe", "ignore"],
  env: { ...process.env, MEMORY_PROBE_OUT: probeOut }
})
const brokerOut = arg("broker-out", "")
if (brokerOut === "") child.stdout.resume()
else child.stdout.pipe(fs.createWriteStream(brokerOut))

const status = (field: string): number => {
  const text = fs.readFileSync(`/proc/${child.pid}/status`, "utf8")
  const line = text.split("\n").find((l) => l.startsWith(`${field}:`))
  return line === undefined ? Number.NaN : Number(line.split(/\s+/)[1])
}
const cpuMs = (): number => {
  const fields = fs.readFileSync(`/proc/${child.pid}/stat`, "utf8").split(") ")[1]!.split(" ")
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const waitForSocket = async (): Promise<void> => {
  for (let i = 0; i < 500; i++) {
    if (fs.existsSync(sock)) return
    await sleep(20)
  }
  throw new Error("broker did not listen")
}

const sockets: Array<net.Socket> = []
let bytesIn = 0

const register = (i: number): Promise<void> =>
  new Promise((resolve, reject) => {
    const socket = net.createConnection({ path: sock })
    sockets.push(socket)
    const scopeId = scopeSize < sessions ? `g${Math.floor(i / scopeSize)}` : undefined
    let registered = false
    socket.on("error", (e) => (registered ? undefined : reject(e)))
    socket.on("data", (chunk: Buffer) => {
      bytesIn += chunk.length
      if (!registered && chunk.includes(`"type":"registered"`)) {
        registered = true
        resolve()
      }
    })
    socket.on("connect", () => {
      socket.write(encodeFrame({
        type: "register",
        protocolVersion: 1,
        sessionId: `idle-${i}`,
        ...(scopeId === undefined ? {} : { scopeId }),
        session: { name: `idle-${i}`, cwd: "/tmp", model: "bench", pid: process.pid, startedAt: 1, lastActivity: 1 }
      }))
    })
  })

const main = async () => {
  await waitForSocket()
  await sleep(1000)
  const rssBefore = status("VmRSS")
  const cpuBefore = cpuMs()
  let next = 0
  const t0 = performance.now()
  const marks: Array<string> = []
  const worker = async () => {
    while (next < sessions) {
      const i = next++
      await register(i)
      if ((i + 1) % Math.max(1, Math.floor(sessions / 10)) === 0) {
        marks.push(`${i + 1}@${Math.round(performance.now() - t0)}ms`)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, sessions) }, worker))
  const registerMs = performance.now() - t0
  const cpuReg = cpuMs() - cpuBefore
  // Settle: until the broker's CPU stops moving (membership frames drained).
  for (let last = cpuMs(), i = 0; i < 120; i++) {
    await sleep(500)
    const now = cpuMs()
    if (now === last) break
    last = now
  }
  if (global.gc !== undefined) global.gc()
  await sleep(500)
  const rssAfter = status("VmRSS")
  const peak = status("VmHWM")
  const result = {
    sessions,
    scopeSize,
    registerMs: Math.round(registerMs),
    registerCpuMs: cpuReg,
    marks: marks.join(" "),
    rssBeforeMiB: +(rssBefore / 1024).toFixed(1),
    rssAfterMiB: +(rssAfter / 1024).toFixed(1),
    peakRssMiB: +(peak / 1024).toFixed(1),
    kibPerSession: +((rssAfter - rssBefore) / sessions).toFixed(2),
    clientMiBIn: +(bytesIn / 1048576).toFixed(1)
  }
  console.log(JSON.stringify(result))
  if (memory) {
    // KiB fields of smaps_rollup, then the probe's JS heap figures (bytes).
    const rollup = Object.fromEntries(fs.readFileSync(`/proc/${child.pid}/smaps_rollup`, "utf8").split("\n")
      .map((l) => l.match(/^(\w+):\s+(\d+) kB/)).filter((m) => m !== null).map((m) => [m[1], Number(m[2])]))
    child.kill("SIGWINCH")
    await sleep(2000)
    const probe = fs.existsSync(probeOut) ? JSON.parse(fs.readFileSync(probeOut, "utf8")) : undefined
    console.log(JSON.stringify({ rollup, probe }))
  }
  if (snapshot) {
    child.kill("SIGUSR2")
    await sleep(Number(arg("snapshot-wait", "15000")))
  }
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 1
}).finally(async () => {
  // SIGTERM first, so a `--cpu-prof` broker writes its profile; the clients go after it has exited.
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill("SIGTERM")
  await Promise.race([exited, sleep(10_000)])
  child.kill("SIGKILL")
  for (const s of sockets) s.destroy()
  fs.rmSync(dir, { recursive: true, force: true })
})
