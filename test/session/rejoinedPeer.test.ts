/**
 * A peer's `Left` is acted on only once the messages read before it were
 * handled (`caughtUp`), so it can be acted on after the peer joined again and
 * the agent asked it afresh: that ask stands, since the rejoined peer has the
 * question (C-ASK-9). A peer not back (its `list` entry gone) still ends the wait.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { B, C, inboundMessage, SELF, settle, slowJournalSession } from "./support.ts"

/**
 * `slowJournalSession` after a message from C was read, so a `Left` read
 * after it waits for that save; B is asked after it left and joined again,
 * while the save still waits.
 */
const askedAfterRejoin = Effect.gen(function*() {
  const { client, gate, session } = yield* slowJournalSession
  yield* session.intercom({ action: "status" })
  yield* settle
  yield* client.push(inboundMessage(C, "c-1", "fyi"))
  yield* settle
  yield* client.presence({ _tag: "Left", sessionId: B.id })
  yield* client.presence({ _tag: "Joined", session: B })
  yield* settle
  const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
  yield* settle
  assert.strictEqual(client.sends.length, 1, "the question went to the rejoined B")
  return { asking, client, gate }
})

describe("a Left acted on after the peer joined again (C-ASK-9)", () => {
  it.effect("an ask made to the rejoined peer keeps waiting", () =>
    Effect.gen(function*() {
      const { asking, gate } = yield* askedAfterRejoin
      yield* Deferred.succeed(gate, undefined)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the ask still waits for B's answer")
      yield* Fiber.interrupt(asking)
    }))

  it.effect("a peer gone again by the list round trip ends the wait", () =>
    Effect.gen(function*() {
      const { asking, client, gate } = yield* askedAfterRejoin
      // B left again; the broker's list no longer names it (its second Left not read yet).
      client.sessions = [SELF, C]
      yield* Deferred.succeed(gate, undefined)
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.include(result.text, "disconnected")
    }))
})
