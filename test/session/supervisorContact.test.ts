/**
 * `contact_supervisor` in the session runtime (C-SUP-1…5, C-SUP-11, C-INT-7,
 * C-ASK-1) and the supervisor's `pending` rows (C-RPL-8), over the fake
 * client under TestClock: the tool exists only with a complete bridge and a
 * grant; the reasons and their refusals; the blocking reasons share the
 * reply-waiter slot with `ask` and return the supervisor's raw reply;
 * `progress_update` only sends; an interview reply is parsed into `details`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Clock, Deferred, Duration, Effect, Exit, Fiber, Option, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { SendRequest } from "../../src/client/requests.ts"
import { ASK_EXPIRY_V1, EXACT_SEND_V1, QUESTIONS_V1 } from "../../src/protocol/features.ts"
import { readChildBridge, SUBAGENT_BRIDGE_ENV } from "../../src/session/supervisorBridge.ts"
import { formatSupervisorMessage } from "../../src/session/supervisorMessages.ts"
import { QUESTION_RECHECK, waitDurably } from "../../src/session/DurableQuestion.ts"
import { ReplyPeerDisconnected, SessionEnded } from "../../src/session/errors.ts"
import { makeGeneration, resolveSettings } from "../../src/session/Generation.ts"
import {
  B,
  inboundMessage,
  info,
  makeFakeClient,
  makeRecordingHost,
  savesEveryQuestion,
  settle,
  SUP,
  supervisorBridge,
  type UnitSession,
  unitSession,
  withPeers
} from "./support.ts"

const bridge = supervisorBridge

/** A child session whose broker bound it to SUP. */
const child = (askTimeoutMs = 60_000) =>
  Effect.map(withPeers({ childBridge: bridge, askTimeoutMs }), (unit) => {
    unit.client.supervisorSessionId = SUP.id
    return unit
  })

const contact = (unit: UnitSession) => {
  const tool = unit.session.contactSupervisor
  if (tool === undefined) throw new Error("contact_supervisor is missing")
  return tool
}

const lastQuestion = (sends: ReadonlyArray<SendRequest>) => {
  const question = sends.at(-1)?.message
  if (question === undefined) throw new Error("nothing was sent to the supervisor")
  return question
}

const interview = {
  title: "API choice",
  questions: [
    { id: "api", type: "single", question: "Which API?", options: ["Stable API", "Experimental API"] },
    { id: "notes", type: "text", question: "Anything else?" }
  ]
}

describe("contact_supervisor: when it exists (C-SUP-1)", () => {
  it.effect("only with a complete bridge that carries a grant", () =>
    Effect.gen(function*() {
      assert.isUndefined((yield* unitSession()).session.contactSupervisor)
      assert.isUndefined((yield* unitSession({ childBridge: { ...bridge, grant: undefined } })).session.contactSupervisor)
      // An incomplete environment gives no bridge at all.
      assert.isUndefined(readChildBridge({ [SUBAGENT_BRIDGE_ENV.runId[0]]: "r", [SUBAGENT_BRIDGE_ENV.agent[0]]: "a" }))
      assert.isDefined((yield* unitSession({ childBridge: bridge })).session.contactSupervisor)
    }))
})

describe("contact_supervisor: parameters (C-SUP-2)", () => {
  it.effect("bad reasons, a missing message and a bad interview are refused with the contract's texts; nothing is sent", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const tool = contact(unit)
      const results = [
        yield* tool({ reason: "gossip", message: "x" }),
        yield* tool({ message: "x" }),
        yield* tool({ reason: "need_decision" }),
        yield* tool({ reason: "progress_update", message: "   " }),
        yield* tool({ reason: "interview_request", interview: { questions: [] } }),
        yield* tool({ reason: "need_decision", message: "bell \u0007" })
      ]
      assert.deepStrictEqual(results.map((result) => [result.text, result.isError]), [
        ["Invalid reason. Use 'need_decision', 'interview_request', or 'progress_update'.", true],
        ["Invalid reason. Use 'need_decision', 'interview_request', or 'progress_update'.", true],
        ["Missing 'message' parameter for reason 'need_decision'.", true],
        ["Missing 'message' parameter for reason 'progress_update'.", true],
        [results[4]?.text ?? "", true],
        ["Invalid message: message contains a control character (only TAB, LF and CR are allowed)", true]
      ])
      assert.match(results[4]?.text ?? "", /^Invalid interview request: /)
      assert.strictEqual(unit.client.supervisorSends.length, 0)
      assert.strictEqual(unit.client.sends.length, 0)
    }))
})

