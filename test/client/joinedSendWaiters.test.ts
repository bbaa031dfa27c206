/**
 * Callers of one send are counted (PendingSends `join`/`leave`, review revas
 * AS3): one caller that joined the client's re-send timing out does not
 * abandon it while another caller of the same send (C-BRK-8) still waits,
 * so the broker's answer, read after the first left, reaches the second.
 * Before the fix the first caller's timeout forgot the send, the answer
 * went to `sinks.lateAnswer`, and the second caller timed out on a
 * delivered message.
 *
 * A fake broker in memory under TestClock: the first connection ends as the
 * send is read (never answered); on the second the client writes the send
 * again, and the broker answers it only when the next frame comes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { message } from "../support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const SEND_TIMEOUT = 1_000

describe("a joined re-send one caller left while another still waits on it", () => {
  it.effect("the second caller of the same send gets the broker's answer read after the first caller timed out", () =>
    Effect.gen(function*() {
      const fake = yield* memoryFakeBroker({
        holdSendAnswers: true,
        detailedSendAnswers: true,
        dropOnSend: (connection) => connection === 1
      })
      const { client } = yield* makeClient(
        memoryClientOptions(fake, "sender-0000-0001", "sender", { sendTimeoutMs: SEND_TIMEOUT, reconnectBaseMs: 100, reconnectMaxMs: 100 })
      )
      yield* client.connect
      const request = { to: "peer", message: message("hello") }
      const first = yield* Effect.forkChild(Effect.exit(client.send(request)), { startImmediately: true })
      // Connection 1 ends on the send; the client reconnects and writes it again; the first caller joins that.
      yield* TestClock.adjust(500)
      // The same send again (C-BRK-8), joining the same re-send half a timeout later.
      const second = yield* Effect.forkChild(Effect.exit(client.send(request)), { startImmediately: true })
      yield* TestClock.adjust(SEND_TIMEOUT - 500 + 100)
      const firstExit = yield* Fiber.join(first)
      assert.isTrue(Exit.isFailure(firstExit), "the first caller was expected to time out")
      // The next frame lets the held answer out, within the second caller's timeout.
      yield* Effect.forkChild(Effect.exit(client.list), { startImmediately: true })
      yield* TestClock.adjust(100)
      yield* TestClock.adjust(SEND_TIMEOUT)
      const secondExit = yield* Fiber.join(second)
      assert.isTrue(
        Exit.isSuccess(secondExit),
        `the second caller, still waiting when the broker's answer was read, got: ${String(Exit.isFailure(secondExit) ? secondExit.cause : "")}`
      )
    }))
})
