/**
 * IntercomSession over a scripted in-memory client: the tool surface
 * (C-TOOL), targeting (C-TGT), the reply-waiter slot under races (C-ASK),
 * replies (C-RPL), inbound admission and intents (C-DLV), presence and the
 * session generation (C-ORD-35). TestClock drives every timer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Option, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { deliveryError } from "../../src/client/errors.ts"
import { ReplyTimeout } from "../../src/session/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { sessionRegistration } from "../../src/session/IntercomSession.ts"
import { B, C, inboundMessage, info, reboundOnce, refuseWith, SELF, settle, withPeers } from "./support.ts"


const failureText = <A, E extends { readonly message: string }>(exit: Exit.Exit<A, E>): string => {
  if (Exit.isSuccess(exit)) return "success"
  const failure = Cause.findErrorOption(exit.cause)
  return failure._tag === "Some" ? failure.value.message : Cause.pretty(exit.cause)
}

describe("C-TOOL-1/2/12 the intercom entry point", () => {
  it.effect("unknown action, missing parameters and bad attachments are error results; nothing is sent", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const unknown = yield* session.intercom({ action: "shout" })
      assert.deepStrictEqual([unknown.text, unknown.isError], ["Unknown action: shout", true])
      for (const params of [{ action: "send", to: "B" }, { action: "send", message: "hi" }, { action: "ask", to: "" }]) {
        const result = yield* session.intercom(params)
        assert.deepStrictEqual([result.text, result.isError], ["Missing 'to' or 'message' parameter", true])
      }
      const reply = yield* session.intercom({ action: "reply" })
      assert.deepStrictEqual([reply.text, reply.isError], ["Missing 'message' parameter", true])
      const invalid = yield* session.intercom({
        action: "send",
        to: "B",
        message: "hi",
        attachments: [{ type: "video", name: "x", content: "y" }]
      })
      assert.isTrue(invalid.isError)
      assert.match(invalid.text, /^Invalid message: attachments must be/)
      const control = yield* session.intercom({ action: "send", to: "B", message: "ding\u0007" })
      assert.strictEqual(control.text, "Invalid message: message contains a control character (only TAB, LF and CR are allowed)")
      assert.deepStrictEqual(client.sends, [])
    }))

  it.effect("an error result's details name the error kind (`error`) and, when not delivered, the broker's code", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const missing = yield* session.intercom({ action: "send", to: "B" })
      assert.deepStrictEqual(missing.details, { error: "MissingParameter" })
      client.onSend = refuseWith(DeliveryCode.TargetNotFound, Reason.targetNotFound)
      const refused = yield* session.intercom({ action: "send", to: "ghost", message: "x" })
      assert.deepStrictEqual(refused.details, { error: "NotDelivered", code: DeliveryCode.TargetNotFound })
    }))

  it.effect("not connected: every action returns `Intercom not connected: <reason>` without failing", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.connectFailure = "broker failed to start"
      for (const action of ["list", "status", "pending"]) {
        const result = yield* session.intercom({ action })
        assert.deepStrictEqual([result.text, result.isError], ["Intercom not connected: broker failed to start", true])
      }
      for (const action of ["send", "ask", "reply"]) {
        const result = yield* session.intercom({ action, to: "B", message: "hi" })
        assert.deepStrictEqual([result.text, result.isError], ["Intercom not connected: broker failed to start", true])
      }
    }))

  it.effect("a connection that does not come back answers `Intercom not connected` after the connect timeout", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ connectTimeoutMs: 3_000 })
      client.connectHangs = true
      const fiber = yield* Effect.forkChild(session.intercom({ action: "list" }))
      yield* settle
      yield* TestClock.adjust("2999 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ["Intercom not connected: no connection within 3000 ms", true])
    }))

  it.effect("C-TOOL-14: building the session connects nothing; the first action does", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* session.setStatus("thinking")
      yield* settle
      assert.strictEqual(client.connects, 0)
      assert.deepStrictEqual(client.presences(), [])
      yield* session.intercom({ action: "status" })
      assert.strictEqual(client.connects, 1)
    }))
})

describe("C-TOOL-9/11 list and status", () => {
  it.effect("list renders both sections; a list without this session is an error", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const result = yield* session.intercom({ action: "list" })
      assert.isFalse(result.isError)
      assert.strictEqual(
        result.text,
        "**Current session:**\n• self (self-000) — /work (test-model) [self]\n\n**Other sessions:**\n" +
          "• B (b0b0b0b0) — /work (test-model) [same cwd]\n• C (c0c0c0c0) — /work (test-model) [same cwd]"
      )
      client.sessions = [B]
      const missing = yield* session.intercom({ action: "list" })
      assert.deepStrictEqual([missing.text, missing.isError], ["Current session is missing from intercom session list.", true])
    }))

  it.effect("status counts every active session, self included", () =>
    Effect.gen(function*() {
      const { session } = yield* withPeers()
      const result = yield* session.intercom({ action: "status" })
      assert.strictEqual(result.text, "**Intercom Status:**\nConnected: Yes\nSession ID: self-0000-0000\nGroup: default\nActive sessions: 3")
    }))
})

describe("C-TOOL-3/4, C-TGT send", () => {
  it.effect("sends epoch-bound to the resolved session and confirms acceptance", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      const result = yield* session.intercom({ action: "send", to: "b", message: "Check null handling" })
      assert.deepStrictEqual([result.text, result.isError], ["Message sent to b", false])
      assert.strictEqual(client.sends.length, 1)
      const sent = client.sends[0]
      assert.strictEqual(sent?.to, B.id)
      assert.strictEqual(sent?.targetId, B.id)
      assert.strictEqual(sent?.targetEpoch, B.endpointEpoch)
      assert.strictEqual(sent?.message.expectsReply, undefined)
      assert.strictEqual(host.history[0]?._tag, "intercom_sent")
    }))

  it.effect("without exact-send-v1 the resolved id is sent plainly; an unresolved target goes to the broker unchanged", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.features = []
      yield* session.intercom({ action: "send", to: "C", message: "x" })
      assert.deepStrictEqual([client.sends[0]?.to, client.sends[0]?.targetId], [C.id, undefined])
      client.onSend = (request) =>
        Effect.fail(deliveryError({
          messageId: request.message.id,
          code: DeliveryCode.TargetNotFound,
          reason: Reason.targetNotFound,
          retryable: false
        }))
      const result = yield* session.intercom({ action: "send", to: "ghost", message: "x" })
      assert.strictEqual(client.sends[1]?.to, "ghost")
      assert.deepStrictEqual([result.text, result.isError], [`Message to "ghost" was not delivered: Session not found`, true])
    }))

  it.effect("E_TARGET_REBOUND: re-lists once and resends with the same message id to the new endpoint", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      reboundOnce(client, B)
      const result = yield* session.intercom({ action: "send", to: "B", message: "x" })
      assert.strictEqual(result.text, "Message sent to B")
      assert.deepStrictEqual(client.sends.map((send) => send.targetEpoch), [B.endpointEpoch, "epoch-new"])
      assert.strictEqual(client.sends[0]?.message.id, client.sends[1]?.message.id)
    }))

  it.effect("self-target is refused in the client (by name, id or prefix) and mapped from the broker's E_SELF_TARGET", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      for (const to of ["self", "self-0000-0000", "self-000"]) {
        const result = yield* session.intercom({ action: "send", to, message: "x" })
        assert.deepStrictEqual([result.text, result.isError], ["Cannot message the current session", true])
      }
      assert.deepStrictEqual(client.sends, [])
      client.onSend = (request) =>
        Effect.fail(deliveryError({
          messageId: request.message.id,
          code: DeliveryCode.SelfTarget,
          reason: Reason.selfTarget,
          retryable: false
        }))
      const result = yield* session.intercom({ action: "send", to: "unlisted-alias", message: "x" })
      assert.deepStrictEqual([result.text, result.isError], ["Cannot message the current session", true])
    }))

  it.effect("ambiguous and too-short targets fail before sending", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.sessions = [SELF, info("d1d1d1d1-1", { name: "dev" }), info("d2d2d2d2-2", { name: "DEV" }), B, C]
      const twins = yield* session.intercom({ action: "send", to: "Dev", message: "x" })
      assert.strictEqual(twins.text, `Multiple sessions named "Dev" are connected. Use the session ID instead.`)
      const short = yield* session.intercom({ action: "send", to: "b0b0", message: "x" })
      assert.match(short.text, /^Target "b0b0" is too short\. Use the displayed target from intercom list/)
      assert.deepStrictEqual(client.sends, [])
    }))

  it.effect("C-TOOL-7 confirmSend: asks the person for a plain send only; declining is a non-error", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ confirmSend: true }, { hasUI: true })
      host.confirmAnswer = false
      const declined = yield* session.intercom({ action: "send", to: "B", message: "deploy?" })
      assert.deepStrictEqual([declined.text, declined.isError], ["Message cancelled by user", false])
      assert.deepStrictEqual(host.confirmations, [`Send to "B":\n\ndeploy?`])
      assert.deepStrictEqual(client.sends, [])
      // The person would still decline, but is not asked: a send with replyTo goes out…
      const reply = yield* session.intercom({ action: "send", to: "B", message: "re", replyTo: "q-1" })
      assert.deepStrictEqual([reply.text, reply.isError], ["Message sent to B", false])
      // …and so does an ask (it then waits for its answer).
      const asking = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "ready?" }))
      yield* settle
      assert.deepStrictEqual(host.confirmations, [`Send to "B":\n\ndeploy?`], "the person was asked again")
      assert.deepStrictEqual(client.sends.map((s) => [s.message.content.text, s.message.replyTo, s.message.expectsReply]), [
        ["re", "q-1", undefined],
        ["ready?", undefined, true]
      ])
      yield* Fiber.interrupt(asking)
    }))

  it.effect("without a UI confirmSend never blocks", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ confirmSend: true }, { hasUI: false })
      host.confirmAnswer = false
      const result = yield* session.intercom({ action: "send", to: "B", message: "x" })
      assert.strictEqual(result.text, "Message sent to B")
      assert.strictEqual(client.sends.length, 1)
    }))
})

describe("C-ASK blocking ask", () => {
  /** B answers question `questionId` once the test pushes it. */
  const answer = (questionId: string, text: string, from = B) =>
    inboundMessage(from, `reply-${questionId}`, text, { replyTo: questionId })

  it.effect("an ask sends expectsReply and returns the matching reply as `**Reply from <to>:**`", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      const fiber = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "which path?" }))
      yield* settle
      const question = client.sends[0]?.message
      assert.strictEqual(question?.expectsReply, true)
      if (question === undefined) return
      yield* client.push(answer(question.id, "Only GET/PUT/DELETE — never POST."))
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ["**Reply from B:**\nOnly GET/PUT/DELETE — never POST.", false])
      // C-ORD-32: the reply was the ask's result, not an inbound delivery.
      assert.strictEqual(yield* Queue.size(host.inbox), 0)
      assert.deepStrictEqual(host.history.map((entry) => entry._tag), ["intercom_sent", "intercom_received"])
      yield* settle
      assert.isTrue(client.receipts().some((r) => r.status === "acknowledged" && r.detail === "matched reply waiter"))
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("race: of parallel asks exactly one waits; the others get `Already waiting for a reply` and the winner is untouched", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const fibers = yield* Effect.forEach(
        ["B", "C", "B", "C", "B"],
        // Forked from this fiber (lazily started), so all five start together at the next yield.
        (to, i) => Effect.forkChild(session.intercom({ action: "ask", to, message: `q${i}` }))
      )
      yield* settle
      assert.strictEqual(client.sends.length, 1, "exactly one question went out")
      const winner = client.sends[0]
      const settled = fibers.map((fiber) => fiber.pollUnsafe()).filter((exit) => exit !== undefined)
      assert.strictEqual(settled.length, 4, "every loser answered at once")
      for (const exit of settled) {
        assert.isTrue(Exit.isSuccess(exit))
        if (Exit.isSuccess(exit)) {
          assert.deepStrictEqual([exit.value.text, exit.value.isError], ["Already waiting for a reply", true])
        }
      }
      assert.isTrue(yield* session.waiting, "the winner still holds the slot")
      if (winner === undefined) return
      const winnerFiber = fibers[Number(winner.message.content.text.slice(1))]
      if (winnerFiber === undefined) return
      const from = winner.to === B.id ? B : C
      yield* client.push(answer(winner.message.id, "fine", from))
      const result = yield* Fiber.join(winnerFiber)
      assert.strictEqual(result.text, `**Reply from ${from.name}:**\nfine`)
    }))

  it.effect("a reply with the wrong thread or from the wrong sender does not resolve the wait; it is delivered instead", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* session.setStatus("tool:intercom")
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(C, "r1", "not mine", { replyTo: questionId }))
      yield* client.push(inboundMessage(B, "r2", "other thread", { replyTo: "something-else" }))
      yield* settle
      assert.isUndefined(fiber.pollUnsafe())
      const delivered = yield* Queue.takeAll(host.inbox)
      assert.deepStrictEqual(delivered.map((inbound) => [inbound.message.id, inbound.intent]), [["r1", "steer"], ["r2", "steer"]])
      yield* client.push(inboundMessage(info("b0b0b0b0-new", { name: "b" }), "r3", "ok", { replyTo: questionId }))
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result._tag === "Replied" ? result.reply.id : "", "r3")
    }))

  it.effect("an answer that comes before the question's acknowledgement ends the ask (a durable broker acknowledges after its commit)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      // The acknowledgement never comes while the test runs.
      client.onSend = () => Effect.never
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* settle
      const questionId = client.sends[0]?.message.id ?? ""
      yield* client.push(inboundMessage(B, "r1", "answer", { replyTo: questionId }))
      const result = yield* Fiber.join(fiber)
      assert.strictEqual(result._tag === "Replied" ? result.reply.id : "", "r1")
    }))

  it.effect("C-ASK-5: the default wait is 10 minutes; timing out frees the slot and cancels the ask edge", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const fiber = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* settle
      yield* TestClock.adjust("599 seconds")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 second")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], [`No reply from "B" within 10 minutes`, true])
      yield* settle
      assert.deepStrictEqual(client.cancelAsks(), [client.sends[0]?.message.id ?? "none"])
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("the timeout comes from askTimeoutMs, and a call's timeoutMs overrides it", () =>
    Effect.gen(function*() {
      const { session } = yield* withPeers({ askTimeoutMs: 120_000 })
      const configured = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* settle
      yield* TestClock.adjust("2 minutes")
      assert.strictEqual((yield* Fiber.join(configured)).text, `No reply from "B" within 2 minutes`)
      const perCall = yield* Effect.forkChild(session.intercom({ action: "ask", to: "C", message: "q", timeoutMs: 5_000 }))
      yield* settle
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* Fiber.join(perCall)).text, `No reply from "C" within 5 seconds`)
      const invalid = yield* session.intercom({ action: "ask", to: "C", message: "q", timeoutMs: 0 })
      assert.isTrue(invalid.isError)
    }))

  it.effect("an ask's timeoutMs out of the broker's range (over 30 days, a fraction) is a parameter error; nothing is sent", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const range = "must be a whole number of milliseconds from 1 to 2592000000, 30 days"
      for (const timeoutMs of [2_592_000_001, 2500.5, 0, -1, Number.POSITIVE_INFINITY]) {
        const result = yield* session.intercom({ action: "ask", to: "B", message: "q", timeoutMs })
        assert.deepStrictEqual(
          [result.text, result.isError, result.details],
          [`Invalid timeoutMs: ${timeoutMs} (${range})`, true, { error: "InvalidTimeout" }]
        )
      }
      assert.deepStrictEqual(client.sends, [], "the broker never saw the ask")
      assert.isFalse(yield* session.waiting)
      // 30 days exactly is the broker's longest ask: it goes out, announcing that timeout.
      const longest = yield* Effect.forkChild(session.ask({ to: "B", message: "q", timeoutMs: 2_592_000_000 }))
      yield* settle
      assert.strictEqual(client.sends[0]?.askTimeoutMs, 2_592_000_000)
      yield* Fiber.interrupt(longest)
    }))

  it.effect("a session askTimeoutMs over 30 days makes a default ask an InvalidTimeout, not an undelivered message", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 2_592_000_001 })
      const result = yield* session.intercom({ action: "ask", to: "B", message: "q" })
      assert.match(result.text, /^Invalid timeoutMs: 2592000001 \(must be a whole number/)
      assert.deepStrictEqual(client.sends, [])
    }))

  it.effect("ask-timeout-v1: an ask's send announces its timeout (the call's, else askTimeoutMs), also when resent after a rebound", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 120_000 })
      const configured = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* settle
      assert.strictEqual(client.sends[0]?.askTimeoutMs, 120_000)
      yield* client.push(answer(client.sends[0]?.message.id ?? "", "a"))
      yield* Fiber.join(configured)
      reboundOnce(client, C)
      const perCall = yield* Effect.forkChild(session.ask({ to: "C", message: "q", timeoutMs: 5_000 }))
      yield* settle
      assert.deepStrictEqual(client.sends.slice(1).map((send) => [send.targetEpoch, send.askTimeoutMs]), [
        [C.endpointEpoch, 5_000],
        ["epoch-new", 5_000]
      ])
      yield* client.push(answer(client.sends[1]?.message.id ?? "", "b", C))
      yield* Fiber.join(perCall)
      yield* session.send({ to: "B", message: "plain" })
      assert.isFalse("askTimeoutMs" in (client.sends[3] ?? {}), "a plain send announces no timeout")
    }))

  it.effect("a reply that comes while its timed-out ask's cancel_ask is on its way reaches the host as a message (known issue 13)", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      const cancelSent = yield* Deferred.make<void>()
      client.onCancelAsk = Deferred.await(cancelSent)
      const asking = yield* Effect.forkChild(session.ask({ to: "B", message: "q", timeoutMs: 1_000 }))
      yield* settle
      const question = client.sends[0]?.message.id ?? "none"
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(client.cancelAsks(), [], "test setup: the cancel_ask is still on its way")
      yield* client.push(answer(question, "late, but here"))
      yield* settle // the reply is handled while the cancel_ask still waits
      yield* Deferred.succeed(cancelSent, undefined)
      const exit = yield* Fiber.await(asking)
      assert.strictEqual(Exit.isFailure(exit) ? Cause.squash(exit.cause) instanceof ReplyTimeout : false, true)
      assert.deepStrictEqual(client.cancelAsks(), [question])
      yield* settle
      const late = yield* Queue.poll(host.inbox)
      assert.strictEqual(Option.getOrUndefined(late)?.message.id, `reply-${question}`, "the late reply reached the host")
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("cancellation is interruption: cancel_ask goes out and the slot is free for the next ask", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q1" }))
      yield* settle
      assert.isTrue(yield* session.waiting)
      yield* Fiber.interrupt(fiber)
      yield* settle
      assert.deepStrictEqual(client.cancelAsks(), [client.sends[0]?.message.id ?? "none"])
      assert.isFalse(yield* session.waiting)
      const next = yield* Effect.forkChild(session.ask({ to: "C", message: "q2" }))
      yield* settle
      assert.strictEqual(client.sends.length, 2)
      yield* client.push(answer(client.sends[1]?.message.id ?? "", "yes", C))
      assert.strictEqual((yield* Fiber.join(next))._tag, "Replied")
    }))

  it.effect("interrupting a losing call leaves the winner's wait alone (C-ASK-2)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const winner = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* settle
      const loser = yield* Effect.forkChild(session.ask({ to: "C", message: "q" }))
      yield* settle
      yield* Fiber.interrupt(loser)
      assert.isTrue(yield* session.waiting)
      assert.deepStrictEqual(client.cancelAsks(), [])
      yield* client.push(answer(client.sends[0]?.message.id ?? "", "still here"))
      assert.strictEqual((yield* Fiber.join(winner))._tag, "Replied")
    }))

  it.effect("C-ASK-6: an undelivered ask fails at once with the broker's reason and frees the slot", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.onSend = (request) =>
        Effect.fail(deliveryError({
          messageId: request.message.id,
          code: DeliveryCode.MutualAsk,
          reason: Reason.mutualAsk,
          retryable: false
        }))
      const result = yield* session.intercom({ action: "ask", to: "B", message: "q" })
      assert.deepStrictEqual(
        [result.text, result.isError],
        [`Message to "B" was not delivered: ${Reason.mutualAsk}`, true]
      )
      assert.strictEqual(result.details["code"], DeliveryCode.MutualAsk)
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("P60: asking a target that is not live fails before sending; so does asking oneself", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const ghost = yield* session.intercom({ action: "ask", to: "ghost", message: "q" })
      assert.strictEqual(ghost.text, `Message to "ghost" was not delivered: ${Reason.targetDisconnected}`)
      const self = yield* session.intercom({ action: "ask", to: "self", message: "q" })
      assert.strictEqual(self.text, "Cannot message the current session")
      assert.deepStrictEqual(client.sends, [])
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("C-ASK-9: the asked peer leaving ends the wait; another peer leaving does not", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      const fiber = yield* Effect.forkChild(session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* settle
      yield* client.presence({ _tag: "Left", sessionId: C.id })
      yield* settle
      assert.isUndefined(fiber.pollUnsafe())
      yield* client.presence({ _tag: "Left", sessionId: B.id })
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], [`Reply peer disconnected before answering: ${B.id}`, true])
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("a generation resumes its client's confirmations when it starts, and holds them before it ends its wait", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, session } = yield* withPeers().pipe(Scope.provide(scope))
      assert.deepStrictEqual(client.confirmations, ["resume"])
      let heldWhenEnded: ReadonlyArray<string> = []
      const fiber = yield* Effect.forkChild(
        session.ask({ to: "B", message: "q" }).pipe(Effect.ensuring(Effect.sync(() => heldWhenEnded = [...client.confirmations])))
      )
      yield* settle
      yield* Scope.close(scope, Exit.void)
      yield* Fiber.await(fiber)
      assert.deepStrictEqual(heldWhenEnded, ["resume", "hold"], "held before the wait ended (known issue 9)")
      assert.deepStrictEqual(client.confirmations, ["resume", "hold"])
    }))

  it.effect("C-ORD-35: closing the generation ends the wait; late inbound messages reach nobody", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, host, session } = yield* withPeers().pipe(Scope.provide(scope))
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* settle
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(failureText(exit), "Intercom session ended")
      yield* client.push(inboundMessage(B, "late", "too late"))
      yield* settle
      assert.strictEqual(yield* Queue.size(host.inbox), 0)
      const after = yield* session.intercom({ action: "status" })
      assert.strictEqual(after.text, "Intercom not connected: the intercom session has ended")
    }))

  it.effect("C-ORD-35: a generation that closes while an ask resolves its target sends no question", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, session } = yield* withPeers().pipe(Scope.provide(scope))
      // The ask's target lookup (a `list`) is held until the generation has closed.
      const listing = yield* Deferred.make<void>()
      const answerList = yield* Deferred.make<void>()
      client.onList = Effect.andThen(Deferred.succeed(listing, undefined), Deferred.await(answerList))
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* Deferred.await(listing)
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(answerList, undefined)
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(failureText(exit), "Intercom session ended")
      assert.deepStrictEqual(client.sends, [], "the closed generation sent nothing")
      assert.deepStrictEqual(client.cancelAsks(), [], "nothing was sent, so nothing to cancel")
      assert.isFalse(yield* session.waiting)
    }))

  it.effect("C-ORD-35: a generation that closes while its question's send waits in the client ends the ask at once and records nothing", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, host, session } = yield* withPeers().pipe(Scope.provide(scope))
      // The question's send is held in the client (as one waiting for a connection would be), never answered.
      const sending = yield* Deferred.make<void>()
      client.onSend = () => Effect.andThen(Deferred.succeed(sending, undefined), Effect.never)
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* Deferred.await(sending)
      const recorded = host.history.length
      yield* Scope.close(scope, Exit.void)
      const exit = yield* Fiber.await(fiber)
      assert.strictEqual(failureText(exit), "Intercom session ended")
      assert.strictEqual(host.history.length, recorded, "the closed generation recorded no sent question")
      assert.isFalse(yield* session.waiting)
    }))
  it.effect("C-ORD-35: a generation that closes while the question to a busy peer waits in the client ends the ask and records nothing", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, host, session } = yield* withPeers().pipe(Scope.provide(scope))
      client.sessions = [SELF, { ...B, acceptsAsks: false }, C]
      // The question's send is held in the client until `release`, then delivered.
      const sending = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      client.onSend = (request) =>
        Effect.andThen(
          Deferred.succeed(sending, undefined),
          Effect.as(Deferred.await(release), { messageId: request.message.id, delivery: "socket_delivered" as const })
        )
      const fiber = yield* Effect.forkChild(session.ask({ to: "B", message: "q" }))
      yield* Deferred.await(sending)
      const recorded = host.history.length
      yield* Scope.close(scope, Exit.void)
      yield* settle
      const endedAtClose = fiber.pollUnsafe() !== undefined
      yield* Deferred.succeed(release, undefined)
      const exit = yield* Fiber.await(fiber)
      assert.isTrue(endedAtClose, "the ask ended when its generation closed")
      assert.strictEqual(failureText(exit), "Intercom session ended")
      assert.strictEqual(host.history.length, recorded, "the closed generation recorded no sent question")
      assert.deepStrictEqual(client.cancelAsks(), [client.sends[0]?.message.id ?? ""], "the edge of a question written is cancelled")
    }))
  it.effect("C-ORD-35: a generation that closes while a send or a reply waits in the client ends it and records nothing", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { client, host, session } = yield* withPeers().pipe(Scope.provide(scope))
      yield* client.push(inboundMessage(B, "q-1", "ready?", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* session.beginTurn()
      // Each message's send is held in the client until `release`, then delivered.
      const release = yield* Deferred.make<void>()
      const held = yield* Queue.unbounded<void>()
      client.onSend = (request) =>
        Effect.andThen(
          Queue.offer(held, undefined),
          Effect.as(Deferred.await(release), { messageId: request.message.id, delivery: "socket_delivered" as const })
        )
      const sendFiber = yield* Effect.forkChild(session.send({ to: "C", message: "fyi" }))
      const replyFiber = yield* Effect.forkChild(session.reply({ message: "yes" }))
      yield* Queue.take(held)
      yield* Queue.take(held)
      const recorded = host.history.length
      yield* Scope.close(scope, Exit.void)
      yield* settle
      const endedAtClose = [sendFiber.pollUnsafe() !== undefined, replyFiber.pollUnsafe() !== undefined]
      yield* Deferred.succeed(release, undefined)
      const exits = [yield* Fiber.await(sendFiber), yield* Fiber.await(replyFiber)]
      assert.deepStrictEqual(endedAtClose, [true, true], "both ended when their generation closed")
      assert.deepStrictEqual(exits.map(failureText), ["Intercom session ended", "Intercom session ended"])
      assert.strictEqual(host.history.length, recorded, "the closed generation recorded nothing sent")
    }))
})

