/**
 * Topic fan-out (`topics-v1`): one publisher, `subscribers` sessions
 * subscribed to one topic; `publications` updates published one at a time
 * (window 1). For each, the time until the broker's `topic_published` answer
 * and until the last subscriber has the record; throughput counts records
 * delivered to subscribers per second. Broker only: the raw relay knows no
 * topics, and skips it.
 */
import type { BenchClient, Frame } from "./client.ts"
import { connectAndRegister } from "./client.ts"
import { getRecord } from "./framing.ts"
import { maxOf, median, percentileSorted, sortedCopy } from "./stats.ts"
import { isBroker, procStatusKiB, type TargetSpec } from "./targets.ts"
import { closeAll, makeText, type RunResult, settle, withInstance, withTimeout } from "./harness.ts"

const FEATURES = ["topics-v1"]
const TOPIC = "bench/topic"

const revisionOf = (frame: Frame): number | undefined => {
  const entry = getRecord(frame, "entry")
  const record = entry === undefined ? undefined : getRecord(entry, "record")
  const revision = record?.["revision"]
  return typeof revision === "number" ? revision : undefined
}

export const topicFanoutRun = async (spec: TargetSpec, subscribers: number, publications: number): Promise<RunResult> => {
  if (!isBroker(spec)) return { metrics: {}, notes: ["skipped: the raw relay has no topics"] }
  const subs: Array<BenchClient> = []
  try {
    return await withInstance(spec, subscribers + 16, async (inst) => {
      const { client: pub } = await connectAndRegister(inst.socketPath, "bench-publisher", { features: FEATURES })
      try {
        // Every subscriber notes when each revision reached it; `pending` counts who still waits for the current one.
        let current = 0
        let pending = 0
        let lastArrival = 0
        let onAllArrived: (() => void) | undefined
        const arrivals: Array<number> = []
        let next = 0
        const worker = async (): Promise<void> => {
          while (next < subscribers) {
            const i = next++
            const { client } = await connectAndRegister(inst.socketPath, `bench-sub-${i}`, { features: FEATURES })
            subs.push(client)
            const answered = client.waitFor((f) => f["type"] === "topic_subscribed", 10_000, "topic_subscribed")
            client.write({ type: "topic_subscribe", requestId: `s${i}`, topic: TOPIC })
            await answered
            client.onFrame = (frame) => {
              if (frame["type"] !== "topic_record" || revisionOf(frame) !== current) return
              const at = performance.now()
              arrivals.push(at)
              lastArrival = at
              pending--
              if (pending === 0) onAllArrived?.()
            }
          }
        }
        await withTimeout(
          Promise.all(Array.from({ length: Math.min(32, subscribers) }, worker)).then(() => undefined),
          60_000 + subscribers * 20,
          `subscribing ${subscribers} sessions`
        )
        await settle(inst.pid, 5_000)
        const text = makeText(200)
        const ackUs: Array<number> = []
        const fanoutUs: Array<number> = []
        const deliveryUs: Array<number> = []
        const t0 = performance.now()
        for (let revision = 1; revision <= publications; revision++) {
          current = revision
          pending = subscribers
          arrivals.length = 0
          const all = new Promise<void>((resolve) => {
            onAllArrived = resolve
          })
          const start = performance.now()
          const ack = pub.waitFor((f) => f["type"] === "topic_published" || f["type"] === "topic_failed", 10_000, "topic_published")
          pub.write({
            type: "topic_publish",
            requestId: `p${revision}`,
            record: { topic: TOPIC, text, event: "update", revision, updatedAt: Date.now() }
          })
          const answer = await ack
          if (answer["type"] !== "topic_published" || answer["accepted"] !== subscribers) {
            throw new Error(`publish ${revision}: ${JSON.stringify(answer).slice(0, 300)}`)
          }
          ackUs.push((performance.now() - start) * 1000)
          await withTimeout(all, 30_000, `revision ${revision} reaching ${subscribers} subscribers`)
          fanoutUs.push((lastArrival - start) * 1000)
          for (const at of arrivals) deliveryUs.push((at - start) * 1000)
        }
        const elapsedMs = performance.now() - t0
        const sortedDelivery = sortedCopy(deliveryUs)
        return {
          metrics: {
            deliveriesPerSec: (subscribers * publications) / (elapsedMs / 1000),
            publicationsPerSec: publications / (elapsedMs / 1000),
            ackP50Us: median(ackUs),
            fanoutP50Us: median(fanoutUs),
            fanoutMaxUs: maxOf(fanoutUs),
            deliveryP50Us: percentileSorted(sortedDelivery, 50),
            deliveryP99Us: percentileSorted(sortedDelivery, 99),
            elapsedMs,
            hwmKiB: procStatusKiB(inst.pid, "VmHWM")
          },
          notes: []
        }
      } finally {
        pub.close()
      }
    })
  } finally {
    closeAll(subs)
  }
}
