/**
 * examples/two-sessions.ts runs as documented (`node examples/two-sessions.ts`
 * after `npm run build`), prints the reply, exits 0, and leaves no broker
 * and no agent dir behind — so the example cannot rot.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Schedule } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { tempDir } from "../support/broker.ts"
import { brokerProcesses, childEnv, eventually, isAlive, spawnNode } from "./support.ts"

const ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** Broker processes whose agent dir lies under `parent`. */
const brokersUnder = (parent: string) =>
  fs.readdirSync(parent).flatMap((entry) => brokerProcesses(path.join(parent, entry)))

describe("examples/two-sessions.ts", () => {
  it.live("runs: two sessions, an ask and its reply, a clean shutdown", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir("eix-")
      const example = yield* spawnNode(["examples/two-sessions.ts"], {
        cwd: ROOT,
        env: { ...childEnv(), INTERCOM_EXAMPLE_DIR: parent }
      })
      // While it runs, its broker lives under `parent`: remember it to check it is gone afterwards.
      // Watched from the start: the whole example can finish within one poll of its stdout.
      const seen = new Set<number>()
      const watcher = yield* Effect.forkScoped(
        Effect.sync(() => brokersUnder(parent).forEach((pid) => seen.add(pid))).pipe(
          Effect.repeat(Schedule.spaced("20 millis"))
        )
      )
      yield* example.waitStdout(/\*\*Current session:\*\*/)
      yield* Fiber.interrupt(watcher)
      const brokers = [...seen]
      assert.strictEqual(brokers.length, 1, "one broker spawned for the example's agent dir")
      assert.strictEqual(yield* example.waitExit("20 seconds"), 0, example.stderr())
      assert.strictEqual(example.stderr(), "")
      const lines = example.stdout().trimEnd().split("\n")
      assert.match(lines[0] ?? "", /^\*\*Current session:\*\*$/)
      assert.match(lines[1] ?? "", /^• planner \([0-9a-f]{8}\) — .* \(example-model\) \[self, idle\]$/)
      assert.match(lines[4] ?? "", /^• reviewer \([0-9a-f]{8}\) — .* \(example-model\) \[same cwd, idle\]$/)
      assert.deepStrictEqual(lines.slice(5), [
        "reviewer received (trigger): Is the retry logic safe?",
        "**Reply from reviewer:**",
        "Yes: every retry reuses the message id, so the broker de-duplicates it."
      ])
      yield* eventually("the example's broker to exit", () => brokers.every((pid) => !isAlive(pid)))
      assert.deepStrictEqual(fs.readdirSync(parent), [], "the agent dir was removed")
    }), { timeout: 30_000 })
})
