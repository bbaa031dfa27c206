/**
 * The workloads. Each run spawns a fresh instance of the target (new temp
 * dir), drives it from this process through `BenchClient`s, and stops it.
 * Every wait is bounded; a run that times out or sees a protocol error throws.
 * Opt-in workloads (`optIn`) run only when `--only` names them in full.
 *
 * Size: past 400 lines, because the sizes, the registry and the drivers they
 * share (transfer, idle registration) are kept together; workloads with
 * drivers of their own live in their own modules (cli-send, replace, scale,
 * topics, nats-workloads).
 */
import net from "node:net"
import { cliSendRun } from "./cli-send.ts"
import { BenchClient, connectAndRegister, type Frame } from "./client.ts"
import { natsAskRun, natsThroughputRun } from "./nats-workloads.ts"
import { replaceStormBody } from "./replace.ts"
import { encodeFrame, FrameSplitter, getRecord, getString, parsePayload } from "./framing.ts"
import { maxOf, median, minOf } from "./stats.ts"
import { ensureOpenFiles, stormRun } from "./scale.ts"
import { closeAll, makeText, type RunResult, runRoundTrips, settle, sleep, withInstance, withTimeout } from "./harness.ts"
import { cpuMicros, isBroker, type MeasureHooks, minorFaults, procStatusKiB, start, stop, type Instance, type TargetSpec } from "./targets.ts"
import { topicFanoutRun } from "./topics.ts"

/**
 * A message id as long as a UUID (36 characters), unique per (kind, sender, n), as real clients name
 * messages (src/session/Sending.ts). The bench's ids were once `run-<sender>-<n>`, 10 characters or fewer
 * for most of fan-in's: V8's `JSON.parse` interns a string value that short into old space, a cost per
 * message that real traffic does not pay and that fan-in paid more than w64 (docs/performance.md,
 * "Fan-in, thirty-sixth stop").
 */
export const benchMessageId = (kind: string, sender: number, n: number): string =>
  `${kind}-${String(sender).padStart(4, "0")}-${String(n).padStart(12, "0")}`.padEnd(36, "-")

export interface Sizes {
  readonly w1: number
  readonly w64: number
  readonly sustained: number
  readonly faninSenders: number
  readonly faninPerSender: number
  readonly faninWindow: number
  readonly askRounds: number
  readonly askWarmup: number
  readonly payloadWindow: number
  readonly payloads: ReadonlyArray<{ readonly label: string; readonly bytes: number; readonly count: number }>
  /**
   * Idle-session workloads. `scale`: the session cap is raised to `k + 10,000`
   * (`--max-sessions`), the open-file limit is checked (and raised when it can
   * be), and a refused registration ends the run with a note instead of failing it.
   */
  readonly idle: ReadonlyArray<{ readonly k: number; readonly scopeSize: number; readonly scale?: boolean }>
  readonly regConcurrency: number
  readonly listCount: number
  readonly startupSpawns: number
  /** Seconds of the replace storm (1,000 updates/s over 100 threads). */
  readonly stormSeconds: number
  /** Topic fan-out (`topics-v1`, broker only): subscribers and publications. */
  readonly topicSubscribers: number
  readonly topicPublications: number
  /** Sessions of the registration storm (`storm-1k`). */
  readonly stormSessions: number
  /** Measured `intercom send` processes per run (`cli-send`). */
  readonly cliSends: number
  /**
   * `w64-steady` and `fanin-steady` (opt-in): w64 and fan-in measured after a
   * long warm-up, so the compilers' one-time work is done before the
   * interval: messages sent unmeasured first, then measured (fan-in: split
   * over its senders).
   */
  readonly steadyWarm: number
  readonly steady: number
  /** `idle-10k-settled` (opt-in): seconds after registration (and the lists) at which RSS is read again. */
  readonly settledAtSeconds: ReadonlyArray<number>
}

