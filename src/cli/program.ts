/**
 * The full `intercom` program: every command line goes through effect/cli
 * here (help, errors, exit codes), except a well-formed `intercom broker`,
 * which main.ts runs through the lean brokerEntry.ts instead.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as CliOutput from "effect/cli/CliOutput"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import { packageInfo } from "../config/install.ts"
import { intercom } from "./commands.ts"
import { hangupAsTerminate } from "./exit.ts"
import { programTeardown } from "./programExit.ts"
import { usagePresenter } from "./usagePresenter.ts"
import { loggingLayer } from "./logging.ts"

/** Runs the command line in `process.argv` as this process's main program. */
export const runCliProcess = (): void => {
  hangupAsTerminate()
  intercom.pipe(
    Command.run({ version: packageInfo()?.version ?? "unknown" }),
    // A command line that does not parse: help and errors on stderr, and the JSON object under --json.
    Effect.provide(CliOutput.layerPresenter(usagePresenter(process.argv))),
    Effect.provide(NodeServices.layer),
    // Telemetry is provided per command in commands.ts: intercom-broker for the broker, intercom-cli for the rest.
    Effect.provide(loggingLayer),
    NodeRuntime.runMain({ teardown: programTeardown })
  )
}
