/**
 * `intercom broker --replace-window` (`delivery-v1`): the broker's coalescing
 * window of replace messages is the flag's, as the `deliverAt` of a staged
 * message shows; a value that is no duration is a usage error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as path from "node:path"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message, register } from "../support/broker.ts"
import { connect } from "../support/wire.ts"
import { cleanEnv, runCli, startBroker, tempDir } from "./support.ts"

describe("intercom broker --replace-window", () => {
  it.live("a staged replace message is due a window of the flag's length after it was sent", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const agentDir = path.join(root, "agent")
      const socketPath = path.join(agentDir, "intercom", "broker.sock")
      yield* startBroker(["--dir", agentDir, "--idle-exit", "never", "--replace-window", "10m"], cleanEnv(root))
      const a = yield* connect(socketPath, "a")
      const b = yield* connect(socketPath, "b")
      yield* register(a, { sessionId: "a", name: "a", frame: { features: [DELIVERY_V1] } })
      yield* register(b, { sessionId: "b", name: "b", frame: { features: [DELIVERY_V1] } })
      const msg = message("progress")
      const sentAt = Date.now()
      yield* a.send({ type: "send", to: "b", message: msg, delivery: "queue", queueMode: "replace", threadId: "t" })
      const queued = yield* a.next("delivery_queued", (frame) => frame.messageId === msg.id)
      // 10 minutes, not the default 1.5 s (with a minute's slack for a slow machine).
      assert.isAbove(queued.deliverAt - sentAt, 9 * 60_000)
      assert.isBelow(queued.deliverAt - sentAt, 11 * 60_000)
    }), 30_000)

  it.live("a --replace-window that is no duration exits 2", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const result = yield* runCli(["broker", "--replace-window", "soon"], cleanEnv(root))
      assert.strictEqual(result.code, 2, result.stderr)
      assert.include(result.stderr, "--replace-window must be a positive duration")
    }), 30_000)
})