export const defaultSizes: Sizes = {
  w1: 20_000,
  w64: 20_000,
  sustained: 100_000,
  faninSenders: 16,
  faninPerSender: 1_000,
  faninWindow: 16,
  askRounds: 2_000,
  askWarmup: 200,
  payloadWindow: 8,
  payloads: [
    { label: "100B", bytes: 100, count: 10_000 },
    { label: "10KiB", bytes: 10 * 1024, count: 4_000 },
    { label: "500KiB", bytes: 500 * 1024, count: 100 }
  ],
  idle: [
    { k: 1_000, scopeSize: 1_000 },
    { k: 10_000, scopeSize: 100 },
    { k: 50_000, scopeSize: 100, scale: true }
  ],
  regConcurrency: 32,
  listCount: 20,
  startupSpawns: 4,
  stormSeconds: 6,
  topicSubscribers: 1_000,
  topicPublications: 200,
  stormSessions: 1_000,
  cliSends: 10,
  steadyWarm: 200_000,
  steady: 100_000,
  settledAtSeconds: [5, 15, 30]
}

export const quickSizes: Sizes = {
  w1: 2_000,
  w64: 5_000,
  sustained: 20_000,
  faninSenders: 16,
  faninPerSender: 250,
  faninWindow: 16,
  askRounds: 300,
  askWarmup: 50,
  payloadWindow: 8,
  payloads: [
    { label: "100B", bytes: 100, count: 2_000 },
    { label: "10KiB", bytes: 10 * 1024, count: 500 },
    { label: "500KiB", bytes: 500 * 1024, count: 30 }
  ],
  idle: [
    { k: 200, scopeSize: 200 },
    { k: 2_000, scopeSize: 100 }
  ],
  regConcurrency: 32,
  listCount: 10,
  startupSpawns: 3,
  stormSeconds: 3,
  topicSubscribers: 200,
  topicPublications: 50,
  stormSessions: 1_000,
  cliSends: 3,
  steadyWarm: 20_000,
  steady: 20_000,
  settledAtSeconds: [2, 5]
}

export interface Workload {
  readonly name: string
  readonly title: string
  /** Spawns of the target per run are done by the workload itself (startup) or once. */
  readonly run: (spec: TargetSpec) => Promise<RunResult>
  /** The same measure against a NATS server, for the workloads that map onto publish/subscribe; others skip NATS. */
  readonly natsRun?: (spec: TargetSpec) => Promise<RunResult>
  /** Runs only against our broker (durable or memory): the others are skipped, not run. */
  readonly brokerOnly?: boolean
  /** Long-running, for one question: run only when named exactly (`--only`), never by default or by a prefix. */
  readonly optIn?: boolean
}

// ---------------------------------------------------------------- helpers

const failureText = (frame: Frame): string =>
  `${getString(frame, "code") ?? "?"} ${getString(frame, "reason") ?? JSON.stringify(frame).slice(0, 200)}`

// ---------------------------------------------------------------- transfer

interface TransferResult {
  readonly elapsedMs: number
  readonly cpuUs: number
  /** CPU used by this harness process over the same interval. */
  readonly harnessCpuUs: number
  /** Time and broker CPU at 0, ¼, ½, ¾ and all of the acks: shows a slowdown as state builds up. */
  readonly quarters: ReadonlyArray<{ readonly ms: number; readonly cpuUs: number }>
}

const selfCpuUs = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/**
 * `senders[i]` each send `perSender` messages to `receiver`, keeping at most
 * `window` unacknowledged sends in flight. Completes when every send is acked
 * (`delivered`) and the receiver has counted every `message`, checking that
 * each sender's messages arrive exactly once and in order. `hooks` (the
 * profiler's) are told where the transfer starts and ends.
 */
