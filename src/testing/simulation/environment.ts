/**
 * The services a simulated world runs under: its own TestClock, Effect's
 * `Random` seeded from the run's seed, the fiber watch (as Effect's
 * `FiberRuntimeMetrics`), and a logger that puts warnings and worse into the
 * trace. Nothing in the world reads a real clock or `Math.random`.
 */
import { Layer, Logger, Metric, Random, References } from "effect"
import { TestClock } from "effect/testing"
import type { FiberWatch } from "../FiberWatch.ts"
import { Prng } from "../Prng.ts"

/** Where log lines go: the world's trace, once the world (and its ledger) exists. */
export interface LogSink {
  note: ((line: string) => void) | undefined
}

/** TestClock, seeded Random, the fiber watch, and logs to the trace (warnings and worse). */
export const simulationEnvironment = (seed: number, watch: FiberWatch, sink: LogSink) =>
  Layer.mergeAll(
    TestClock.layer({ warningDelay: "1 minute" }),
    Layer.succeed(Random.Random, new Prng(seed)),
    Layer.succeed(Metric.FiberRuntimeMetrics, watch.service),
    Layer.succeed(References.MinimumLogLevel, "Warn"),
    Logger.layer([
      Logger.make(({ logLevel, message }) => {
        const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
        sink.note?.(`   log ${logLevel}: ${text}`)
      })
    ])
  )
