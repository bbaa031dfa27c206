/**
 * Durable supervisor questions (`questions-v1`, C-SUP-18, C-DQ) against the
 * broker core in memory with the memory QuestionStore: each step runs until
 * the broker (and its question fiber) is idle, so "nothing arrived" is final.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, QUESTIONS_V1, RECEIVED_V1, REPLY_ERROR_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import type { BrokerCoreOptions } from "../../src/broker/index.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { notificationText } from "../../src/broker/QuestionSize.ts"
import { stateOf } from "../../src/store/questionModel.ts"
import {
  makeMemory,
  makeMemoryState,
  type MemoryQuestions,
  QuestionStore
} from "../../src/store/QuestionStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { message, messageFor, registration, send } from "../support/broker.ts"
import { advance, type MemoryNetwork, memoryNetwork, patientClock } from "../support/memory.ts"
import type { FrameOf, WireClient } from "../support/wire.ts"

const FEATURES = [GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, QUESTIONS_V1]
const TOKEN = "owner-token-of-the-supervisor"
const SUP = "sup-0001"

/** A memory network whose brokers keep questions in `state` (which outlives a broker crash). */
const world = (state: MemoryQuestions = makeMemoryState(), options: BrokerCoreOptions = {}) =>
  Effect.gen(function*() {
    const net = yield* memoryNetwork()
    const start = () => Effect.provideService(net.startBroker(options), QuestionStore, makeMemory(state))
    const first = yield* start()
    return { net, state, start, first }
  })

const supervisorOf = (net: Pick<MemoryNetwork, "session">, features = FEATURES) =>
  net.session({ sessionId: SUP, name: "supervisor", frame: { features, ownerToken: TOKEN } })

const capabilityFor = (client: WireClient, childName: string) =>
  Effect.gen(function*() {
    const requestId = `auth-${childName}`
    yield* client.send({ type: "authorize_supervisor", requestId, childName })
    const answer = yield* client.next(["supervisor_authorized", "supervisor_authorization_failed"], (f) => f.requestId === requestId)
    if (answer.type !== "supervisor_authorized") return assert.fail(`no capability: ${answer.reason}`)
    return answer.capability
  })

/** A child bound to SUP, registered with `capability`, granted questions-v1. */
const childWith = (net: Pick<MemoryNetwork, "connect">, name: string, capability: string, features = FEATURES) =>
  Effect.gen(function*() {
    const client = yield* net.connect(name)
    yield* client.send({
      type: "register",
      sessionId: `child-${name}`,
      session: { cwd: "/tmp", model: "m", pid: 1, startedAt: 1, lastActivity: 1, name },
      group: "run-1",
      features,
      capability,
      supervisorSessionId: SUP
    })
    const registered = yield* client.next(["registered", "registration_failed"])
    assert.strictEqual(registered.type, "registered")
    assert.include(registered.type === "registered" ? registered.features ?? [] : [], QUESTIONS_V1)
    return client
  })

let requests = 0
const requestOf = (client: WireClient, frame: Readonly<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const requestId = `r-${++requests}`
    yield* client.send({ ...frame, requestId })
    return yield* client.next(["question_result", "question_failed"], (f) => f.requestId === requestId)
  })

type Answered = FrameOf<"question_result" | "question_failed">

const okOf = (frame: Answered): FrameOf<"question_result"> =>
  frame.type === "question_result" ? frame : assert.fail(`expected question_result, got ${frame.error}: ${frame.reason}`)

const failureOf = (frame: Answered): FrameOf<"question_failed"> =>
  frame.type === "question_failed" ? frame : assert.fail(`expected question_failed, got ${JSON.stringify(frame)}`)

/** The child asks `questionId`; the saved question comes back. */
const ask = (child: WireClient, questionId: string, text = `Subagent needs a supervisor decision.\n\nWhich way for ${questionId}?`) =>
  requestOf(child, { type: "question_ask", questionId, reason: "need_decision", text })

/** A supervisor and a bound child `worker`, on a broker with a question store. */
const setup = (state?: MemoryQuestions, options?: BrokerCoreOptions, childFeatures = FEATURES) =>
  Effect.gen(function*() {
    const w = yield* world(state, options)
    const supervisor = yield* supervisorOf(w.net)
    const capability = yield* capabilityFor(supervisor.client, "worker")
    const child = yield* childWith(w.net, "worker", capability, childFeatures)
    return { ...w, supervisor, capability, child }
  })