const transfer = (
  pid: number,
  senders: ReadonlyArray<BenchClient>,
  receiver: BenchClient,
  perSender: number,
  window: number,
  text: string,
  phase: string,
  timeoutMs: number,
  hooks?: MeasureHooks
): Promise<TransferResult> => {
  const to = receiver.sessionId ?? ""
  const expected = senders.length * perSender
  let received = 0
  let ackedTotal = 0
  const quarters: Array<{ ms: number; cpuUs: number }> = []
  let nextQuarter = 1
  const lastSeq = new Map<string, number>()
  return withTimeout(
    new Promise<TransferResult>((resolve, reject) => {
      let t0 = 0
      let cpu0 = 0
      let self0 = 0
      let done = false
      const finish = (): void => {
        if (done || received < expected || ackedTotal < expected) return
        done = true
        const elapsedMs = performance.now() - t0
        const cpuUs = cpuMicros(pid) - cpu0
        hooks?.end(pid, expected)
        quarters.push({ ms: elapsedMs, cpuUs })
        resolve({ elapsedMs, cpuUs, harnessCpuUs: selfCpuUs() - self0, quarters })
      }
      const fail = (e: Error): void => {
        if (done) return
        done = true
        reject(e)
      }
      receiver.onFrame = (frame) => {
        if (frame["type"] !== "message") return
        const from = getRecord(frame, "from")
        const message = getRecord(frame, "message")
        const fromId = from === undefined ? undefined : getString(from, "id")
        const seq = message?.["senderSequence"]
        if (fromId === undefined || typeof seq !== "number") {
          fail(new Error(`malformed message frame: ${JSON.stringify(frame).slice(0, 200)}`))
          return
        }
        const prev = lastSeq.get(fromId) ?? 0
        if (seq !== prev + 1) {
          fail(new Error(`${phase}: from ${fromId} got seq ${seq} after ${prev} (lost, duplicated or reordered)`))
          return
        }
        lastSeq.set(fromId, seq)
        received++
        finish()
      }
      receiver.closed.then((e) => fail(new Error(`receiver: ${e.message}`)), () => {})
      const starters = senders.map((sender, si) => {
        let sent = 0
        let acked = 0
        const sendNext = (): void => {
          sent++
          sender.send(to, benchMessageId(phase, si, sent), text, { senderSequence: sent })
        }
        sender.onFrame = (frame) => {
          const type = frame["type"]
          if (type === "delivered") {
            acked++
            ackedTotal++
            if (nextQuarter < 4 && ackedTotal * 4 >= expected * nextQuarter) {
              nextQuarter++
              quarters.push({ ms: performance.now() - t0, cpuUs: cpuMicros(pid) - cpu0 })
            }
            if (sent < perSender) sendNext()
            else if (acked === perSender) finish()
          } else if (type === "delivery_failed") {
            fail(new Error(`${phase}: delivery_failed ${failureText(frame)}`))
          }
        }
        sender.closed.then((e) => fail(new Error(`sender ${si}: ${e.message}`)), () => {})
        return sendNext
      })
      hooks?.begin(pid)
      t0 = performance.now()
      cpu0 = cpuMicros(pid)
      self0 = selfCpuUs()
      quarters.push({ ms: 0, cpuUs: 0 })
      senders.forEach((sender, si) => {
        const sendNext = starters[si]
        if (sendNext === undefined) return
        sender.socket.cork()
        for (let i = 0; i < Math.min(window, perSender); i++) sendNext()
        sender.socket.uncork()
      })
    }),
    timeoutMs,
    phase
  )
}

// ---------------------------------------------------------------- workloads

const throughputRun = async (
  spec: TargetSpec,
  nSenders: number,
  perSender: number,
  window: number,
  textBytes: number,
  warmTotal?: number
): Promise<RunResult> =>
  withInstance(spec, undefined, async (inst) => {
    const { client: rx } = await connectAndRegister(inst.socketPath, "bench-rx")
    const senders: Array<BenchClient> = []
    try {
      for (let i = 0; i < nSenders; i++) {
        senders.push((await connectAndRegister(inst.socketPath, `bench-tx-${i}`)).client)
      }
      const text = makeText(textBytes)
      const total = nSenders * perSender
      const warmPer = warmTotal !== undefined
        ? Math.max(1, Math.ceil(warmTotal / nSenders))
        : Math.max(1, Math.min(Math.ceil(perSender / 10), Math.ceil(2_000 / nSenders)))
      const timeoutMs = 30_000 + Math.max(total, warmPer * nSenders) * 2 + Math.ceil((total * textBytes) / 20_000)
      await transfer(inst.pid, senders, rx, warmPer, window, text, "warm", timeoutMs)
      const r = await transfer(inst.pid, senders, rx, perSender, window, text, "run", timeoutMs, spec.measure)
      const s = r.elapsedMs / 1000
      const q = r.quarters
      const quarter = (i: number): { rate: number; cpu: number } => {
        const a = q[i]
        const b = q[i + 1]
        if (a === undefined || b === undefined || b.ms <= a.ms) return { rate: Number.NaN, cpu: Number.NaN }
        return { rate: total / 4 / ((b.ms - a.ms) / 1000), cpu: (b.cpuUs - a.cpuUs) / (total / 4) }
      }
      return {
        metrics: {
          firstQuarterMsgPerSec: quarter(0).rate,
          lastQuarterMsgPerSec: quarter(3).rate,
          firstQuarterCpuUsPerMsg: quarter(0).cpu,
          lastQuarterCpuUsPerMsg: quarter(3).cpu,
          lastOverFirstQuarter: quarter(3).rate / quarter(0).rate,
          msgPerSec: total / s,
          mbPerSec: (total * textBytes) / s / 1e6,
          elapsedMs: r.elapsedMs,
          cpuUsPerMsg: r.cpuUs / total,
          harnessCpuUsPerMsg: r.harnessCpuUs / total,
          hwmKiB: procStatusKiB(inst.pid, "VmHWM")
        },
        notes: []
      }
    } finally {
      closeAll(senders)
      rx.close()
    }
  })

