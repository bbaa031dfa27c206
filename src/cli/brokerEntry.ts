/**
 * The fast path's program: `intercom broker` without effect/cli or
 * NodeServices (see argv.ts for when main.ts takes it). It runs the same
 * `runForeground` with the same logging and exit handling as the effect/cli
 * command in program.ts, so the broker behaves the same on both paths.
 * The bundle of this module (dist/bin/broker.cjs) is a CommonJS script that
 * brokerBundle.ts runs with its own code cache, so it imports nothing
 * dynamically.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import type { BrokerFlags } from "./argv.ts"
import { hangupAsTerminate, teardown } from "./exit.ts"
import { runForeground } from "./foreground.ts"
import { loggingLayer } from "./logging.ts"
import * as Telemetry from "../observability/Telemetry.ts"

/**
 * Runs the broker as this process's main program; the process exits when it
 * ends. `persistCodeCache` writes the bundle's code cache (brokerBundle.ts),
 * called by `runForeground` once the broker has run a while.
 */
export const runBrokerProcess = (flags: BrokerFlags, persistCodeCache?: () => void): void => {
  hangupAsTerminate()
  runForeground(flags, { persistCodeCache }).pipe(
    // OTLP export when OTEL_EXPORTER_OTLP_* say so (docs/observability.md); nothing is loaded otherwise.
    Effect.provide(Telemetry.layer("intercom-broker")),
    Effect.provide(loggingLayer),
    NodeRuntime.runMain({ teardown })
  )
}