const saved = (state: MemoryQuestions, id: string) => state.records.get(id) ?? assert.fail(`question ${id} is not saved`)

describe("questions-v1: negotiation", () => {
  it.effect("a broker without a question store does not grant questions-v1; a base client's question frame closes it", () =>
    Effect.gen(function*() {
      const net = yield* memoryNetwork()
      yield* net.startBroker()
      const plain = yield* net.session({ sessionId: "plain-1", frame: { features: FEATURES } })
      assert.notInclude(plain.registered.features ?? [], QUESTIONS_V1)
      yield* plain.client.send({ type: "question_list", requestId: "r" })
      yield* plain.client.waitClosed()
    }))

  it.effect("with a store, questions-v1 is granted to clients that ask; a base client gets only the base features", () =>
    Effect.gen(function*() {
      const w = yield* world()
      const base = yield* w.net.session({ sessionId: "base-1" })
      assert.deepStrictEqual(base.registered.features, ["exact-send-v1"])
      const supervisor = yield* supervisorOf(w.net)
      assert.include(supervisor.registered.features ?? [], QUESTIONS_V1)
    }))
})

describe("questions-v1: asking and answering", () => {
  it.effect("the question is saved before the supervisor is steered with its id and how to answer (C-SUP-18)", () =>
    Effect.gen(function*() {
      const { child, state, supervisor } = yield* setup()
      const result = okOf(yield* ask(child, "q-1"))
      assert.strictEqual(result.question?.state, "awaiting_input")
      assert.strictEqual(result.durable, false)
      const notice = yield* messageFor(supervisor.client, "q-1")
      assert.strictEqual(stateOf(saved(state, "q-1")), "awaiting_input")
      assert.strictEqual(notice.channel, "supervisor")
      assert.strictEqual(notice.from.id, "child-worker")
      assert.isTrue(notice.message.expectsReply)
      assert.strictEqual(notice.message.content.text, notificationText(saved(state, "q-1")))
      assert.include(notice.message.content.text, `intercom answer q-1 <answer> --session ${SUP}`)
      // Asking again (a waiter re-checking) does not notify the same supervisor connection twice.
      okOf(yield* ask(child, "q-1"))
      yield* supervisor.client.roundTrip
      yield* supervisor.client.expectNothing("message")
    }))

  it.effect("a question waits with no ordinary ask timeout: the supervisor's reply a day later saves the durable answer (C-DQ-7, C-DQ-16)", () =>
    patientClock(Effect.gen(function*() {
      const { child, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      yield* advance("1 day")
      const reply = message("  use plan B ", { replyTo: "q-1" })
      assertDelivered(yield* send(supervisor.client, "child-worker", reply))
      const got = yield* messageFor(child, reply.id)
      assert.strictEqual(got.message.replyTo, "q-1")
      yield* child.roundTrip
      assert.strictEqual(saved(state, "q-1").answer, "use plan B")
      assert.strictEqual(stateOf(saved(state, "q-1")), "answer_pending")
      // C-DQ-9: answered only once the child confirms.
      yield* child.send({ type: "question_received", questionId: "q-1" })
      yield* child.roundTrip
      assert.strictEqual(stateOf(saved(state, "q-1")), "answered")
    })))

  it.effect("a recipient-turn-failure reply is not an answer; the question keeps waiting and a later reply answers it (C-DQ-8)", () =>
    Effect.gen(function*() {
      const { child, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const failure = message("turn failed", { replyTo: "q-1" })
      assertDelivered(yield* send(supervisor.client, "child-worker", failure, { replyError: "the model errored" }))
      yield* child.roundTrip
      assert.strictEqual(stateOf(saved(state, "q-1")), "awaiting_input")
      const reply = message("yes", { replyTo: "q-1" })
      assertDelivered(yield* send(supervisor.client, "child-worker", reply))
      yield* child.roundTrip
      assert.strictEqual(saved(state, "q-1").answer, "yes")
    }))

  it.effect("a reply saved as the answer, then lost from the mailbox, does not open the question's edge again", () =>
    Effect.gen(function*() {
      // The child confirms what it reads (received-v1): a reply it read but never confirmed goes back to the mailbox.
      const { child, first, net, state, supervisor } = yield* setup(undefined, { mailboxRetention: "1 second" }, [
        ...FEATURES,
        RECEIVED_V1
      ])
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const reply = message("use plan B", { replyTo: "q-1" })
      assertDelivered(yield* send(supervisor.client, "child-worker", reply))
      yield* messageFor(child, reply.id)
      yield* child.roundTrip
      assert.strictEqual(saved(state, "q-1").answer, "use plan B")
      yield* child.destroy
      assert.strictEqual((yield* first.core.stats).mailbox, 1, "the unconfirmed reply went back to the mailbox")
      // Past the mailbox's retention, a registration's prune drops the reply (its sender is told).
      yield* advance("2 seconds")
      yield* net.session({ sessionId: "someone-else" })
      yield* supervisor.client.next("message_receipt", (f) => f.receipt.messageId === reply.id && f.receipt.status === "expired")
      const stats = yield* first.core.stats
      assert.deepStrictEqual([stats.mailbox, stats.asks], [0, 0])
    }))

  it.effect("answer by id: pushed to the waiting child; identical re-answer keeps the original; a different one is refused; a late reply is refused (C-DQ-4, C-DQ-7)", () =>
    Effect.gen(function*() {
      const { child, net, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const cli = yield* net.session({ sessionId: "cli-1", frame: { features: FEATURES } })
      const first = okOf(yield* requestOf(cli.client, { type: "question_answer", questionId: "q-1", text: " go ", owner: SUP }))
      assert.isTrue(first.receipt?.saved)
      assert.isTrue(first.receipt?.sentToChild)
      assert.strictEqual(first.receipt?.question.state, "answer_pending")
      const pushed = yield* child.next("question_answered", (f) => f.questionId === "q-1")
      assert.strictEqual(pushed.answer, "go")
      const again = okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "go" }))
      assert.isFalse(again.receipt?.saved)
      assert.strictEqual(again.receipt?.question.answeredAt, first.receipt?.question.answeredAt)
      const other = failureOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "stop" }))
      assert.strictEqual(other.error, "AnswerConflict")
      assert.include(other.reason, "already has a different saved answer. The original answer was retained.")
      // The edge closed with the answer: across groups, the late reply has no way back.
      assertFailed(yield* send(supervisor.client, "child-worker", message("late", { replyTo: "q-1" })), "E_CROSS_GROUP")
      assert.strictEqual(saved(state, "q-1").answer, "go")
    }))

  it.effect("stop cancels and aborts the live waiter; answering afterwards points to a follow-up (C-DQ-5, C-DQ-11)", () =>
    Effect.gen(function*() {
      const { child, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      const stopped = okOf(yield* requestOf(supervisor.client, { type: "question_stop", questionId: "q-1" }))
      assert.isTrue(stopped.receipt?.saved)
      assert.strictEqual(stopped.receipt?.question.state, "cancelled")
      yield* child.next("question_cancelled", (f) => f.questionId === "q-1")
      const refused = failureOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "yes" }))
      assert.strictEqual(refused.error, "QuestionCancelled")
      assert.include(refused.reason, "follow-up")
    }))

  it.effect("the asking child may cancel its own question; it cannot act for its supervisor", () =>
    Effect.gen(function*() {
      const { child } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      const forged = failureOf(yield* requestOf(child, { type: "question_answer", questionId: "q-1", text: "approved", owner: SUP }))
      assert.strictEqual(forged.error, "QuestionNotOwner")
      const own = failureOf(yield* requestOf(child, { type: "question_answer", questionId: "q-1", text: "approved" }))
      assert.strictEqual(own.error, "QuestionNotFound")
      const stopped = okOf(yield* requestOf(child, { type: "question_stop", questionId: "q-1" }))
      assert.strictEqual(stopped.receipt?.question.state, "cancelled")
    }))

  it.effect("only a bound child may ask; ids must match [A-Za-z0-9_-]+ (C-DQ-1)", () =>
    Effect.gen(function*() {
      const { child, supervisor } = yield* setup()
      assert.strictEqual(failureOf(yield* ask(supervisor.client, "q-1")).error, "QuestionNotChild")
      assert.strictEqual(failureOf(yield* ask(child, "bad id")).error, "InvalidQuestion")
      assert.strictEqual(failureOf(yield* ask(child, "q-2", "   ")).error, "InvalidQuestion")
    }))
})