/** The timeout an `ask-granted` ask announces (`askTimeoutMs`): far longer than any round trip. */
const GRANTED_ASK_TIMEOUT_MS = 60_000

/**
 * Sequential ask → reply round trips. `granted` (`ask-granted`): both clients
 * also request `ask-timeout-v1` and each ask announces `askTimeoutMs`, as
 * IntercomClient does, so the broker writes the answerer the extended
 * `message` frame (with `askTimeoutMs`); without it the bench's clients get
 * the base frame, and the extended one's cost is not measured.
 */
const askRun = (spec: TargetSpec, rounds: number, warmup: number, granted = false): Promise<RunResult> =>
  withInstance(spec, undefined, async (inst) => {
    const features = granted ? { features: ["ask-timeout-v1"] } : {}
    const announced = granted ? { askTimeoutMs: GRANTED_ASK_TIMEOUT_MS } : undefined
    // The raw relay writes the message alone.
    const extended = granted && isBroker(spec)
    const { client: a } = await connectAndRegister(inst.socketPath, "bench-asker", features)
    const { client: b } = await connectAndRegister(inst.socketPath, "bench-answerer", features)
    try {
      const text = makeText(100)
      const aId = a.sessionId ?? ""
      const bId = b.sessionId ?? ""
      return await runRoundTrips(inst.pid, rounds, warmup, (trip) => {
        b.onFrame = (frame) => {
          const type = frame["type"]
          if (type === "message") {
            const msg = getRecord(frame, "message")
            const qid = msg === undefined ? undefined : getString(msg, "id")
            if (qid === undefined || msg?.["expectsReply"] !== true) {
              trip.fail(new Error(`answerer got an unexpected message: ${JSON.stringify(frame).slice(0, 200)}`))
              return
            }
            // A broker writes a granted answerer the extended frame: the workload measures it, or fails.
            if (extended && frame["askTimeoutMs"] !== GRANTED_ASK_TIMEOUT_MS) {
              trip.fail(new Error(`answerer got no askTimeoutMs: ${JSON.stringify(frame).slice(0, 200)}`))
              return
            }
            b.send(aId, `r-${qid}`, text, { replyTo: qid })
          } else if (type === "delivery_failed") {
            trip.fail(new Error(`reply: delivery_failed ${failureText(frame)}`))
          }
        }
        a.onFrame = (frame) => {
          const type = frame["type"]
          if (type === "message") {
            const msg = getRecord(frame, "message")
            if (msg === undefined || getString(msg, "replyTo") !== benchMessageId("q", 0, trip.round())) {
              trip.fail(new Error(`asker got an unexpected message: ${JSON.stringify(frame).slice(0, 200)}`))
              return
            }
            trip.answered()
          } else if (type === "delivery_failed") {
            trip.fail(new Error(`ask: delivery_failed ${failureText(frame)}`))
          }
        }
        a.closed.then((e) => trip.fail(new Error(`asker: ${e.message}`)), () => {})
        b.closed.then((e) => trip.fail(new Error(`answerer: ${e.message}`)), () => {})
        return (round) => a.send(bId, benchMessageId("q", 0, round), text, { expectsReply: true }, announced)
      }, spec.measure)
    } finally {
      a.close()
      b.close()
    }
  })

/** Whether a payload contains `needle` (bytes compared, no decoding). */
const payloadHas = (buf: Buffer, start: number, end: number, needle: Buffer): boolean => {
  const at = buf.indexOf(needle, start)
  return at >= 0 && at + needle.length <= end
}

/** Lists sent before the timed ones. */
const LIST_WARMUP = 3

/** Lists `listLatency` sends besides the timed ones: the warm-up, and the one parsed afterwards. */
const LIST_UNTIMED = LIST_WARMUP + 1

