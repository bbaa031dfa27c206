#!/usr/bin/env node
/**
 * The `intercom` executable (`bin` → dist/cli/main.js). Imports are deep
 * (`@effect/platform-node/NodeRuntime`, never the barrel) because a spawned
 * broker has to answer health checks quickly.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import * as Command from "effect/cli/Command"
import * as Effect from "effect/Effect"
import { readFileSync } from "node:fs"
import { intercom } from "./commands.ts"
import { teardown } from "./exit.ts"
import { loggingLayer } from "./logging.ts"

/** This package's version, for `--version` (dist/cli/main.js → package.json). */
const readVersion = (): string => {
  try {
    const pkg: unknown = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))
    return typeof pkg === "object" && pkg !== null && "version" in pkg && typeof pkg.version === "string"
      ? pkg.version
      : "unknown"
  } catch {
    return "unknown"
  }
}

intercom.pipe(
  Command.run({ version: readVersion() }),
  Effect.provide(NodeServices.layer),
  Effect.provide(loggingLayer),
  NodeRuntime.runMain({ teardown })
)
