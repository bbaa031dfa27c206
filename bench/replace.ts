/**
 * Replace coalescing under a storm (`delivery-v1`, C-DLV-5…8): one sender
 * sends 1,000 replace updates a second, round-robin over 100 threads, to one
 * recipient, for a few seconds. Measures what the recipient gets (each
 * thread's latest, once per coalescing window), that the broker's staging
 * stays bounded (no refusal at the cap, RSS), and how stale a delivered
 * update is when it arrives. The broker runs with its default 1500 ms window.
 */
import { connectAndRegister } from "./client.ts"
import { getRecord, getString } from "./framing.ts"
import { maxOf, percentileSorted, sortedCopy } from "./stats.ts"
import { cpuMicros, type Instance, procStatusKiB } from "./targets.ts"
import type { RunResult } from "./harness.ts"

/** The storm's shape. */
export interface StormSizes {
  readonly threads: number
  readonly ratePerSecond: number
  readonly seconds: number
}

const WINDOW_MS = 1500
const TICK_MS = 10

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs the storm against a started broker instance. */
export const replaceStormBody = async (inst: Instance, sizes: StormSizes): Promise<RunResult> => {
  const features = ["delivery-v1"]
  const { client: sender } = await connectAndRegister(inst.socketPath, "bench-storm-sender", { features })
  const { client: recipient } = await connectAndRegister(inst.socketPath, "bench-storm-recipient", { features })
  try {
    const to = recipient.sessionId ?? ""
    const sentAt = new Map<string, number>()
    const lastSent = new Array<string>(sizes.threads).fill("")
    const lastReceived = new Array<string>(sizes.threads).fill("")
    const staleness: Array<number> = []
    let queued = 0
    let refused = 0
    let superseded = 0
    let received = 0
    let duplicates = 0
    const seen = new Set<string>()
    sender.onFrame = (frame) => {
      const type = frame["type"]
      if (type === "delivery_queued") queued++
      else if (type === "delivery_failed") refused++
      else if (type === "message_receipt" && getRecord(frame, "receipt")?.["status"] === "superseded") superseded++
    }
    recipient.onFrame = (frame) => {
      if (frame["type"] !== "message") return
      const message = getRecord(frame, "message")
      const id = message === undefined ? undefined : getString(message, "id")
      const thread = Number(getString(frame, "threadId")?.slice(1) ?? "-1")
      if (id === undefined || thread < 0) return
      received++
      if (seen.has(id)) duplicates++
      seen.add(id)
      lastReceived[thread] = id
      const at = sentAt.get(id)
      if (at !== undefined) staleness.push(performance.now() - at)
    }
    const rssBefore = procStatusKiB(inst.pid, "VmRSS")
    const cpu0 = cpuMicros(inst.pid)
    const total = sizes.ratePerSecond * sizes.seconds
    const perTick = Math.max(1, Math.round(sizes.ratePerSecond * TICK_MS / 1000))
    const started = performance.now()
    let sent = 0
    let rssPeak = rssBefore
    while (sent < total) {
      // Paced against the start, so a late tick catches up instead of slowing the storm.
      const due = Math.min(total, Math.floor((performance.now() - started) / TICK_MS + 1) * perTick)
      for (; sent < due; sent++) {
        const thread = sent % sizes.threads
        const id = `u-${sent}`
        sentAt.set(id, performance.now())
        lastSent[thread] = id
        sender.writeText(
          `{"type":"send","to":${JSON.stringify(to)},"message":{"id":"${id}","timestamp":${Date.now()},"content":{"text":"progress ${sent}"}},"delivery":"queue","queueMode":"replace","threadId":"t${thread}"}`
        )
      }
      if (sent % 1000 < perTick) rssPeak = Math.max(rssPeak, procStatusKiB(inst.pid, "VmRSS"))
      await sleep(TICK_MS)
    }
    const stormMs = performance.now() - started
    // Every thread's last window closes at most WINDOW_MS after its last update.
    const deadline = performance.now() + WINDOW_MS + 10_000
    while (performance.now() < deadline && lastReceived.some((id, thread) => id !== lastSent[thread])) await sleep(50)
    await sleep(WINDOW_MS + 200) // nothing may come after the latest
    const cpuUs = cpuMicros(inst.pid) - cpu0
    const latest = lastReceived.filter((id, thread) => id === lastSent[thread]).length
    const sorted = sortedCopy(staleness)
    return {
      metrics: {
        sent,
        achievedRate: Math.round(sent / (stormMs / 1000)),
        queued,
        refused,
        superseded,
        delivered: received,
        duplicates,
        threadsEndingOnLatest: latest,
        stalenessP50Ms: percentileSorted(sorted, 50),
        stalenessP99Ms: percentileSorted(sorted, 99),
        stalenessMaxMs: maxOf(sorted),
        rssBeforeKiB: rssBefore,
        rssPeakKiB: rssPeak,
        rssAfterKiB: procStatusKiB(inst.pid, "VmRSS"),
        brokerCpuUsPerUpdate: cpuUs / Math.max(1, sent)
      },
      notes: latest === sizes.threads && refused === 0 && duplicates === 0
        ? []
        : [`${latest}/${sizes.threads} threads ended on their latest update; ${refused} refused; ${duplicates} duplicates`]
    }
  } finally {
    sender.close()
    recipient.close()
  }
}