/**
 * Sequential `list` round trips from `client`, in µs. Replies are matched on
 * the raw bytes (`"type":"sessions"` and the quoted requestId) so the harness
 * does not JSON-parse a 300 KB reply inside the measured interval; one extra
 * list afterwards is parsed to report the session count and frame size.
 */
const listLatency = async (client: BenchClient, count: number): Promise<{ us: Array<number>; size: number; bytes: number }> => {
  const us: Array<number> = []
  const sessionsType = Buffer.from(`"type":"sessions"`)
  for (let i = -LIST_WARMUP; i < count; i++) {
    const requestId = `list-${i}`
    const idBytes = Buffer.from(`"requestId":${JSON.stringify(requestId)}`)
    const t0 = performance.now()
    const reply = client.waitForRaw(
      (buf, start, end) => payloadHas(buf, start, end, idBytes) && payloadHas(buf, start, end, sessionsType),
      10_000,
      "sessions reply"
    )
    client.write({ type: "list", requestId })
    await reply
    const dt = (performance.now() - t0) * 1000
    if (i >= 0) us.push(dt)
  }
  const reply = client.waitFor((f) => f["type"] === "sessions" && f["requestId"] === "list-last", 10_000, "sessions reply")
  client.write({ type: "list", requestId: "list-last" })
  const frame = await reply
  const sessions = frame["sessions"]
  return {
    us,
    size: Array.isArray(sessions) ? sessions.length : -1,
    bytes: Buffer.byteLength(JSON.stringify(frame))
  }
}

const idleRun = async (
  spec: TargetSpec,
  k: number,
  scopeSize: number,
  concurrency: number,
  listCount: number,
  scale: boolean,
  settledAt: ReadonlyArray<number> = []
): Promise<RunResult> => {
  // Closed only after the target is stopped, so it does not spend the stop
  // broadcasting K session_left frames.
  const idle: Array<BenchClient> = []
  try {
    if (!scale) return await idleBody(spec, k, scopeSize, concurrency, listCount, idle, 20_000, false, settledAt)
    const room = ensureOpenFiles(k)
    const r = await idleBody(spec, Math.min(k, room.sessions), scopeSize, concurrency, listCount, idle, k + 10_000, true)
    if (room.note !== undefined) r.notes.unshift(room.note)
    return r
  } finally {
    closeAll(idle)
  }
}

