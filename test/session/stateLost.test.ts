/**
 * An ask whose broker lost its state (`state-epoch-v1`): after a reconnect to
 * a broker holding another state than the one the question was left in (a
 * memory-mode broker restarted), the asked peer may be back within the
 * rejoin grace, but the new broker never heard of the question and would
 * refuse the reply — the wait ends at once with `BrokerStateLost`, not at its
 * timeout. A question that state did not hold (the client does not list it)
 * keeps its wait; a plain reconnect (the same state, a durable restart) does
 * as before.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { B, inboundMessage, REJOIN_GRACE_MS, settle, SUP, supervisorBridge, withPeers } from "./support.ts"

const lostOf = (messageId: string, to: string) => ({
  previousEpoch: "epoch-1",
  stateEpoch: "epoch-2",
  asks: [{ messageId, to, delivery: "socket_delivered" as const }],
  queued: []
})

describe("an ask whose broker lost its state (state-epoch-v1)", () => {
  it.effect("ends at once with BrokerStateLost though the asked peer is back, without waiting for the grace or the timeout", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      const question = client.sends[0]?.message.id ?? ""
      // B registered again with the new broker (it is listed): only the epoch tells the state is gone.
      yield* client.reconnectLosingState(lostOf(question, "B"))
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the ask ended at the reconnect, no clock advanced")
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual(
        [result.text, result.isError],
        [`The broker restarted without its saved state; the question to B (${B.id}) was lost. Ask again.`, true]
      )
    }))

  it.effect("a reply read before the new connection still answers the ask", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      const question = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(B, "b-answer", "port 8080", { replyTo: question }))
      yield* client.reconnectLosingState(lostOf(question, "B"))
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text.includes("port 8080"), result.isError], [true, false])
    }))

  it.effect("a question the lost state did not hold (sent to the new broker) keeps waiting and takes its reply", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which port?" }))
      yield* settle
      const question = client.sends[0]?.message.id ?? ""
      yield* client.reconnectLosingState(lostOf("an-older-question", "B"))
      yield* settle
      yield* TestClock.adjust(REJOIN_GRACE_MS)
      yield* settle
      assert.isUndefined(asking.pollUnsafe(), "the new broker holds this question: the wait goes on")
      yield* client.push(inboundMessage(B, "b-answer", "port 8080", { replyTo: question }))
      const result = yield* Fiber.join(asking)
      assert.deepStrictEqual([result.text.includes("port 8080"), result.isError], [true, false])
    }))

  it.effect("a contact_supervisor wait on a lost question ends too", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ childBridge: supervisorBridge })
      client.supervisorSessionId = SUP.id
      const contact = session.contactSupervisor
      if (contact === undefined) throw new Error("contact_supervisor is missing")
      const asking = yield* Effect.forkChild(contact({ reason: "need_decision", message: "Stable or experimental API?" }))
      yield* settle
      const question = client.supervisorSends[0]?.message.id ?? ""
      yield* client.reconnectLosingState(lostOf(question, "supervisor"))
      yield* settle
      assert.isDefined(asking.pollUnsafe(), "the wait ended at the reconnect")
      const result = yield* Fiber.join(asking)
      assert.isTrue(result.isError)
      assert.include(result.text, "The broker restarted without its saved state")
    }))
})
