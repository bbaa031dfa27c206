/**
 * `intercom broker --topic-entries` (`topics-v1`): the broker keeps at most
 * that many topic records and subscriptions per group, and its refusal names
 * the flag; a value that is not a positive integer is a usage error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { TOPICS_V1 } from "../../src/protocol/features.ts"
import { register } from "../support/broker.ts"
import { connect } from "../support/wire.ts"
import { cleanEnv, runCli, startBroker, tempDir } from "./support.ts"

describe("intercom broker --topic-entries", () => {
  it.live("past the flag's bound a subscription is refused, and the refusal names the flag", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      const socketPath = path.join(agentDir, "intercom", "broker.sock")
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--topic-entries", "1"], cleanEnv(root))
      const a = yield* connect(socketPath, "a")
      yield* register(a, { sessionId: "a", name: "a", frame: { features: [TOPICS_V1] } })
      yield* a.send({ type: "topic_subscribe", requestId: "s1", topic: "one" })
      yield* a.next("topic_subscribed", (frame) => frame.requestId === "s1")
      yield* a.send({ type: "topic_subscribe", requestId: "s2", topic: "two" })
      const refused = yield* a.next("topic_failed", (frame) => frame.requestId === "s2")
      assert.match(refused.reason, /keeps 1 topic records and subscriptions.*intercom broker --topic-entries/)
    }), 30_000)

  it.live("a --topic-entries that is not a positive integer exits 2", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const result = yield* runCli(["broker", "--topic-entries", "0"], cleanEnv(root))
      assert.strictEqual(result.code, 2, result.stderr)
      assert.include(result.stderr, "--topic-entries must be a positive integer")
    }), 30_000)
})