const idleBody = (
  spec: TargetSpec,
  k: number,
  scopeSize: number,
  concurrency: number,
  listCount: number,
  idle: Array<BenchClient>,
  maxSessions: number,
  tolerateRefusal: boolean,
  settledAt: ReadonlyArray<number> = []
): Promise<RunResult> =>
  withInstance(spec, maxSessions, async (inst) => {
    const scoped = scopeSize < k
    const scopeOf = (i: number): string | undefined => (scoped ? `g${Math.floor(i / scopeSize)}` : undefined)
    const lister0 = scopeOf(0)
    const { client: lister } = await connectAndRegister(
      inst.socketPath,
      "bench-lister",
      lister0 === undefined ? {} : { scopeId: lister0 }
    )
    try {
      await settle(inst.pid, 2000)
      const rssBefore = procStatusKiB(inst.pid, "VmRSS")
      let next = 0
      let retries = 0
      let refused: string | undefined
      const t0 = performance.now()
      const worker = async (): Promise<void> => {
        while (next < k) {
          const i = next++
          const scopeId = scopeOf(i)
          try {
            const r = await connectAndRegister(inst.socketPath, `idle-${i}`, scopeId === undefined ? {} : { scopeId })
            r.client.discard()
            retries += r.retries
            idle.push(r.client)
          } catch (e) {
            if (!tolerateRefusal) throw e
            // Report how far it got instead of failing: stop every worker.
            refused ??= `the target refused session ${(i + 1).toLocaleString("en-US")} (${
              e instanceof Error ? e.message.slice(0, 200) : String(e)
            }): measured with ${idle.length.toLocaleString("en-US")} sessions`
            next = k
          }
        }
      }
      await withTimeout(
        Promise.all(Array.from({ length: Math.min(concurrency, k) }, worker)).then(() => undefined),
        60_000 + k * 20,
        `registering ${k} sessions`
      )
      const registerMs = performance.now() - t0
      const held = idle.length
      await settle(inst.pid, 10_000)
      const rssAfter = procStatusKiB(inst.pid, "VmRSS")
      // The target's page faults during the lists: a young generation that grew in the
      // registrations is touched for the first time by the lists that follow, and on this
      // VM each fault costs about 20 µs (docs/performance.md, "The list at 10,000 idle
      // sessions, sixth stop"); the figure says whether a list p50 includes them.
      const faultsBefore = minorFaults(inst.pid)
      const lists = await listLatency(lister, listCount)
      const listFaults = minorFaults(inst.pid) - faultsBefore
      // Opt-in (idle-10k-settled): RSS again after the broker has sat idle, to see
      // whether V8's memory reducer gives the grown young generation back.
      const settled: Record<string, number> = {}
      const idleSince = performance.now()
      for (const seconds of settledAt) {
        const wait = seconds * 1000 - (performance.now() - idleSince)
        if (wait > 0) await sleep(wait)
        const rss = procStatusKiB(inst.pid, "VmRSS")
        settled[`rssSettled${seconds}sKiB`] = rss
        settled[`rssPerSessionSettled${seconds}sKiB`] = held === 0 ? Number.NaN : (rss - rssBefore) / held
      }
      const dropped = idle.filter((c) => c.isClosed).length
      const notes: Array<string> = []
      if (refused !== undefined) notes.push(refused)
      if (retries > 0) notes.push(`${retries} registrations retried (connection dropped before registered)`)
      if (dropped > 0) notes.push(`${dropped} idle sessions were disconnected by the target`)
      return {
        metrics: {
          sessions: held,
          registerMs,
          registerPerSec: held / (registerMs / 1000),
          rssBeforeKiB: rssBefore,
          rssAfterKiB: rssAfter,
          rssPerSessionKiB: held === 0 ? Number.NaN : (rssAfter - rssBefore) / held,
          listP50Us: median(lists.us),
          listMaxUs: maxOf(lists.us),
          listSize: lists.size,
          listFaultsPerList: listFaults / (lists.us.length + LIST_UNTIMED),
          listBytes: lists.bytes,
          retries,
          dropped,
          ...settled
        },
        notes
      }
    } finally {
      lister.close()
    }
  })

interface HealthAnswer {
  /** performance.now() when `health_ok` arrived. */
  readonly at: number
  /** CPU (utime + stime) the spawned process had used by then, µs; one-tick resolution. */
  readonly cpuUs: number
}

interface HealthPoll {
  readonly answered: Promise<HealthAnswer>
  readonly cancel: () => void
}

/**
 * Connect + health until it answers; polls every 2 ms until answered,
 * cancelled or past the deadline. `pid` is the spawned process, whose CPU is
 * read the moment the answer arrives (and `hooks`, the profiler's, told).
 */
const pollHealth = (socketPath: string, deadlineMs: number, pid: number | undefined, hooks?: MeasureHooks): HealthPoll => {
  let cancelled = false
  const answered = new Promise<HealthAnswer>((resolve, reject) => {
    const deadline = performance.now() + deadlineMs
    const attempt = (): void => {
      if (cancelled) {
        reject(new Error("health polling cancelled"))
        return
      }
      if (performance.now() > deadline) {
        reject(new Error("no health_ok before deadline"))
        return
      }
      const socket = net.createConnection({ path: socketPath })
      let finished = false
      const retry = (): void => {
        if (finished) return
        finished = true
        socket.destroy()
        setTimeout(attempt, 2)
      }
      const splitter = new FrameSplitter((buf, start, end) => {
        const f = parsePayload(buf, start, end)
        if (!finished && f !== undefined && f["type"] === "health_ok" && f["requestId"] === "startup") {
          finished = true
          const at = performance.now()
          const cpuUs = pid === undefined ? Number.NaN : cpuMicros(pid)
          if (pid !== undefined) hooks?.end(pid, 1)
          socket.destroy()
          resolve({ at, cpuUs })
        }
      })
      socket.on("error", retry)
      socket.on("close", retry)
      socket.on("connect", () => socket.write(encodeFrame({ type: "health", requestId: "startup" })))
      socket.on("data", (chunk: Buffer) => {
        splitter.push(chunk)
      })
    }
    attempt()
  })
  answered.catch(() => {}) // observed by the caller when it matters; never an unhandled rejection
  return { answered, cancel: () => void (cancelled = true) }
}