describe("C-RPL reply and pending through the session", () => {
  it.effect("in the turn an ask triggered, reply needs no `to`; the ask is then resolved", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q-1", "ready?", { expectsReply: true }))
      const inbound = yield* Queue.take(host.inbox)
      assert.strictEqual(inbound.intent, "trigger")
      assert.isTrue(inbound.expectsReply)
      assert.include(inbound.text, `To reply, use the intercom tool: intercom({ action: "reply", message: "..." })`)
      yield* session.beginTurn()
      const result = yield* session.intercom({ action: "reply", message: "yes" })
      assert.deepStrictEqual([result.text, result.isError], ["Reply sent to B", false])
      assert.deepStrictEqual([client.sends[0]?.to, client.sends[0]?.message.replyTo], [B.id, "q-1"])
      assert.strictEqual((yield* session.intercom({ action: "pending" })).text, "No unresolved inbound asks.")
    }))

  it.effect("a plain message's triggered turn can be answered too (sent unthreaded, as the broker requires)", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(C, "m-1", "fyi"))
      yield* settle
      yield* session.beginTurn({ from: C.id, messageId: "m-1" })
      const result = yield* session.intercom({ action: "reply", message: "thanks" })
      assert.strictEqual(result.text, "Reply sent to C")
      assert.deepStrictEqual([client.sends[0]?.to, client.sends[0]?.message.replyTo], [C.id, undefined])
    }))

  it.effect("a turn the host names by sender and id is that sender's ask, though another asker's of the same id came later", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q-1", "B asks", { expectsReply: true }))
      const fromB = yield* Queue.take(host.inbox)
      yield* client.push(inboundMessage(C, "q-1", "C asks", { expectsReply: true }))
      yield* settle
      yield* session.beginTurn({ from: fromB.from.id, messageId: fromB.message.id })
      yield* Effect.orDie(session.reply({ message: "for B" }))
      assert.deepStrictEqual(client.sends.map((send) => [send.to, send.message.replyTo]), [[B.id, "q-1"]])
      assert.deepStrictEqual((yield* Effect.orDie(session.pending)).asks.map((ask) => ask.from.id), [C.id])
    }))

  it.effect("several pending asks: `pending` lists them, reply needs `to`, a send with replyTo also resolves one", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q-b", "from B", { expectsReply: true }))
      yield* TestClock.adjust("5 seconds")
      yield* client.push(inboundMessage(C, "q-c", "from   C\n\nplease", { expectsReply: true }))
      yield* settle
      yield* TestClock.adjust("2 seconds")
      const pending = yield* session.intercom({ action: "pending" })
      assert.strictEqual(
        pending.text,
        "**Pending asks:**\n" +
          `- B · q-b · asked 7s ago · expires in 9m 53s · from B\n  reply: intercom({ action: "reply", replyTo: "q-b", message: "..." })\n` +
          `- C · q-c · asked 2s ago · expires in 9m 58s · from C please\n  reply: intercom({ action: "reply", replyTo: "q-c", message: "..." })`
      )
      const ambiguous = yield* session.intercom({ action: "reply", message: "?" })
      assert.deepStrictEqual([ambiguous.text, ambiguous.isError], ["Multiple pending asks — specify `to`", true])
      const toC = yield* session.intercom({ action: "reply", to: "c", message: "sure" })
      assert.strictEqual(toC.text, "Reply sent to C")
      yield* session.intercom({ action: "send", to: "B", message: "answer", replyTo: "q-b" })
      assert.strictEqual((yield* session.intercom({ action: "pending" })).text, "No unresolved inbound asks.")
      const none = yield* session.intercom({ action: "reply", message: "?" })
      assert.strictEqual(none.text, "No active intercom context to reply to")
    }))

  it.effect("a reply the broker refuses because it holds no open ask (P62) takes the ask out of `pending`; another refusal does not", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q-lost", "still there?", { expectsReply: true }))
      yield* client.push(inboundMessage(C, "q-kept", "and you?", { expectsReply: true }))
      yield* settle
      // C's reply fails for another reason: its ask is still open, and stays pending.
      client.onSend = refuseWith(DeliveryCode.TargetNotFound, Reason.targetNotFound)
      assert.isTrue((yield* session.intercom({ action: "reply", to: "C", message: "yes" })).isError)
      // B's ask is gone at the broker (a memory-mode broker restarted, say): nobody waits for the answer.
      client.onSend = refuseWith(DeliveryCode.ReplyTarget, Reason.replyNoAsk)
      const refused = yield* session.intercom({ action: "reply", to: "B", message: "yes" })
      assert.deepStrictEqual([refused.text, refused.isError], [`Reply to "B" was not delivered: the broker no longer holds the ask q-lost (it expired, or B withdrew it), so B no longer waits for an answer. If B still needs it, send it to B as a plain message (a send without replyTo).`, true])
      const left = (yield* session.intercom({ action: "pending" })).text
      assert.include(left, "q-kept")
      assert.notInclude(left, "q-lost")
    }))

  it.effect("a reply to an asker the broker no longer knows (a finished one-shot ask) says what that means", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q-gone", "still there?", { expectsReply: true }))
      yield* settle
      client.onSend = refuseWith(DeliveryCode.TargetNotFound, Reason.targetNotFound)
      const refused = yield* session.intercom({ action: "reply", to: "B", message: "yes" })
      assert.isTrue(refused.isError)
      assert.strictEqual(
        refused.text,
        `Reply to "B" was not delivered: ${Reason.targetNotFound}: the asker is no longer connected and the broker ` +
          "keeps no mail for it (a one-shot `intercom ask` that has ended, say); if it comes back, send the answer again"
      )
    }))

  it.effect("C-RPL-6: received asks expire after the ask timeout", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ askTimeoutMs: 60_000 })
      yield* client.push(inboundMessage(B, "q-b", "x", { expectsReply: true }))
      yield* settle
      yield* TestClock.adjust("61 seconds")
      assert.strictEqual((yield* session.intercom({ action: "pending" })).text, "No unresolved inbound asks.")
    }))

  it.effect("a reply the broker refuses is an error naming the sender", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q-b", "x", { expectsReply: true }))
      yield* settle
      client.onSend = (request) =>
        Effect.fail(deliveryError({
          messageId: request.message.id,
          code: DeliveryCode.ReplyTarget,
          reason: Reason.replyNoAsk,
          retryable: false
        }))
      const result = yield* session.intercom({ action: "reply", message: "late" })
      assert.deepStrictEqual([result.text, result.isError], [`Reply to "B" was not delivered: the broker no longer holds the ask q-b (it expired, or B withdrew it), so B no longer waits for an answer. If B still needs it, send it to B as a plain message (a send without replyTo).`, true])
    }))
})