describe("contact_supervisor: need_decision (C-SUP-4, C-SUP-5, C-SUP-11)", () => {
  it.effect("sends the supervisor's format with expectsReply over supervisor_send and returns the raw reply", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "Stable or experimental API?" }))
      yield* settle
      assert.isTrue(yield* unit.session.waiting)
      const question = lastQuestion(unit.client.supervisorSends)
      assert.strictEqual(unit.client.supervisorSends[0]?.to, SUP.id)
      assert.strictEqual(question.expectsReply, true)
      assert.strictEqual(unit.client.supervisorSends[0]?.askTimeoutMs, 60_000)
      assert.strictEqual(
        question.content.text,
        "Subagent needs a supervisor decision.\nRun: Run-7\nAgent: Worker\nChild index: 0\nChild intercom target: subagent-worker-run-7-1\n\nStable or experimental API?"
      )
      // Another session's message with the same replyTo does not end the wait (C-ASK-4).
      yield* unit.client.push(inboundMessage(B, "r-0", "not yours", { replyTo: question.id }))
      yield* settle
      assert.isUndefined(fiber.pollUnsafe())
      yield* unit.client.push(inboundMessage(SUP, "r-1", "Use the stable API.", { replyTo: question.id }))
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ["Use the stable API.", false])
      assert.deepStrictEqual(result.details, { reason: "need_decision", messageId: question.id, replyId: "r-1", from: SUP.id })
      assert.isFalse(yield* unit.session.waiting)
      assert.deepStrictEqual(unit.host.history.map((entry) => entry._tag), ["intercom_sent", "intercom_received"])
    }))

  it.effect("the supervisor answers with a failure reply (replyError): the call ends as an error with exactly that text, naming the reply", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "Deploy?" }))
      yield* settle
      const question = lastQuestion(unit.client.supervisorSends)
      yield* unit.client.push({ ...inboundMessage(SUP, "r-1", "", { replyTo: question.id }), replyError: "run was cancelled" })
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ["run was cancelled", true])
      // The reply's id and sender, so a host's history names the reply it holds (InboundJournal.handled).
      assert.deepStrictEqual(result.details, { error: "ReplyFailed", replyId: "r-1", from: SUP.id })
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("no reply within the ask timeout: `No reply from \"planner\" …`, the ask edge is cancelled, the slot is free", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      yield* TestClock.adjust("120 seconds")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      assert.deepStrictEqual(unit.client.cancelAsks(), [lastQuestion(unit.client.supervisorSends).id])
      assert.isFalse(yield* unit.session.waiting)
    }))
})

describe("contact_supervisor: a late reply (known issue 13)", () => {
  it.effect("a reply that comes while the timed-out contact's cancel_ask is on its way reaches the host as a message", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      const cancelSent = yield* Deferred.make<void>()
      unit.client.onCancelAsk = Deferred.await(cancelSent)
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      const question = lastQuestion(unit.client.supervisorSends)
      yield* TestClock.adjust("120 seconds")
      assert.deepStrictEqual(unit.client.cancelAsks(), [], "test setup: the cancel_ask is still on its way")
      yield* unit.client.push(inboundMessage(SUP, "r-late", "Use the stable API.", { replyTo: question.id }))
      yield* settle // the reply is handled while the cancel_ask still waits
      yield* Deferred.succeed(cancelSent, undefined)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      yield* settle
      const late = yield* Queue.poll(unit.host.inbox)
      assert.strictEqual(Option.getOrUndefined(late)?.message.id, "r-late", "the late reply reached the host")
    }))
})

