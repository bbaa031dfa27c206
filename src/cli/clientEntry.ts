/**
 * The `send` fast path's program: a well-formed `intercom send` (see
 * clientArgv.ts for when main.ts takes it) without effect/cli or
 * NodeServices. It runs the same `runAction` with the same logging,
 * telemetry and exit handling as the effect/cli command in program.ts, so
 * `send` behaves the same on both paths; only the parsing is skipped.
 *
 * A `--name` that the full command would refuse is handed back: main.ts
 * then runs the full program (program.ts), which prints its error and usage.
 * The bundle of this module (dist/bin/client.cjs) is a CommonJS script that
 * sendBundle.ts runs with its own code cache, so it imports nothing
 * dynamically.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Telemetry from "../observability/Telemetry.ts"
import { type SendArgv, sendToolParams } from "./clientArgv.ts"
import { nameProblem } from "./client/identity.ts"
import { runAction } from "./client/run.ts"
import { hangupAsTerminate, teardown } from "./exit.ts"
import { loggingLayer } from "./logging.ts"

/**
 * Runs `intercom send` as this process's main program (the process exits
 * when it ends) and returns `true`; returns `false` without running anything
 * when `--name` is one the full program must refuse.
 */
export const runSendProcess = (argv: SendArgv): boolean => {
  if (argv.name !== undefined && nameProblem(argv.name) !== undefined) return false
  const input = {
    name: Option.fromUndefinedOr(argv.name),
    json: argv.json,
    dir: Option.fromUndefinedOr(argv.dir),
    group: Option.fromUndefinedOr(argv.group)
  }
  hangupAsTerminate()
  runAction(input, sendToolParams(argv)).pipe(
    Effect.provide(NodeFileSystem.layer),
    // OTLP export when OTEL_EXPORTER_OTLP_* say so (docs/observability.md); nothing is loaded otherwise.
    Effect.provide(Telemetry.layer("intercom-cli")),
    Effect.provide(loggingLayer),
    NodeRuntime.runMain({ teardown })
  )
  return true
}
