/**
 * The order of a supervisor's reply's checks as a durable question's answer against the checks the send makes after
 * its stages (review revqs probe 3; docs/protocol.md "No ask timeout"): `Questions.replySize` is the last send stage,
 * so it speaks before the store-failure refusal. On a durable broker whose commits fail, a plain send is refused
 * `E_DELIVERY_FAILED`, and the supervisor's reply too large as the answer is refused `E_MESSAGE_TOO_LARGE`. Durable
 * broker over the in-memory network with a memory question store and a mail store whose commits fail once the test
 * says the disk is full (as test/broker/durable.test.ts does); time passes on the TestClock only as modelled: the
 * store writer's lazy flush (`LAZY_FLUSH`), so the failing commit runs.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { MailStoreError, type MailStoreService, makeMemory as makeMemoryMail, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { makeMemory, makeMemoryState, QuestionStore } from "../../src/store/QuestionStore.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advance, memoryNetwork, patientClock, step } from "../support/memory.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { FEATURES, questionAsk, START, SUP, TOKEN } from "../support/questionWorld.ts"
import { GROUPS_V1 } from "../../src/protocol/features.ts"

describe("a reply's size as a question's answer is judged before the store-failure refusal", () => {
  it.effect("store failing: a plain send is E_DELIVERY_FAILED, the supervisor's reply too large as the answer E_MESSAGE_TOO_LARGE", () =>
    patientClock(Effect.gen(function*() {
      yield* TestClock.setTime(START)
      const net = yield* memoryNetwork()
      const memory = makeMemoryMail(makeMemoryMailState())
      let full = false
      const store: MailStoreService = {
        ...memory,
        commit: (batch) =>
          full ? Effect.fail(new MailStoreError({ operation: "commit", detail: "database or disk is full" })) : memory.commit(batch)
      }
      yield* Effect.provideService(net.startBroker({ store }), QuestionStore, makeMemory(makeMemoryState()))
      const supervisor = (yield* net.session({ sessionId: SUP, name: "supervisor", frame: { features: FEATURES, ownerToken: TOKEN } })).client
      yield* supervisor.send({ type: "authorize_supervisor", requestId: "auth", childName: "worker" })
      const { capability } = yield* supervisor.next("supervisor_authorized")
      const child = (yield* net.session({
        sessionId: "child-worker",
        name: "worker",
        frame: { features: FEATURES, group: "run-1", capability, supervisorSessionId: SUP }
      })).client
      const bob = (yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [GROUPS_V1], group: "run-1" } })).client
      yield* child.send({ ...questionAsk, text: "q".repeat(500_000) })
      assert.strictEqual((yield* child.next(["question_result", "question_failed"])).type, "question_result")
      yield* messageFor(supervisor, "q-1")
      // The disk is full; bob's send's commit fails (its acknowledgement held with it).
      full = true
      yield* bob.send({ type: "send", to: "child-worker", message: message("to be stored") })
      yield* step(Effect.void)
      yield* advance(LAZY_FLUSH)
      // Another sender, with nothing held (the child's output waits behind bob's message), is refused at once.
      const carol = (yield* net.session({ sessionId: "carol", name: "carol", frame: { features: [GROUPS_V1], group: "run-1" } })).client
      const plain = yield* send(carol, "bob", message("plain"))
      assert.strictEqual(plain.type === "delivery_failed" ? plain.code : plain.type, "E_DELIVERY_FAILED", "setup: the store's commit did not fail")
      const reply = yield* send(supervisor, "child-worker", message("a".repeat(600_000), { replyTo: "q-1" }))
      assert.strictEqual(reply.type === "delivery_failed" ? reply.code : reply.type, "E_MESSAGE_TOO_LARGE")
    })))
})
