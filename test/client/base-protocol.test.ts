/**
 * Negotiation (design "Wire protocol and compatibility"): a client asks for
 * the extensions it implements itself (paged list, per-ask timeouts) plus the
 * ones its owner names, is granted only those the broker knows, and works
 * against an older base-protocol broker that omits `features` and sends
 * minimal acks (P12, P41).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import {
  ASK_TIMEOUT_V1,
  BASE_FEATURES,
  DELIVERY_V1,
  GROUPS_V1,
  HEALTH_V1,
  LIST_PAGE_V1,
  REPLY_ERROR_V1,
  SUPERVISOR_V1,
  RESULTS_V1,
  QUESTIONS_V1,
  RECEIVED_V1,
  STATS_ROWS_CUT_V1,
  STATS_V1,
  STATE_EPOCH_V1,
  EPHEMERAL_V1,
  TAKEOVER_V1,
  RECLAIM_RELEASED_V1,
  RECLAIM_V1,
  REJOIN_V1,
  ASK_EXPIRY_V1,
  REPLY_ELSEWHERE_V1,
  REUSE_REASON_V1,
  TOPICS_V1,
  TRACE_V1
} from "../../src/protocol/features.ts"
import { message, withBroker } from "../support/broker.ts"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { brokerClientOptions, fakeBroker, fakeClientOptions, makeClient } from "./support.ts"

describe("base protocol", () => {
  it.live("a client is granted the base features and the extensions it implements itself (a durable broker keeps questions)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client } = yield* makeClient(brokerClientOptions(broker, "base-0000-0001"))
      yield* client.connect
      assert.deepStrictEqual((yield* client.status).features, ["exact-send-v1", LIST_PAGE_V1, ASK_TIMEOUT_V1, GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, DELIVERY_V1, HEALTH_V1, TOPICS_V1, RESULTS_V1, QUESTIONS_V1, RECEIVED_V1, TRACE_V1, STATS_V1, STATS_ROWS_CUT_V1, EPHEMERAL_V1, STATE_EPOCH_V1, TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1, REJOIN_V1, ASK_EXPIRY_V1, REPLY_ELSEWHERE_V1, REUSE_REASON_V1])
      assert.deepStrictEqual(BASE_FEATURES, ["exact-send-v1"])
    }))

  it.live("an extension the broker does not know is not granted", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client } = yield* makeClient(
        brokerClientOptions(broker, "base-0000-0002", undefined, { features: ["no-such-extension-v9"] })
      )
      yield* client.connect
      assert.deepStrictEqual((yield* client.status).features, ["exact-send-v1", LIST_PAGE_V1, ASK_TIMEOUT_V1, GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, DELIVERY_V1, HEALTH_V1, TOPICS_V1, RESULTS_V1, QUESTIONS_V1, RECEIVED_V1, TRACE_V1, STATS_V1, STATS_ROWS_CUT_V1, EPHEMERAL_V1, STATE_EPOCH_V1, TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1, REJOIN_V1, ASK_EXPIRY_V1, REPLY_ELSEWHERE_V1, REUSE_REASON_V1])
    }))

  it.live("the register frame is pi-intercom's plus `features` (the client's own extensions, then the owner's) and `instanceId` (`rejoin-v1`, one per client)", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0003"))
      yield* client.connect
      const [register] = fake.ofType("register")
      assert.deepStrictEqual(Object.keys(register?.frame ?? {}).sort(), ["features", "instanceId", "session", "sessionId", "type"])
      const own = [LIST_PAGE_V1, ASK_TIMEOUT_V1, GROUPS_V1, SUPERVISOR_V1, REPLY_ERROR_V1, DELIVERY_V1, HEALTH_V1, TOPICS_V1, RESULTS_V1, QUESTIONS_V1, RECEIVED_V1, TRACE_V1, STATS_V1, STATS_ROWS_CUT_V1, EPHEMERAL_V1, STATE_EPOCH_V1, TAKEOVER_V1, RECLAIM_V1, RECLAIM_RELEASED_V1, REJOIN_V1, ASK_EXPIRY_V1, REPLY_ELSEWHERE_V1, REUSE_REASON_V1]
      assert.deepStrictEqual(register?.frame.features, own)
      const asking = yield* makeClient(fakeClientOptions(fake, "base-0000-0004", { features: ["some-extension-v1"] }))
      yield* asking.client.connect
      assert.deepStrictEqual(fake.ofType("register")[1]?.frame.features, [...own, "some-extension-v1"])
      // One id per client instance, not per connection nor per session: another client has another.
      assert.isString(register?.frame.instanceId)
      assert.notStrictEqual(fake.ofType("register")[1]?.frame.instanceId, register?.frame.instanceId)
    }))

  it.live("an empty configured `instanceId` counts as none: the client sends a random one of its own (the broker refuses \"\")", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const first = yield* makeClient(fakeClientOptions(fake, "base-0000-0006", { instanceId: "" }))
      yield* first.client.connect
      const second = yield* makeClient(fakeClientOptions(fake, "base-0000-0007", { instanceId: "" }))
      yield* second.client.connect
      const [one, two] = fake.ofType("register").map((register) => register.frame.instanceId)
      assert.isString(one)
      assert.isAbove(String(one).length, 0)
      assert.notStrictEqual(two, one)
    }))

  it.live("a configured `instanceId` over 256 characters fails the client's making with IntercomOptionError, before anything is dialled", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const error = yield* Effect.flip(
        IntercomClient.make(fakeClientOptions(fake, "base-0000-0008", { instanceId: "i".repeat(257) }))
      )
      assert.strictEqual(error._tag, "IntercomOptionError")
      assert.deepInclude(error, { option: "instanceId", allowed: "at most 256 characters", value: "one of 257 characters" })
      assert.include(error.message, "leave instanceId out")
      assert.deepStrictEqual(fake.ofType("register"), [], "a register was written")
    }))

  it.live("a configured `instanceId` of 256 characters is sent as given, and the broker registers it", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const instanceId = "i".repeat(256)
      const { client } = yield* makeClient(brokerClientOptions(broker, "base-0000-0009", undefined, { instanceId }))
      yield* client.connect
      assert.isTrue((yield* client.status).connected)
    }))

  it.live("against a broker that omits `features` and sends bare acks: list and send still work", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: undefined })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0005"))
      const sessions = yield* client.list
      assert.deepStrictEqual(sessions.map((s) => s.id), ["base-0000-0005"])
      assert.deepStrictEqual((yield* client.status).features, [])
      const sent = message("hello, old broker")
      // `{type:"delivered", messageId}` with nothing else: delivery defaults to socket_delivered (P41).
      assert.deepStrictEqual(yield* client.send({ to: "anyone", message: sent }), {
        messageId: sent.id,
        delivery: "socket_delivered"
      })
      const [frame] = fake.ofType("send")
      assert.deepStrictEqual(frame?.frame, { type: "send", to: "anyone", message: sent })
    }))

  // A base broker's answers say only which message they are about: its bare `delivered` to a send (P41) and
  // its answer to a cancel (P71) look alike. A cancel written while the send waited took the send's answer,
  // and the send took the cancel's (or, with no answer to the cancel, timed out though it was delivered).
  it.live("a cancel of a message whose send is in flight gets its own answer, and the send gets the send's", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: undefined, holdSendAnswers: true, cancelAnswer: "refused" })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0008", { sendTimeoutMs: 5000 }))
      yield* client.connect
      const sent = message("cancel me")
      const sending = yield* Effect.forkChild(client.send({ to: "anyone", message: sent }), { startImmediately: true })
      yield* fake.until("the send", () => fake.ofType("send").length === 1)
      // Runs until it waits: for its answer, or (without the fix) with its own frame written.
      const cancelling = yield* Effect.forkChild(client.cancel(sent.id), { startImmediately: true })
      // The broker answers the send before this list (and before a cancel written ahead of it).
      yield* client.list
      assert.deepStrictEqual(yield* Fiber.join(sending), { messageId: sent.id, delivery: "socket_delivered" })
      assert.isFalse(yield* Fiber.join(cancelling), "the broker's answer to the cancel: it could not cancel")
      assert.deepStrictEqual(fake.frames.slice(-3).map((f) => f.frame.type), ["send", "list", "cancel_message"])
    }))

  it.live("a cancel behind a send the broker never answers fails with Cancel timeout, its frame unwritten", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: undefined, holdSendAnswers: true })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0009", { sendTimeoutMs: 300 }))
      yield* client.connect
      const sent = message("never answered")
      const sending = yield* Effect.forkChild(client.send({ to: "anyone", message: sent }), { startImmediately: true })
      yield* fake.until("the send", () => fake.ofType("send").length === 1)
      const refused = yield* Effect.flip(client.cancel(sent.id))
      assert.strictEqual(refused.message, "Cancel timeout")
      // The send's timeout goes on to name the broker and what to try (no broker.pid here: no pid).
      assert.match((yield* Effect.flip(Fiber.join(sending))).message, /^Send timeout\. The intercom broker did not answer on /)
      assert.deepStrictEqual(fake.ofType("cancel_message"), [])
    }))

  it.live("a failure reply to a broker without reply-error-v1 goes out as marked text, without the field", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0006"))
      const failure = message("retried twice", { replyTo: "the-ask" })
      yield* client.send({ to: "asker", message: failure, replyError: "disk full" })
      const [frame] = fake.ofType("send")
      assert.deepStrictEqual(frame?.frame, {
        type: "send",
        to: "asker",
        message: { ...failure, content: { text: "Reply error: disk full\n\nretried twice" } }
      })
    }))

  it.live("the client refuses replyError without replyTo before sending anything", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1", REPLY_ERROR_V1] })
      const { client } = yield* makeClient(fakeClientOptions(fake, "base-0000-0007"))
      yield* client.connect
      const refused = yield* Effect.flip(client.send({ to: "asker", message: message("plain"), replyError: "boom" }))
      assert.strictEqual(refused._tag, "InvalidMessage")
      assert.include(refused.message, "replyTo")
      assert.deepStrictEqual(fake.ofType("send"), [])
    }))
})