describe("C-DLV inbound admission and intents", () => {
  it.effect("C-DLV-11: a duplicate (sender, id) is delivered once; receipts go back", () =>
    Effect.gen(function*() {
      const { client, host } = yield* withPeers()
      const message = inboundMessage(B, "dup", "once")
      yield* client.push(message)
      yield* client.push(message)
      yield* settle
      yield* client.push(inboundMessage(C, "dup", "another sender's id"))
      yield* settle
      const delivered = yield* Queue.takeAll(host.inbox)
      assert.deepStrictEqual(delivered.map((inbound) => `${inbound.from.id}/${inbound.message.id}`), [
        `${B.id}/dup`,
        `${C.id}/dup`
      ])
      const receipts = client.receipts().filter((r) => r.messageId === "dup").map((r) => [r.status, r.detail ?? ""])
      assert.deepStrictEqual(receipts, [
        ["receiver_received", ""],
        ["acknowledged", "accepted by receiver"],
        ["acknowledged", "duplicate message id suppressed"],
        ["receiver_received", ""],
        ["acknowledged", "accepted by receiver"]
      ])
    }))

  it.effect("a redelivery that arrives while the first copy's hand-off is retried joins it: the host gets it once", () =>
    Effect.gen(function*() {
      const { client, host } = yield* withPeers()
      host.failDeliveries = 1
      const message = inboundMessage(B, "m", "retry me", { expectsReply: true })
      yield* client.push(message)
      yield* settle
      yield* client.push(message)
      yield* settle
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual((yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id), ["m"])
      assert.deepStrictEqual(host.attempts, ["m", "m"], "the refused attempt and its retry; the copy added none")
      assert.deepStrictEqual(client.receipts().map((r) => [r.status, r.detail ?? ""]), [
        ["receiver_received", ""],
        ["acknowledged", "accepted by receiver"],
        ["acknowledged", "duplicate message id suppressed"]
      ])
    }))

  it.effect("idle → trigger, busy → steer; inboundTrigger limits which messages start turns", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({ inboundTrigger: "replies" })
      yield* client.push(inboundMessage(B, "plain", "x"))
      yield* client.push(inboundMessage(B, "answer", "x", { replyTo: "old-question" }))
      yield* settle
      yield* session.setStatus("thinking")
      yield* client.push(inboundMessage(B, "busy-answer", "x", { replyTo: "old-question" }))
      yield* settle
      const intents = (yield* Queue.takeAll(host.inbox)).map((inbound) => [inbound.message.id, inbound.intent])
      assert.deepStrictEqual(intents, [["plain", "passive"], ["answer", "trigger"], ["busy-answer", "steer"]])
    }))

  it.effect("open question 11: a busy headless session that exits when done answers an ask; plain messages still queue", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* withPeers({}, { exitsWhenDone: true })
      yield* session.setStatus("tool:bash")
      yield* client.push(inboundMessage(B, "q", "can you help?", { expectsReply: true }))
      yield* client.push(inboundMessage(B, "note", "fyi"))
      yield* settle
      const delivered = (yield* Queue.takeAll(host.inbox)).map((inbound) => [inbound.message.id, inbound.intent])
      assert.deepStrictEqual(delivered, [["q", "passive"], ["note", "steer"]])
      assert.strictEqual(client.sends.length, 1)
      assert.deepStrictEqual([client.sends[0]?.to, client.sends[0]?.message.replyTo], [B.id, "q"])
      assert.match(client.sends[0]?.message.content.text ?? "", /non-interactive mode/)
      assert.strictEqual((yield* session.intercom({ action: "pending" })).text, "No unresolved inbound asks.")
    }))

  it.effect("P73: a cancelled ask is dropped from pending and acknowledged", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      yield* client.push(inboundMessage(B, "q", "x", { expectsReply: true }))
      yield* settle
      yield* client.control({ _tag: "Control", from: B, control: { messageId: "q", action: "cancel", timestamp: 0 } })
      yield* settle
      assert.strictEqual((yield* session.intercom({ action: "pending" })).text, "No unresolved inbound asks.")
      assert.isTrue(client.receipts().some((r) => r.messageId === "q" && r.status === "cancellation_requested"))
    }))
})