const startupRun = async (spec: TargetSpec, spawns: number): Promise<RunResult> => {
  const health: Array<number> = []
  const healthCpu: Array<number> = []
  const ready: Array<number> = []
  const rss: Array<number> = []
  const term: Array<number> = []
  const notes: Array<string> = []
  for (let i = 0; i < spawns; i++) {
    let poll: HealthPoll | undefined
    let t0 = 0
    let inst: Instance
    try {
      inst = await start(spec, {
        onSpawned: (socketPath, at, pid) => {
          t0 = at
          if (pid !== undefined) spec.measure?.begin(pid)
          poll = pollHealth(socketPath, 10_000, pid, spec.measure)
        }
      })
    } catch (e) {
      poll?.cancel()
      throw e
    }
    try {
      if (poll === undefined) throw new Error("spawn hook did not run")
      const answer = await poll.answered
      health.push(answer.at - t0)
      healthCpu.push(answer.cpuUs / 1000)
      ready.push(inst.readyMs)
      await sleep(50)
      rss.push(procStatusKiB(inst.pid, "VmRSS"))
    } finally {
      const s = await stop(inst)
      if (s.termMs === undefined) notes.push("did not exit within 3 s of SIGTERM (killed)")
      else term.push(s.termMs)
    }
  }
  return {
    metrics: {
      healthMs: median(health),
      healthMinMs: minOf(health),
      healthMaxMs: maxOf(health),
      healthCpuMs: median(healthCpu),
      readyLineMs: median(ready),
      idleRssKiB: median(rss),
      sigtermExitMs: median(term)
    },
    notes
  }
}

// ---------------------------------------------------------------- registry

/** A session count as workload names spell it: 50000 → `50k`, 200 → `200`. */
export const kLabel = (k: number): string => (k % 1000 === 0 ? `${k / 1000}k` : String(k))

