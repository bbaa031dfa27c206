/**
 * `intercom broker --topic-entries` (`topics-v1`): the broker keeps at most
 * that many topic records and subscriptions per group, and its refusal names
 * the flag; a value that is not a positive integer is a usage error. The same
 * for the broker-wide bounds `--topic-records` and `--topic-bytes`: past them
 * the oldest record is forgotten.
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
      assert.include(result.stderr, "--topic-entries must be a whole number ≥ 1")
    }), 30_000)

  it.live("--topic-records bounds the records over all groups: past it the oldest is forgotten", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      const socketPath = path.join(agentDir, "intercom", "broker.sock")
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--topic-records", "1"], cleanEnv(root))
      const a = yield* connect(socketPath, "a")
      yield* register(a, { sessionId: "a", name: "a", frame: { features: [TOPICS_V1] } })
      for (const topic of ["one", "two"]) {
        yield* a.send({
          type: "topic_publish",
          requestId: topic,
          record: { topic, text: topic, event: "update", revision: 1, updatedAt: 1 }
        })
        yield* a.next("topic_published", (frame) => frame.requestId === topic)
      }
      yield* a.send({ type: "topic_query", requestId: "q" })
      const state = yield* a.next("topic_state", (frame) => frame.requestId === "q")
      assert.deepStrictEqual(state.entries.map((entry) => entry.record.topic), ["two"])
    }), 30_000)

  it.live("a --topic-records or --topic-bytes that is not a positive integer exits 2, naming the flag", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      for (const flag of ["--topic-records", "--topic-bytes"]) {
        const result = yield* runCli(["broker", flag, "0"], cleanEnv(root))
        assert.strictEqual(result.code, 2, result.stderr)
        assert.include(result.stderr, `${flag} must be a whole number ≥ 1`)
      }
    }), 30_000)
})