describe("C-TOOL-10/13 presence", () => {
  it.effect("lifecycle status is pushed as presence once connected, with the configured suffix", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers({ statusSuffix: "reviewing" }, { name: "" })
      yield* session.intercom({ action: "status" })
      yield* settle
      yield* session.setStatus("thinking")
      yield* settle
      yield* session.setStatus("tool:bash")
      yield* settle
      yield* session.setStatus("tool:bash")
      yield* settle
      assert.deepStrictEqual(client.presences().map((p) => p.status), [
        "idle · reviewing",
        "thinking · reviewing",
        "tool:bash · reviewing"
      ])
      assert.deepStrictEqual(
        [client.presences()[0]?.name, client.presences()[0]?.runtimeFallbackAlias],
        ["subagent-chat-self-000", true]
      )
      yield* session.setIdentity({ name: "planner" })
      yield* settle
      const last = client.presences().at(-1)
      assert.deepStrictEqual([last?.name, last?.runtimeFallbackAlias], ["planner", false])
    }))

  it("sessionRegistration presents the alias for unnamed sessions", () => {
    const registration = sessionRegistration({
      sessionId: "session-1a2b3c4d5e6f",
      identity: { name: undefined, cwd: "/w", model: "m" },
      pid: 7,
      startedAt: 1,
      statusSuffix: "busy"
    })
    assert.deepStrictEqual(
      [registration.name, registration.runtimeFallbackAlias, registration.status],
      ["subagent-chat-1a2b3c4d", true, "idle · busy"]
    )
  })
})