describe("questions-v1: the child is gone, the broker restarts", () => {
  it.effect("answering a question of an exited child claims its revival once; the receipt carries the recovery call (C-DQ-10, C-DQ-12)", () =>
    Effect.gen(function*() {
      const { child, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      yield* child.destroy
      yield* supervisor.client.roundTrip
      // A reply to a child that left is refused; the notification said how to answer instead.
      assertFailed(yield* send(supervisor.client, "child-worker", message("yes", { replyTo: "q-1" })), "E_TARGET_NOT_FOUND")
      const first = okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "yes" }))
      assert.isFalse(first.receipt?.sentToChild)
      assert.deepStrictEqual(first.receipt?.revival?.runId, "answer-q-1")
      assert.isTrue(first.receipt?.revival?.claimed)
      assert.include(first.receipt?.revival?.recover ?? "", `"runId":"answer-q-1"`)
      const again = okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "yes" }))
      assert.isFalse(again.receipt?.revival?.claimed)
      assert.isDefined(saved(state, "q-1").revivalClaimedAt)
    }))

  it.effect("a question survives a broker crash: the supervisor is notified again, and its reply reaches the re-asking child (C-DQ-6)", () =>
    Effect.gen(function*() {
      const { capability, child, first, net, start, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      yield* first.crash
      yield* start()
      const back = yield* supervisorOf(net)
      // The broker forgot the capability: the supervisor restores it, as after any restart.
      yield* back.client.send({ type: "authorize_supervisor", requestId: "restore", childName: "worker", capability })
      yield* back.client.next("supervisor_authorized")
      const again = yield* childWith(net, "worker", capability)
      const rechecked = okOf(yield* ask(again, "q-1"))
      assert.strictEqual(rechecked.question?.state, "awaiting_input")
      yield* messageFor(back.client, "q-1")
      const reply = message("after the crash", { replyTo: "q-1" })
      assertDelivered(yield* send(back.client, "child-worker", reply))
      yield* messageFor(again, reply.id)
      assert.strictEqual(saved(state, "q-1").answer, "after the crash")
    }))

  it.effect("an answer saved while the child was away is pushed when it asks again", () =>
    Effect.gen(function*() {
      const { capability, child, net, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* child.destroy
      yield* supervisor.client.roundTrip
      okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "ok" }))
      const again = yield* childWith(net, "worker", capability)
      const rechecked = okOf(yield* ask(again, "q-1"))
      assert.strictEqual(rechecked.question?.state, "answer_pending")
      const pushed = yield* again.next("question_answered", (f) => f.questionId === "q-1")
      assert.strictEqual(pushed.answer, "ok")
    }))
})