describe("contact_supervisor and ask share one reply-waiter slot (C-SUP-3, C-SUP-4, C-ASK-1)", () => {
  it.effect("an ask waiting refuses need_decision and interview_request; progress_update still goes out", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const ask = yield* Effect.forkChild(unit.session.intercom({ action: "ask", to: "B", message: "q" }))
      yield* settle
      const tool = contact(unit)
      const decision = yield* tool({ reason: "need_decision", message: "?" })
      const asked = yield* tool({ reason: "interview_request", interview })
      assert.deepStrictEqual([decision.text, decision.isError], ["Already waiting for a reply", true])
      assert.deepStrictEqual([asked.text, asked.isError], ["Already waiting for a reply", true])
      const progress = yield* tool({ reason: "progress_update", message: "Half done." })
      assert.deepStrictEqual([progress.text, progress.isError], ["Progress update sent to supervisor planner", false])
      assert.strictEqual(unit.client.supervisorSends.length, 1)
      const update = lastQuestion(unit.client.supervisorSends)
      assert.isUndefined(update.expectsReply)
      assert.match(update.content.text, /^Subagent progress update\.\n[\s\S]*\n\nHalf done\.$/)
      // The ask is untouched.
      assert.isUndefined(ask.pollUnsafe())
      assert.isTrue(yield* unit.session.waiting)
      yield* Fiber.interrupt(ask)
    }))

  it.effect("a blocking contact waiting refuses an ask", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const waiting = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      const ask = yield* unit.session.intercom({ action: "ask", to: "B", message: "q" })
      assert.deepStrictEqual([ask.text, ask.isError], ["Already waiting for a reply", true])
      assert.strictEqual(unit.client.sends.length, 0)
      assert.isUndefined(waiting.pollUnsafe())
      yield* Fiber.interrupt(waiting)
      // Interruption is cancellation: the broker forgets the ask edge, the slot is free.
      assert.strictEqual(unit.client.cancelAsks().length, 1)
      assert.isFalse(yield* unit.session.waiting)
    }))
})

describe("contact_supervisor when its generation closes before the question goes out (C-ORD-35)", () => {
  /**
   * A child whose blocking contact is held in `connect` (a reconnect still on its way) while its generation's
   * Scope closes, then released: the call ends with `Intercom session ended` and nothing reaches the broker.
   */
  const closedWhileConnecting = (features: ReadonlyArray<string> | undefined) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const unit = yield* child().pipe(Scope.provide(scope))
      if (features !== undefined) unit.client.features = features
      const connecting = yield* Deferred.make<void>()
      const connected = yield* Deferred.make<void>()
      unit.client.onConnect = Effect.andThen(Deferred.succeed(connecting, undefined), Deferred.await(connected))
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* Deferred.await(connecting)
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(connected, undefined)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ["Intercom session ended", true])
      assert.deepStrictEqual(result.details, { error: "SessionEnded" })
      assert.isFalse(yield* unit.session.waiting)
      return unit
    })

  it.effect("the ordinary ask path sends no supervisor_send and no cancel_ask", () =>
    Effect.gen(function*() {
      const unit = yield* closedWhileConnecting(undefined)
      assert.deepStrictEqual(unit.client.supervisorSends, [], "the closed generation sent nothing")
      assert.deepStrictEqual(unit.client.cancelAsks(), [], "nothing was sent, so nothing to cancel")
    }))

  it.effect("the durable path (questions-v1) asks no question", () =>
    Effect.gen(function*() {
      const unit = yield* closedWhileConnecting([EXACT_SEND_V1, QUESTIONS_V1])
      assert.deepStrictEqual(unit.client.questionsAsked, [], "the closed generation asked nothing")
      assert.deepStrictEqual(unit.client.supervisorSends, [])
    }))
})

