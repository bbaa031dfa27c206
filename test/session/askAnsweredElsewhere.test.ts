/**
 * `reply-elsewhere-v1` in the session: the broker's word that a question
 * this session sent again was answered, its reply handed for good to another
 * client instance of the session (`ask_answered_elsewhere`, handed on as the
 * `AnsweredElsewhere` event of `IntercomClient.controls`), ends the ask now
 * with `AskAnsweredElsewhere` — its message naming whom the question went
 * to and the reply, and saying to ask again — rather than at its timeout;
 * the word about another question leaves the wait alone.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { settle, withPeers } from "./support.ts"

describe("an ask the broker says was answered to another instance of the session (reply-elsewhere-v1)", () => {
  it.effect("ends at once with AskAnsweredElsewhere naming the target and the reply and saying to ask again, and frees the wait", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which path?", timeoutMs: 600_000 }))
      yield* settle
      const question = client.sends[0]?.message
      if (question === undefined) return assert.fail("the question was not sent")
      yield* client.answerElsewhere("another-question", "r-0")
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the word about another question ended this wait")
      yield* client.answerElsewhere(question.id, "r-1")
      yield* settle
      if (asking.pollUnsafe() === undefined) return assert.fail("the ask still waits for a reply another instance has")
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.strictEqual(result.details["error"], "AskAnsweredElsewhere")
      assert.include(result.text, "reply r-1")
      assert.include(result.text, "Your question to B was answered")
      assert.include(result.text, "Ask again if you still need the answer")
      assert.isFalse(yield* session.waiting)
    }))
})