describe("questions-v1: takeovers and confirmations", () => {
  it.effect("only the asking child's question_received confirms its question and lets go of its waiter", () =>
    Effect.gen(function*() {
      const { child, net, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const other = yield* net.session({ sessionId: "other-1", frame: { features: FEATURES } })
      yield* other.client.send({ type: "question_received", questionId: "q-1" })
      yield* other.client.roundTrip
      const answered = okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "go" }))
      assert.isTrue(answered.receipt?.sentToChild)
      const pushed = yield* child.next("question_answered", (f) => f.questionId === "q-1")
      assert.strictEqual(pushed.answer, "go")
      assert.strictEqual(stateOf(saved(state, "q-1")), "answer_pending")
    }))

  it.effect("a child taken over (P16) keeps waiting on the new connection; once that one leaves, an answer is not reported as sent", () =>
    Effect.gen(function*() {
      const { capability, child, first, net, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const again = yield* childWith(net, "worker", capability)
      okOf(yield* ask(again, "q-2"))
      yield* messageFor(supervisor.client, "q-2")
      // q-1 was asked on the old connection: its answer goes to the new one.
      const answered = okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-1", text: "go" }))
      assert.isTrue(answered.receipt?.sentToChild)
      assert.strictEqual((yield* again.next("question_answered", (f) => f.questionId === "q-1")).answer, "go")
      yield* again.destroy
      yield* supervisor.client.roundTrip
      // The child left: its q-2 edge is closed, and nothing claims to reach it.
      assert.strictEqual((yield* first.core.stats).asks, 0)
      const back = yield* childWith(net, "worker", capability)
      const late = okOf(yield* requestOf(supervisor.client, { type: "question_answer", questionId: "q-2", text: "later" }))
      assert.isFalse(late.receipt?.sentToChild)
      yield* back.roundTrip
      yield* back.expectNothing("question_answered")
    }))

  it.effect("a supervisor taking its id over is notified again on the new connection, and its reply there is the answer (C-DQ-6, C-DQ-7)", () =>
    Effect.gen(function*() {
      const { child, net, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const again = yield* supervisorOf(net)
      yield* messageFor(again.client, "q-1")
      const reply = message("use plan A", { replyTo: "q-1" })
      assertDelivered(yield* send(again.client, "child-worker", reply))
      yield* messageFor(child, reply.id)
      yield* child.roundTrip
      assert.strictEqual(saved(state, "q-1").answer, "use plan A")
    }))

  it.effect("a supervisor's reply written with its takeover registration is saved as the answer, and it is not asked again", () =>
    Effect.gen(function*() {
      const { child, net, state, supervisor } = yield* setup()
      okOf(yield* ask(child, "q-1"))
      yield* messageFor(supervisor.client, "q-1")
      const again = yield* net.connect("supervisor-again")
      const reply = message("use plan B", { replyTo: "q-1" })
      yield* again.sendRaw(encodeFrames([
        JSON.stringify({ type: "register", sessionId: SUP, session: registration({ name: "supervisor" }), features: FEATURES, ownerToken: TOKEN }),
        JSON.stringify({ type: "send", to: "child-worker", message: reply })
      ]))
      assert.strictEqual((yield* again.next(["delivered", "delivery_failed"], (f) => f.messageId === reply.id)).type, "delivered")
      assert.strictEqual((yield* messageFor(child, reply.id)).message.replyTo, "q-1")
      // A request through the question fiber: the re-notification and the answer are both behind it.
      okOf(yield* requestOf(again, { type: "question_get", questionId: "q-1" }))
      assert.strictEqual(saved(state, "q-1").answer, "use plan B")
      assert.strictEqual(stateOf(saved(state, "q-1")), "answer_pending")
      yield* again.expectNothing("message")
    }))
})

