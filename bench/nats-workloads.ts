/**
 * The workloads that map onto NATS publish/subscribe, run against a
 * `nats-server` as an outside reference (same metrics as ours, same /proc CPU):
 *
 * - throughput (`w64`, `fanin`): sender i publishes to `bench.rx.<i>`, the
 *   receiver subscribes to `bench.rx.*`. NATS has no delivery receipt, so the
 *   window is counted at the receiver: sender i may have at most `window`
 *   messages published and not yet received. Each payload starts with its
 *   per-sender sequence number, checked to arrive exactly once and in order.
 * - `ask`: the asker publishes to `bench.svc` with reply subject `bench.inbox`;
 *   the answerer answers each request on its reply subject.
 */
import { NatsClient } from "./nats-client.ts"
import { leadingSeq, type NatsMsg } from "./nats-protocol.ts"
import { cpuMicros, type Instance, procStatusKiB, start, stop, type TargetSpec } from "./targets.ts"
import { makeText, type RunResult, runRoundTrips, withTimeout } from "./harness.ts"

const selfCpuUs = (): number => {
  const u = process.cpuUsage()
  return u.user + u.system
}

/** Runs `body` against a fresh nats-server; always stops it. */
const withNats = async (spec: TargetSpec, body: (inst: Instance, port: number) => Promise<RunResult>): Promise<RunResult> => {
  const inst = await start(spec)
  try {
    if (inst.port === undefined) throw new Error("nats-server did not say which port it listens on")
    return await body(inst, inst.port)
  } finally {
    await stop(inst)
  }
}

interface Transfer {
  readonly elapsedMs: number
  readonly cpuUs: number
  readonly harnessCpuUs: number
}

const transfer = (
  pid: number,
  senders: ReadonlyArray<NatsClient>,
  receiver: NatsClient,
  perSender: number,
  window: number,
  text: string,
  phase: string,
  timeoutMs: number
): Promise<Transfer> => {
  const n = senders.length
  const sent = new Array<number>(n).fill(0)
  const received = new Array<number>(n).fill(0)
  const expected = n * perSender
  let total = 0
  const touched = new Set<NatsClient>()
  return withTimeout(
    new Promise<Transfer>((resolve, reject) => {
      let done = false
      const fail = (e: Error): void => {
        if (done) return
        done = true
        reject(e)
      }
      const sendNext = (si: number): void => {
        const sender = senders[si]
        if (sender === undefined) return
        const seq = (sent[si] ?? 0) + 1
        sent[si] = seq
        sender.pub(`bench.rx.${si}`, `${seq} ${text}`)
      }
      receiver.onMsg = (msg: NatsMsg) => {
        if (done) return
        const si = Number(msg.subject.slice(9))
        const seq = leadingSeq(msg.buf, msg.start, msg.end)
        const prev = received[si]
        if (prev === undefined || seq !== prev + 1) {
          fail(new Error(`${phase}: ${msg.subject} got seq ${seq} after ${prev} (lost, duplicated or reordered)`))
          return
        }
        received[si] = seq
        total++
        if ((sent[si] ?? 0) < perSender) {
          const sender = senders[si]
          if (sender !== undefined && !touched.has(sender)) {
            touched.add(sender)
            sender.socket.cork()
          }
          sendNext(si)
        }
        if (total === expected) {
          done = true
          resolve({ elapsedMs: performance.now() - t0, cpuUs: cpuMicros(pid) - cpu0, harnessCpuUs: selfCpuUs() - self0 })
        }
      }
      receiver.afterChunk = () => {
        for (const s of touched) s.socket.uncork()
        touched.clear()
      }
      receiver.closed.then((e) => fail(new Error(`receiver: ${e.message}`)), () => {})
      senders.forEach((s, si) => s.closed.then((e) => fail(new Error(`sender ${si}: ${e.message}`)), () => {}))
      const t0 = performance.now()
      const cpu0 = cpuMicros(pid)
      const self0 = selfCpuUs()
      senders.forEach((sender, si) => {
        sender.socket.cork()
        for (let i = 0; i < Math.min(window, perSender); i++) sendNext(si)
        sender.socket.uncork()
      })
    }),
    timeoutMs,
    phase
  )
}

/** `nSenders` × `perSender` messages of `textBytes` to one receiver, `window` in flight per sender. */
export const natsThroughputRun = (
  spec: TargetSpec,
  nSenders: number,
  perSender: number,
  window: number,
  textBytes: number
): Promise<RunResult> =>
  withNats(spec, async (inst, port) => {
    const rx = await NatsClient.connect(port, "bench-rx")
    const senders: Array<NatsClient> = []
    try {
      rx.sub("bench.rx.*", "1")
      await rx.flush()
      for (let i = 0; i < nSenders; i++) senders.push(await NatsClient.connect(port, `bench-tx-${i}`))
      const text = makeText(textBytes)
      const total = nSenders * perSender
      const warmPer = Math.max(1, Math.min(Math.ceil(perSender / 10), Math.ceil(2_000 / nSenders)))
      const timeoutMs = 30_000 + total * 2
      await transfer(inst.pid, senders, rx, warmPer, window, text, "warm", timeoutMs)
      const r = await transfer(inst.pid, senders, rx, perSender, window, text, "run", timeoutMs)
      return {
        metrics: {
          msgPerSec: total / (r.elapsedMs / 1000),
          elapsedMs: r.elapsedMs,
          cpuUsPerMsg: r.cpuUs / total,
          harnessCpuUsPerMsg: r.harnessCpuUs / total,
          hwmKiB: procStatusKiB(inst.pid, "VmHWM")
        },
        notes: []
      }
    } finally {
      for (const s of senders) s.close()
      rx.close()
    }
  })

/** Request/reply round trips over an inbox subject, one at a time, after `warmup` unmeasured ones. */
export const natsAskRun = (spec: TargetSpec, rounds: number, warmup: number): Promise<RunResult> =>
  withNats(spec, async (inst, port) => {
    const a = await NatsClient.connect(port, "bench-asker")
    const b = await NatsClient.connect(port, "bench-answerer")
    try {
      const text = makeText(100)
      b.sub("bench.svc", "1")
      a.sub("bench.inbox", "1")
      await b.flush()
      await a.flush()
      return await runRoundTrips(inst.pid, rounds, warmup, (trip) => {
        b.onMsg = (msg) => {
          if (msg.replyTo === undefined) {
            trip.fail(new Error("answerer got a request without a reply subject"))
            return
          }
          b.pub(msg.replyTo, `${leadingSeq(msg.buf, msg.start, msg.end)} ${text}`)
        }
        a.onMsg = (msg) => {
          if (leadingSeq(msg.buf, msg.start, msg.end) !== trip.round()) {
            trip.fail(new Error(`asker got an answer to another request (expected ${trip.round()})`))
            return
          }
          trip.answered()
        }
        a.closed.then((e) => trip.fail(new Error(`asker: ${e.message}`)), () => {})
        b.closed.then((e) => trip.fail(new Error(`answerer: ${e.message}`)), () => {})
        return (round) => a.pub("bench.svc", `${round} ${text}`, "bench.inbox")
      })
    } finally {
      a.close()
      b.close()
    }
  })
