/**
 * The result archive from the command line (`results-v1`, C-WKR-11…14) as
 * real processes: a report stored by a client of the agent's broker is listed
 * by `intercom results` and paged by `intercom result <ref>` (text and
 * `--json`, in a session of its own and through a running watch); a run
 * handle is refused as an address.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { randomUUID } from "node:crypto"
import { makeClient, registrationOf } from "../client/support.ts"
import { get, jsonOf, makeAgent, runCli, startWatch } from "./support.ts"

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

describe("intercom results / result", () => {
  it.live("results lists a stored report; result pages it by UTF-16 offsets, in text and --json, and through a watch", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      yield* startWatch(agent, "keeper") // starts the broker and keeps it (and its archive, durable by default) running
      const { client } = yield* makeClient({
        agentDir: agent.agentDir,
        intercomDir: agent.intercomDir,
        socketPath: agent.socketPath,
        sessionId: randomUUID(),
        registration: registrationOf("worker"),
        launch: false
      })
      const body = "first😀second page"
      const receipt = yield* client.storeResult({ body, title: "Parser fix", run: "run-3" })

      const listed = yield* runCli(agent, ["results"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      assert.include(listed.stdout, "Result archive: durable (kept across broker restarts). 1 stored result visible")
      assert.include(listed.stdout, `- ${receipt.ref} "Parser fix", run run-3 — from worker (`)

      const first = yield* runCli(agent, ["result", receipt.ref, "--limit", "6"])
      assert.strictEqual(first.code, 0, first.stderr)
      assert.include(first.stdout, `${receipt.ref}: units 0–5 of ${body.length}; durable`)
      assert.include(first.stdout, "\n\nfirst\n\nMore: result with offset 5.\n")

      const rest = yield* runCli(agent, ["result", receipt.ref, "--offset", "5", "--json"])
      assert.strictEqual(rest.code, 0, rest.stderr)
      const json = jsonOf(rest)
      assert.strictEqual(get(json, "details", "page"), body.slice(5))
      assert.strictEqual(get(json, "details", "total"), body.length)
      assert.strictEqual(get(json, "details", "durable"), true)
      assert.isUndefined(get(json, "details", "nextOffset"))

      const viaWatch = yield* runCli(agent, ["result", "--name", "keeper", receipt.ref, "--offset", "7", "--limit", "3"])
      assert.strictEqual(viaWatch.code, 0, viaWatch.stderr)
      assert.include(viaWatch.stdout, "\n\nsec\n\nMore: result with offset 10.\n")

      // A run handle is a worker's live result (issue 14), never read as an archive address (C-WKR-2);
      // this CLI session supervises no workers.
      const runHandle = yield* runCli(agent, ["result", "run-3"])
      assert.strictEqual(runHandle.code, 1)
      assert.include(runHandle.stderr, "This session supervises no workers")
      assert.notInclude(runHandle.stdout, "units")
    }), TIMEOUT)
})