describe("contact_supervisor when its generation closes while it waits (C-ORD-35)", () => {
  /** A child whose question's send (or durable ask) is held in the client, as one waiting for a connection is. */
  const heldInClient = (features: ReadonlyArray<string> | undefined) =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const unit = yield* child().pipe(Scope.provide(scope))
      if (features !== undefined) unit.client.features = features
      const holding = yield* Deferred.make<void>()
      const hold = Effect.andThen(Deferred.succeed(holding, undefined), Effect.never)
      unit.client.onSend = () => hold
      unit.client.onAskQuestion = () => hold
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* Deferred.await(holding)
      return { scope, unit, fiber }
    })

  /** Closes the generation: the call ends at once with `Intercom session ended`, having recorded nothing. */
  const closeEnds = (held: Effect.Success<ReturnType<typeof heldInClient>>) =>
    Effect.gen(function*() {
      const { fiber, scope, unit } = held
      yield* Scope.close(scope, Exit.void)
      yield* settle
      const result = fiber.pollUnsafe() ?? assert.fail("the call still waits after its generation closed")
      assert.isTrue(Exit.isSuccess(result))
      const text = Exit.isSuccess(result) ? result.value : undefined
      assert.deepStrictEqual([text?.text, text?.isError, text?.details], ["Intercom session ended", true, { error: "SessionEnded" }])
      assert.deepStrictEqual(unit.host.history, [], "the closed generation recorded no sent question")
      assert.isFalse(yield* unit.session.waiting)
    })

  it.effect("the ordinary path: a supervisor_send still waiting in the client is given up, and the edge cancelled", () =>
    Effect.gen(function*() {
      const held = yield* heldInClient(undefined)
      const question = lastQuestion(held.unit.client.supervisorSends)
      yield* closeEnds(held)
      assert.deepStrictEqual(held.unit.client.cancelAsks(), [question.id])
    }))

  it.effect("the ordinary path: a supervisor who left first does not keep the send waiting", () =>
    Effect.gen(function*() {
      const held = yield* heldInClient(undefined)
      // The supervisor leaves while the send waits: its waiter ends (not as SessionEnded), and the send waits on.
      yield* held.unit.client.presence({ _tag: "Left", sessionId: SUP.id })
      yield* settle
      assert.isUndefined(held.fiber.pollUnsafe())
      yield* closeEnds(held)
    }))

  it.effect("the durable path: a first ask still waiting in the client is given up, not stopped", () =>
    Effect.gen(function*() {
      const held = yield* heldInClient([EXACT_SEND_V1, QUESTIONS_V1])
      yield* closeEnds(held)
      assert.strictEqual(held.unit.client.questionsAsked.length, 1)
      assert.deepStrictEqual(held.unit.client.supervisorSends, [])
    }))

  it.effect("the durable path: a live wait that had just ended (the supervisor left) binds no fresh waiter and asks no more", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const client = yield* makeFakeClient("self-0000-0000")
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      const generation = yield* makeGeneration({
        client: client.service,
        host: host.service,
        settings: resolveSettings({}),
        afterConnect: Effect.void
      }).pipe(Scope.provide(scope))
      client.onAskQuestion = savesEveryQuestion("self-0000-0000")
      const bound = { current: generation.slot.reserve() ?? assert.fail("the slot is taken") }
      const question = { id: "q-1", timestamp: 0, content: { text: "?" } }
      // Once the question is saved, the supervisor leaves (its live wait ends without an answer) and the
      // generation closes, both before the wait goes on: the close found no wait to end.
      const leftThenClosed = Effect.andThen(
        Effect.sync(() => generation.slot.peerLeft(bound.current, new ReplyPeerDisconnected({ peerId: SUP.id }))),
        generation.retire
      )
      const fiber = yield* Effect.forkChild(
        waitDurably(
          generation,
          bound,
          { questionId: question.id, reason: "need_decision", message: question, targetId: SUP.id },
          leftThenClosed
        )
      )
      yield* settle
      const exit = fiber.pollUnsafe() ?? assert.fail("the wait goes on after its generation closed")
      assert.isTrue(Exit.hasFails(exit))
      assert.strictEqual(Exit.isFailure(exit) ? Cause.squash(exit.cause) instanceof SessionEnded : false, true)
      const asked = client.questionsAsked.length
      yield* TestClock.adjust(Duration.sum(QUESTION_RECHECK, QUESTION_RECHECK))
      assert.strictEqual(client.questionsAsked.length, asked, "the ended wait re-asks nothing")
      yield* Scope.close(scope, Exit.void)
    }))
})

describe("contact_supervisor: interview_request (C-INT-4, C-INT-7)", () => {
  const replyTo = (unit: UnitSession, text: string) =>
    Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "interview_request", interview, message: "Blocked on this." }))
      yield* settle
      const question = lastQuestion(unit.client.supervisorSends)
      yield* unit.client.push(inboundMessage(SUP, `r-${unit.client.supervisorSends.length}`, text, { replyTo: question.id }))
      return { question, result: yield* Fiber.join(fiber) }
    })

  it.effect("a valid JSON reply gives details.structuredReply; the visible text stays raw", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const raw = "```json\n{ \"responses\": [{ \"id\": \"api\", \"value\": \" Stable API \" }] }\n```"
      const { question, result } = yield* replyTo(unit, raw)
      assert.match(question.content.text, /^Subagent requests a structured supervisor interview\.\n[\s\S]*Interview: API choice[\s\S]*Child note: Blocked on this\./)
      assert.deepStrictEqual([result.text, result.isError], [raw, false])
      assert.deepStrictEqual(result.details["structuredReply"], { responses: [{ id: "api", value: "Stable API" }] })
      assert.deepStrictEqual(result.details["unansweredIds"], ["notes"])
      assert.isUndefined(result.details["structuredReplyParseError"])
    }))

  it.effect("an invalid JSON reply gives details.structuredReplyParseError; prose gives neither", () =>
    Effect.gen(function*() {
      const unit = yield* child()
      const bad = yield* replyTo(unit, "{ \"responses\": [{ \"id\": \"api\", \"value\": \"Other\" }] }")
      assert.deepStrictEqual([bad.result.text, bad.result.isError], ["{ \"responses\": [{ \"id\": \"api\", \"value\": \"Other\" }] }", false])
      assert.isString(bad.result.details["structuredReplyParseError"])
      assert.isUndefined(bad.result.details["structuredReply"])
      const prose = yield* replyTo(unit, "Use the stable one.")
      assert.strictEqual(prose.result.text, "Use the stable one.")
      assert.isUndefined(prose.result.details["structuredReply"])
      assert.isUndefined(prose.result.details["structuredReplyParseError"])
    }))
})

