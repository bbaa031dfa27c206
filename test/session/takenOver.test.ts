/**
 * An ask waiting when another process takes the session over (`taken_over`,
 * `takeover-v1`): the reply would go to that process now, so the wait ends at
 * once with the client's error — naming the process and how to take the
 * session back — instead of at the ask's timeout. No clock is advanced.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { IntercomNotConnected, takenOverReason } from "../../src/client/errors.ts"
import { settle, withPeers } from "./support.ts"

const HINT = "Run /intercom reconnect in this process to take it back."

const takenOver = new IntercomNotConnected({
  reason: takenOverReason({ sessionId: "self-id", pid: 4242 }, HINT),
  takenOver: { sessionId: "self-id", pid: 4242 }
})

describe("an ask waiting when the session is taken over", () => {
  it.effect("ends at once with the takeover error (the pid, how to take it back), not at its timeout", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      assert.strictEqual(client.sends.length, 1, "the question was not sent (the scenario changed)")
      assert.isUndefined(asking.pollUnsafe(), "the ask ended before the takeover")
      yield* client.takeOver(takenOver)
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask still waits after the takeover (no clock advanced)")
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.include(result.text, "taken over by another process (pid 4242)")
      assert.include(result.text, HINT)
    }))

  it.effect("a takeover with no ask waiting leaves the next ask to fail on its own", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.takeOver(takenOver)
      yield* settle
      const result = yield* session.intercom({ action: "ask", to: "B", message: "which port?" })
      assert.isTrue(result.isError)
      assert.include(result.text, "taken over by another process (pid 4242)")
      assert.strictEqual(client.sends.length, 0)
    }))
})
