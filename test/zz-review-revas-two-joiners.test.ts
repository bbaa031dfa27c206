/**
 * Review revas AS3 (probe, not a fix): ClientConnection `send` (merge lateb)
 * forgets the client's re-send when ONE caller that joined it times out
 * (`sends.forget(inFlight)`), though another caller may still wait on the
 * same answer (C-BRK-8: the same send twice shares one answer). The
 * broker's answer, read after the first caller left, then finds no waiting
 * send and goes to `sinks.lateAnswer`; the second caller, still within its
 * own timeout, never gets it and fails with `RequestTimeout` (the message
 * was delivered). Before lateb the entry stayed until answered.
 *
 * A fake broker in memory under TestClock: the first connection ends as the
 * send is read (never answered); on the second the client writes the send
 * again, and the broker answers it only when the next frame comes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { message } from "./support/broker.ts"
import { makeClient, memoryClientOptions, memoryFakeBroker } from "./client/support.ts"

const SEND_TIMEOUT = 1_000

describe("review revas AS3: a joined re-send forgotten while another caller still waits on it", () => {
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