describe("questions-v1: listing and reading", () => {
  it.effect("lists are paged and owned by the supervisor session id only; get reads the full text (C-DQ-13…15)", () =>
    Effect.gen(function*() {
      const { child, net, supervisor } = yield* setup()
      const long = `Subagent needs a supervisor decision.\n\n${"z".repeat(3000)}`
      okOf(yield* ask(child, "q-1", long))
      okOf(yield* ask(child, "q-2"))
      okOf(yield* ask(child, "q-3"))
      const page = okOf(yield* requestOf(supervisor.client, { type: "question_list", limit: 2 }))
      assert.strictEqual(page.page?.total, 3)
      assert.strictEqual(page.page?.nextOffset, 2)
      assert.isTrue(page.page?.questions[0]?.messageTruncated)
      const rest = okOf(yield* requestOf(supervisor.client, { type: "question_list", offset: 2 }))
      assert.deepStrictEqual(rest.page?.questions.map((q) => q.id), ["q-3"])
      assert.isUndefined(rest.page?.nextOffset)
      const bad = failureOf(yield* requestOf(supervisor.client, { type: "question_list", limit: 101 }))
      assert.strictEqual(bad.error, "InvalidQuestionPage")
      const full = okOf(yield* requestOf(supervisor.client, { type: "question_get", questionId: "q-1" }))
      assert.strictEqual(full.question?.message, long)
      const other = yield* net.session({ sessionId: "sup-other", frame: { features: FEATURES } })
      const none = okOf(yield* requestOf(other.client, { type: "question_list" }))
      assert.strictEqual(none.page?.total, 0)
      assert.strictEqual(failureOf(yield* requestOf(other.client, { type: "question_get", questionId: "q-1" })).error, "QuestionNotFound")
    }))
})

