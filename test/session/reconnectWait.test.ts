/**
 * An ask whose broker went away (C-ASK-2, C-ASK-9): after a reconnect the
 * broker reached may be a new one that never knew the asked peer, so no
 * `session_left` for it ever comes. Once the rejoin grace is over, a wait on
 * a peer that broker does not list ends; one on a peer it lists keeps
 * waiting (a durable broker kept the ask, and the peer can answer).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { B, C, inboundMessage, REJOIN_GRACE_MS, SELF, settle, SUP, supervisorBridge, withPeers } from "./support.ts"

const bridge = supervisorBridge

describe("an ask across a reconnect (C-ASK-2, C-ASK-9)", () => {
  it.effect("ends once the rejoin grace is over when the broker reached again does not have the asked peer", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      assert.strictEqual(client.sends.length, 1, "the question went to B")
      // The broker stopped with B on it; the client registered with a new broker that never knew B.
      client.sessions = [SELF, C]
      yield* client.reconnect
      yield* settle
      yield* TestClock.adjust(REJOIN_GRACE_MS - 1)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "B may still register again within the grace")
      yield* TestClock.adjust(1)
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask ended without waiting for its timeout")
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual(
        [result.text, result.isError],
        [`Reply peer disconnected before answering: ${B.id} (not on the broker after a reconnect)`, true]
      )
    }))

  it.effect("keeps waiting when the asked peer is on the broker after the reconnect, and takes its reply", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      const question = client.sends[0]?.message.id ?? ""
      yield* client.reconnect
      yield* settle
      yield* TestClock.adjust(REJOIN_GRACE_MS)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "B is back: the wait goes on")
      yield* client.push(inboundMessage(B, "b-answer", "port 8080", { replyTo: question }))
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text.includes("port 8080"), result.isError], [true, false])
    }))

  it.effect("a later reconnect restarts the grace", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      client.sessions = [SELF, C]
      yield* client.reconnect
      yield* settle
      yield* TestClock.adjust(REJOIN_GRACE_MS / 2)
      yield* client.reconnect
      yield* settle
      yield* TestClock.adjust(REJOIN_GRACE_MS / 2)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the grace of the latest reconnect is not over")
      yield* TestClock.adjust(REJOIN_GRACE_MS / 2)
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask ended once that grace was over")
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
    }))

  it.effect("leaves a contact_supervisor wait alone: its supervisor may be in a group `list` does not show", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ childBridge: bridge })
      client.supervisorSessionId = SUP.id
      const contact = session.contactSupervisor
      if (contact === undefined) throw new Error("contact_supervisor is missing")
      const asking = yield* Effect.forkChild(contact({ reason: "need_decision", message: "Stable or experimental API?" }))
      yield* settle
      const question = client.supervisorSends[0]?.message.id ?? ""
      yield* client.reconnect
      yield* settle
      yield* TestClock.adjust(REJOIN_GRACE_MS)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the supervisor's absence from the list says nothing")
      yield* client.push(inboundMessage(SUP, "r-1", "Use the stable API.", { replyTo: question }))
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text, result.isError], ["Use the stable API.", false])
    }))
})