export const workloads = (sizes: Sizes): Array<Workload> => [
  {
    name: "w1",
    title: `1→1 throughput, window 1 (${sizes.w1} × 100 B)`,
    run: (spec) => throughputRun(spec, 1, sizes.w1, 1, 100)
  },
  {
    name: "w64",
    title: `1→1 throughput, window 64 (${sizes.w64} × 100 B)`,
    run: (spec) => throughputRun(spec, 1, sizes.w64, 64, 100),
    natsRun: (spec) => natsThroughputRun(spec, 1, sizes.w64, 64, 100)
  },
  {
    name: "sustained",
    title: `1→1 window 64, ${sizes.sustained} × 100 B: first vs last quarter`,
    run: (spec) => throughputRun(spec, 1, sizes.sustained, 64, 100)
  },
  {
    name: "w64-steady",
    optIn: true,
    title: `1→1 window 64, ${sizes.steady} × 100 B measured after ${sizes.steadyWarm} unmeasured (steady state)`,
    run: (spec) => throughputRun(spec, 1, sizes.steady, 64, 100, sizes.steadyWarm)
  },
  {
    name: "fanin",
    title: `fan-in ${sizes.faninSenders}→1, window ${sizes.faninWindow} (${sizes.faninSenders} × ${sizes.faninPerSender})`,
    run: (spec) => throughputRun(spec, sizes.faninSenders, sizes.faninPerSender, sizes.faninWindow, 100),
    natsRun: (spec) => natsThroughputRun(spec, sizes.faninSenders, sizes.faninPerSender, sizes.faninWindow, 100)
  },
  {
    name: "fanin-steady",
    optIn: true,
    title: `fan-in ${sizes.faninSenders}→1, window ${sizes.faninWindow}, ${sizes.steady} × 100 B measured after ${sizes.steadyWarm} unmeasured (steady state)`,
    run: (spec) =>
      throughputRun(
        spec,
        sizes.faninSenders,
        Math.ceil(sizes.steady / sizes.faninSenders),
        sizes.faninWindow,
        100,
        sizes.steadyWarm
      )
  },
  {
    name: "ask",
    title: `ask round trip (${sizes.askRounds} rounds + ${sizes.askWarmup} warm-up)`,
    run: (spec) => askRun(spec, sizes.askRounds, sizes.askWarmup),
    natsRun: (spec) => natsAskRun(spec, sizes.askRounds, sizes.askWarmup)
  },
  {
    name: "ask-granted",
    optIn: true,
    title: `ask round trip, both clients granted ask-timeout-v1 and each ask announcing askTimeoutMs, as IntercomClient (${sizes.askRounds} rounds + ${sizes.askWarmup} warm-up)`,
    run: (spec) => askRun(spec, sizes.askRounds, sizes.askWarmup, true)
  },
  ...sizes.payloads.map((p): Workload => ({
    name: `payload-${p.label}`,
    title: `payload ${p.label}, 1→1 window ${sizes.payloadWindow} (${p.count} msgs)`,
    run: (spec) => throughputRun(spec, 1, p.count, sizes.payloadWindow, p.bytes)
  })),
  ...sizes.idle.map((c): Workload => ({
    name: `idle-${kLabel(c.k)}`,
    title: `${c.k} idle sessions (${c.scopeSize < c.k ? `scopes of ${c.scopeSize}` : "one scope"}, ${sizes.regConcurrency} registering at once)`,
    run: (spec) => idleRun(spec, c.k, c.scopeSize, sizes.regConcurrency, sizes.listCount, c.scale === true)
  })),
  ...sizes.idle.filter((c) => c.k === 10_000).map((c): Workload => ({
    name: `idle-${kLabel(c.k)}-settled`,
    optIn: true,
    title: `${c.k} idle sessions as idle-${kLabel(c.k)}, then RSS after ${sizes.settledAtSeconds.join(", ")} s idle`,
    run: (spec) => idleRun(spec, c.k, c.scopeSize, sizes.regConcurrency, sizes.listCount, false, sizes.settledAtSeconds)
  })),
  {
    name: `storm-${kLabel(sizes.stormSessions)}`,
    title: `registration storm: ${sizes.stormSessions} sessions in one scope, ${sizes.regConcurrency} registering at once; peak RSS`,
    run: (spec) => stormRun(spec, sizes.stormSessions, sizes.regConcurrency)
  },
  {
    name: "startup",
    title: `startup: spawn → health_ok (${sizes.startupSpawns} spawns per rep)`,
    run: (spec) => startupRun(spec, sizes.startupSpawns)
  },
  {
    name: "cli-send",
    title: `\`intercom send\` as a process, target running (${sizes.cliSends} sends per rep, median)`,
    brokerOnly: true,
    run: (spec) => cliSendRun(spec, sizes.cliSends)
  },
  {
    name: "replace-storm",
    brokerOnly: true,
    title: `replace coalescing: 1,000 updates/s over 100 threads for ${sizes.stormSeconds} s (delivery-v1)`,
    run: (spec) =>
      !isBroker(spec)
        ? Promise.resolve({ metrics: {}, notes: ["not applicable: the raw relay stages nothing"] })
        : withInstance(spec, undefined, (inst) =>
          replaceStormBody(inst, { threads: 100, ratePerSecond: 1000, seconds: sizes.stormSeconds }))
  },
  {
    name: "topic-fanout",
    brokerOnly: true,
    title: `topic fan-out: ${sizes.topicPublications} publications to ${sizes.topicSubscribers} subscribers, window 1 (topics-v1; broker only)`,
    run: (spec) => topicFanoutRun(spec, sizes.topicSubscribers, sizes.topicPublications)
  }
]

/**
 * The workloads `--only` selects: every one that is not opt-in when the list
 * is empty; otherwise those whose name starts with an entry ("payload",
 * "idle" select groups), and an opt-in one only when named in full, so that
 * `--only w64` does not also run `w64-steady`. An entry that selects nothing
 * (a typo such as `fanim`, or `idle-50k` at `--quick` sizes) throws, naming
 * it and the workloads there are, rather than being dropped in silence.
 */
export const selectWorkloads = (all: ReadonlyArray<Workload>, only: ReadonlyArray<string>): Array<Workload> => {
  if (only.length === 0) return all.filter((w) => w.optIn !== true)
  const selects = (w: Workload, entry: string): boolean => (w.optIn === true ? w.name === entry : w.name.startsWith(entry))
  const unknown = only.filter((entry) => !all.some((w) => selects(w, entry)))
  if (unknown.length > 0) {
    throw new Error(
      `--only: ${unknown.join(", ")} selects no workload (workloads at these sizes: ${all.map((w) => w.name).join(" ")})`
    )
  }
  return all.filter((w) => only.some((entry) => selects(w, entry)))
}