/** The `receivedAt` of the `index`th row of a `pending` result's details (the clock's, not asserted here). */
const pendingReceivedAt = (result: { readonly details: Readonly<Record<string, unknown>> }, index: number): unknown => {
  const asks = result.details["asks"]
  return Array.isArray(asks) && typeof asks[index] === "object" && asks[index] !== null ? Reflect.get(asks[index], "receivedAt") : undefined
}

describe("the supervisor's pending rows (C-RPL-8, C-SUP-19)", () => {
  it.effect("a child's question marked channel supervisor shows run, agent, child target and the question; reply answers it", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* unitSession()
      const worker = info("child-0000-1111", { name: "subagent-worker-run-7-1" })
      client.sessions = [...client.sessions, worker]
      const text = formatSupervisorMessage("need_decision", { runId: "Run-7", agent: "Worker", index: 0, sessionName: "subagent-worker-run-7-1" }, "Stable or\n  experimental API?")
      yield* client.push({ ...inboundMessage(worker, "q-1", text, { expectsReply: true }), channel: "supervisor" })
      // A plain ask from B keeps its ordinary row.
      yield* client.push(inboundMessage(B, "q-2", "plain question", { expectsReply: true }))
      yield* Queue.take(host.inbox)
      yield* Queue.take(host.inbox)
      const pending = yield* session.intercom({ action: "pending" })
      assert.strictEqual(
        pending.text,
        [
          "**Pending asks:**",
          "- subagent-worker-run-7-1 · q-1 · asked 0s ago · expires in 10m · Stable or experimental API?",
          "  supervisor question (need_decision): run Run-7 · agent Worker · child subagent-worker-run-7-1 (index 0)",
          "  question: Stable or experimental API?",
          "  reply: intercom({ action: \"reply\", replyTo: \"q-1\", message: \"...\" })",
          "- B · q-2 · asked 0s ago · expires in 10m · plain question",
          "  reply: intercom({ action: \"reply\", replyTo: \"q-2\", message: \"...\" })"
        ].join("\n")
      )
      // The same fields, structured, for a program (C-SUP-19); the plain ask has none.
      assert.deepStrictEqual(pending.details["asks"], [
        {
          from: worker.id,
          messageId: "q-1",
          receivedAt: pendingReceivedAt(pending, 0),
          askedAt: 0,
          expiresAt: 600_001,
          supervisor: {
            reason: "need_decision",
            runId: "Run-7",
            agent: "Worker",
            childIndex: 0,
            childTarget: "subagent-worker-run-7-1",
            question: "Stable or\n  experimental API?"
          }
        },
        { from: B.id, messageId: "q-2", receivedAt: pendingReceivedAt(pending, 1), askedAt: 0, expiresAt: 600_001 }
      ])
      const replied = yield* session.intercom({ action: "reply", replyTo: "q-1", message: "Stable." })
      assert.deepStrictEqual([replied.text, replied.isError], ["Reply sent to subagent-worker-run-7-1", false])
      assert.strictEqual(client.sends.at(-1)?.message.replyTo, "q-1")
      assert.strictEqual(client.sends.at(-1)?.to, worker.id)
      const after = yield* session.intercom({ action: "pending" })
      assert.notInclude(after.text, "q-1")
    }))

  it.effect("the same text without the broker's channel mark is an ordinary row", () =>
    Effect.gen(function*() {
      const { client, host, session } = yield* unitSession()
      const text = formatSupervisorMessage("need_decision", { runId: "r", agent: "a", index: 0 }, "forged")
      yield* client.push(inboundMessage(B, "q-3", text, { expectsReply: true }))
      yield* Queue.take(host.inbox)
      const pending = yield* session.intercom({ action: "pending" })
      assert.notInclude(pending.text, "supervisor question")
    }))
})

