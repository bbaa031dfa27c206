import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost, RequestTimeout, SelfTarget, TargetDisconnected, TargetNotFound } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { notDelivered } from "../../src/session/Sending.ts"
import { B, C, inboundMessage, settle, withPeers } from "./support.ts"

describe("Sending.notDelivered", () => {
  it("a broker's refusal is NotDelivered, with its reason and code", () => {
    const error = notDelivered("Message", "B")(
      new TargetNotFound({
        messageId: "m1",
        code: DeliveryCode.TargetNotFound,
        reason: "Session not found",
        retryable: false,
        message: "Session not found"
      })
    )
    assert.strictEqual(error._tag, "NotDelivered")
    assert.strictEqual(error.message, `Message to "B" was not delivered: Session not found`)
  })

  it("a send the connection lost before its acknowledgement is DeliveryUnknown, never 'was not delivered'", () => {
    const error = notDelivered("Message", "B")(new ConnectionLost({ operation: "send", messageId: "m1" }))
    assert.strictEqual(error._tag, "DeliveryUnknown")
    assert.strictEqual(
      error.message,
      `Message to "B" may or may not have been delivered: the connection to the broker was lost before it ` +
        `acknowledged the message. Check with the recipient before sending it again, or it may arrive twice.`
    )
  })

  it("a send lost, then refused by the broker reached since, is DeliveryUnknown naming that refusal and what to do", () => {
    const refusal = new TargetDisconnected({
      messageId: "m1",
      code: DeliveryCode.TargetDisconnected,
      reason: Reason.targetDisconnected,
      retryable: false,
      message: Reason.targetDisconnected
    })
    const error = notDelivered("Message", "B")(new ConnectionLost({ operation: "send", messageId: "m1", refusal }))
    assert.strictEqual(error._tag, "DeliveryUnknown")
    assert.strictEqual(
      error.message,
      `Message to "B" may or may not have been delivered: the connection to the broker was lost before it ` +
        `acknowledged the message, and the broker reached since refused the re-send: «Target session is not currently ` +
        `connected; blocking asks are not queued» (E_TARGET_DISCONNECTED), which does not tell whether the first ` +
        `attempt arrived. ` +
        `Check with the recipient before sending it again, or it may arrive twice.`
    )
  })

  it("a send timeout is DeliveryUnknown and names the timeout", () => {
    const error = notDelivered("Reply", "A")(new RequestTimeout({ operation: "send", timeoutMs: 8000 }))
    assert.strictEqual(error._tag, "DeliveryUnknown")
    assert.include(error.message, `Reply to "A" may or may not have been delivered: `)
    assert.include(error.message, "within 8 s (Send timeout)")
    assert.isTrue(error._tag === "DeliveryUnknown" && error.sendTimedOut === true, "not marked as a send timeout")
  })

  it("a send the connection lost is not marked as a send timeout (an ask settles only after the timeout)", () => {
    const error = notDelivered("Message", "B")(new ConnectionLost({ operation: "send", messageId: "m1" }))
    assert.isTrue(error._tag === "DeliveryUnknown" && error.sendTimedOut === undefined, "marked as a send timeout")
  })

  it("the broker's E_SELF_TARGET is SelfTargetRefused", () => {
    const error = notDelivered("Message", "me")(
      new SelfTarget({
        messageId: "m1",
        code: DeliveryCode.SelfTarget,
        reason: "Cannot message yourself",
        retryable: false,
        message: "Cannot message yourself"
      })
    )
    assert.strictEqual(error._tag, "SelfTargetRefused")
  })
})

describe("a target lookup the broker did not answer", () => {
  const frozen = new RequestTimeout({ operation: "list", timeoutMs: 5000, broker: { socketPath: "/run/intercom.sock", pid: 4242 } })

  it.effect("send and ask say nothing was sent, name the broker's pid and what to try; list names them too", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.listFailure = frozen
      const advice = "The intercom broker (pid 4242) did not answer on /run/intercom.sock within 5000 ms: it may be " +
        "stopped (SIGSTOP), swapping, or paused in a debugger. Resume it (kill -CONT 4242), or stop it (kill 4242) and try again."
      for (const action of ["send", "ask"]) {
        const result = yield* session.intercom({ action, to: "B", message: "hi" })
        assert.deepStrictEqual([result.text, result.isError, result.details["error"]], [
          `Nothing was sent to "B": the broker did not answer the lookup of the target within 5 s (List sessions timeout), ` +
          `so the send was not made. ${advice}`,
          true,
          "TargetLookupUnanswered"
        ])
      }
      assert.deepStrictEqual(client.sends, [])
      const listed = yield* session.intercom({ action: "list" })
      assert.strictEqual(listed.text, `List sessions timeout. ${advice}`)
    }))

  it("without the broker looked up, a timeout keeps the protocol's short text", () => {
    assert.strictEqual(new RequestTimeout({ operation: "list", timeoutMs: 5000 }).message, "List sessions timeout")
    assert.strictEqual(
      new RequestTimeout({ operation: "send", timeoutMs: 8000, broker: { socketPath: "/s", pid: undefined } }).message,
      "Send timeout. The intercom broker did not answer on /s within 8000 ms: it may be stopped (SIGSTOP), swapping, " +
        "or paused in a debugger. Resume it, or stop it and try again."
    )
  })
})

describe("a send with replyTo to an asker the list does not show", () => {
  it.effect("answers that asker's ask only: another asker's ask of the same id stays pending", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-1", "B asks", { expectsReply: true }))
      yield* client.push(inboundMessage(C, "q-1", "C asks", { expectsReply: true }))
      yield* settle
      // B is briefly not listed: the send is not resolved here, and the broker takes the name.
      client.sessions = client.sessions.filter((session) => session.id !== B.id)
      yield* Effect.orDie(session.send({ to: "B", replyTo: "q-1", message: "8080" }))
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [["B", "q-1"]])
      const pending = yield* Effect.orDie(session.pending)
      assert.deepStrictEqual(pending.asks.map((ask) => ask.from.id), [C.id], "B's ask is answered, C's is still owed")
    }))
})