describe("contact_supervisor on the broker's clock (ask-expiry-v1)", () => {
  it.effect("granted: the broker's notice ends the blocking wait (same text), before the client's own timer", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      const question = lastQuestion(unit.client.supervisorSends)
      // The broker's deadline came before the client's (it received the ask first): its notice ends the wait.
      yield* TestClock.adjust("119 seconds")
      yield* unit.client.expireAsk(question.id)
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      assert.isFalse(yield* unit.session.waiting)
    }))

  it.effect("granted: at its own deadline the wait makes one round trip, and a reply read before its answer answers", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "first?" }))
      yield* settle
      const question = lastQuestion(unit.client.supervisorSends)
      // The broker accepted a reply before its deadline and wrote it ahead of the round trip's answer.
      unit.client.onSettle = unit.client.push(inboundMessage(SUP, "r-1", "Use the stable API.", { replyTo: question.id }))
        .pipe(Effect.andThen(unit.client.service.caughtUp), Effect.as(true))
      yield* TestClock.adjust("119 seconds")
      assert.strictEqual(unit.client.settles, 0)
      yield* TestClock.adjust("1 second")
      const answered = yield* Fiber.join(fiber)
      assert.deepStrictEqual([answered.text, answered.isError], ["Use the stable API.", false])
      assert.strictEqual(unit.client.settles, 1)
    }))

  it.effect("granted: at its own deadline the wait ends when the round trip brings neither reply nor notice", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      // The broker answers the round trip with nothing before it (it lost the ask, say).
      yield* TestClock.adjust("120 seconds")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      assert.strictEqual(unit.client.settles, 1)
    }))

  it.effect("granted: a timer that fires early does not start the round trip before the deadline the broker reads", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      const base = yield* Clock.Clock
      // A sleep of a second or more ends 2 ms early against the clock (as a timer may against the wall clock).
      const early: Clock.Clock = {
        currentTimeMillisUnsafe: () => base.currentTimeMillisUnsafe(),
        currentTimeMillis: base.currentTimeMillis,
        currentTimeNanosUnsafe: () => base.currentTimeNanosUnsafe(),
        currentTimeNanos: base.currentTimeNanos,
        monotonicTimeNanosUnsafe: () => base.monotonicTimeNanosUnsafe(),
        monotonicTimeNanos: base.monotonicTimeNanos,
        sleep: (duration) => {
          const ms = Duration.toMillis(duration)
          return base.sleep(Duration.millis(ms >= 1_000 ? ms - 2 : ms))
        }
      }
      const sentAt = yield* Clock.currentTimeMillis
      let settledAt: number | undefined
      unit.client.onSettle = Effect.sync(() => {
        settledAt = base.currentTimeMillisUnsafe()
        return false
      })
      const fiber = yield* Effect.forkChild(
        contact(unit)({ reason: "need_decision", message: "?" }).pipe(Effect.provideService(Clock.Clock, early))
      )
      yield* settle
      yield* TestClock.adjust("120 seconds")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
      assert.strictEqual(settledAt === undefined ? undefined : settledAt - sentAt, 120_000)
    }))

  it.effect("granted: an asker whose round trip finds no connection, and none coming back, ends at its deadline", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      unit.client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      // As the real client answers when no connection is live and none will come (or none came within its rejoin grace).
      unit.client.onSettle = Effect.succeed(false)
      yield* TestClock.adjust("120 seconds")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
    }))

  it.effect("a broker without the extension: the client's own timer ends the wait at the timeout, as before", () =>
    Effect.gen(function*() {
      const unit = yield* child(120_000)
      const fiber = yield* Effect.forkChild(contact(unit)({ reason: "need_decision", message: "?" }))
      yield* settle
      // A stray notice (no broker without the extension sends one) does not end the wait.
      yield* unit.client.expireAsk(lastQuestion(unit.client.supervisorSends).id)
      yield* settle
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("120 seconds")
      const result = yield* Fiber.join(fiber)
      assert.deepStrictEqual([result.text, result.isError], ['No reply from "planner" within 2 minutes', true])
    }))
})
