/**
 * `IntercomClient` operations against an in-process broker (`launch: false`):
 * list, send, cancel, cancelAsk, presence, receipts, the inbound streams, and
 * every delivery failure the broker can produce, each as its own typed error
 * carrying the broker's code and reason verbatim.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { SendError, SendRequest } from "../../src/client/requests.ts"
import type { PresenceEvent } from "../../src/client/events.ts"
import { deliveryError, type IntercomNotConnected } from "../../src/client/errors.ts"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message, type TestBrokerOptions, withBroker } from "../support/broker.ts"
import { brokerClientOptions, makeClient, subscribe } from "./support.ts"

const A_ID = "aaaaaaaa-0000-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-0000-4000-8000-00000000000b"

/** A broker with two connected clients, `alpha` and `beta`. */
const pair = (options: TestBrokerOptions = {}) =>
  Effect.gen(function*() {
    const broker = yield* withBroker({ idleExit: null, ...options })
    const a = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
    const b = yield* makeClient(brokerClientOptions(broker, B_ID, "beta"))
    yield* a.client.connect
    yield* b.client.connect
    return { broker, a: a.client, b: b.client, closeB: b.close }
  })

/** Sends and expects a failure; returns the typed error. */
const failure = (client: IntercomClientService, request: SendRequest) =>
  Effect.flatMap(Effect.exit(client.send(request)), (exit) =>
    Exit.isSuccess(exit)
      ? Effect.die(`expected a delivery failure, got ${JSON.stringify(exit.value)}`)
      : Effect.flip(exit))

interface Expected {
  readonly tag: string
  readonly code: string
  readonly reason: string
  readonly messageId: string
  readonly retryable?: boolean
}

const assertDeliveryError = (error: SendError | IntercomNotConnected, expected: Expected) => {
  assert.strictEqual(error._tag, expected.tag, error.message)
  if (!("code" in error)) return assert.fail(`${error._tag} is not a delivery error`)
  assert.strictEqual(error.code, expected.code)
  assert.strictEqual(error.reason, expected.reason)
  assert.strictEqual(error.message, expected.reason, "the error's message is the broker's reason, verbatim")
  assert.strictEqual(error.messageId, expected.messageId)
  assert.strictEqual(error.retryable, expected.retryable ?? false)
}

describe("IntercomClient operations", () => {
  it.live("list shows every session with the names they registered, self included", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const fromA = yield* a.list
      const fromB = yield* b.list
      assert.deepStrictEqual(fromA.map((s) => [s.id, s.name]), [[A_ID, "alpha"], [B_ID, "beta"]])
      assert.deepStrictEqual(fromB.map((s) => s.id), [A_ID, B_ID])
      for (const session of fromA) assert.isString(session.endpointEpoch)
      const status = yield* a.status
      assert.deepStrictEqual(
        {
          ...status,
          lastError: status.lastError ?? null,
          supervisorSessionId: status.supervisorSessionId ?? null,
          stateEpoch: typeof status.stateEpoch
        },
        {
          connected: true,
          sessionId: A_ID,
          socketPath: status.socketPath,
          features: ["exact-send-v1", "list-page-v1", "ask-timeout-v1", "groups-v1", "supervisor-v1", "reply-error-v1", "delivery-v1", "health-v1", "topics-v1", "results-v1", "questions-v1", "received-v1", "trace-v1", "stats-v1", "stats-rows-cut-v1", "ephemeral-v1", "state-epoch-v1", "takeover-v1", "reclaim-v1", "reclaim-released-v1", "rejoin-v1", "ask-expiry-v1", "reply-elsewhere-v1", "reuse-reason-v1"],
          connections: 1,
          lastError: null,
          supervisorSessionId: null,
          stateEpoch: "string",
          reusedIdDrops: 0
        }
      )
    }))

  it.live("send delivers to the target's messages stream and answers socket_delivered; queued once it left", () =>
    Effect.gen(function*() {
      const { a, b, closeB } = yield* pair()
      const inbox = yield* subscribe(b.messages, "beta's messages")
      const first = message("hello beta")
      assert.deepStrictEqual(yield* a.send({ to: "beta", message: first }), {
        messageId: first.id,
        delivery: "socket_delivered"
      })
      const inbound = yield* inbox.next()
      assert.strictEqual(inbound.from.id, A_ID)
      assert.strictEqual(inbound.from.name, "alpha")
      assert.deepStrictEqual(inbound.message.content, { text: "hello beta" })
      assert.strictEqual(inbound.message.id, first.id)
      assert.isNumber(inbound.message.brokerReceivedAt)
      // Epoch-bound exact send (P47) by id.
      const epoch = (yield* a.list).find((s) => s.id === B_ID)?.endpointEpoch ?? ""
      const exact = message("exactly you")
      assert.strictEqual((yield* a.send({ to: "beta", targetId: B_ID, targetEpoch: epoch, message: exact })).delivery, "socket_delivered")
      assert.strictEqual((yield* inbox.next()).message.id, exact.id)
      yield* closeB
      const later = message("are you there?")
      assert.deepStrictEqual(yield* a.send({ to: "beta", message: later }), { messageId: later.id, delivery: "queued" })
    }))

  it.live("the same message id sent twice at once shares one answer and is delivered once", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const inbox = yield* subscribe(b.messages, "beta's messages")
      const once = message("only once")
      const [x, y] = yield* Effect.all([a.send({ to: "beta", message: once }), a.send({ to: "beta", message: once })], {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual([x.delivery, y.delivery], ["socket_delivered", "socket_delivered"])
      assert.strictEqual((yield* inbox.next()).message.id, once.id)
      // A later message from the same sender: a second delivery of `once` would have arrived before it.
      const after = message("after")
      yield* a.send({ to: "beta", message: after })
      assert.strictEqual((yield* inbox.next()).message.id, after.id)
      assert.deepStrictEqual(inbox.seen().map((m) => m.message.id), [once.id, after.id])
    }))

  it.live("presenceEvents: joined, updated (with what was announced), left", () =>
    Effect.gen(function*() {
      const { a, b, broker } = yield* pair()
      const events = yield* subscribe(a.presenceEvents, "alpha's presence events")
      yield* b.presence({ status: "busy", name: "beta-2" })
      const updated = yield* events.next((e) => e._tag === "Updated")
      assert.deepStrictEqual(
        updated._tag === "Updated" ? [updated.session.id, updated.session.name, updated.session.status] : [],
        [B_ID, "beta-2", "busy"]
      )
      const c = yield* makeClient(brokerClientOptions(broker, "cccccccc-0000-4000-8000-00000000000c", "gamma"))
      yield* c.client.connect
      const joined = yield* events.next((e) => e._tag === "Joined")
      assert.strictEqual(joined._tag === "Joined" ? joined.session.name : "", "gamma")
      yield* c.close
      const left = yield* events.next((e) => e._tag === "Left")
      assert.deepStrictEqual(left, { _tag: "Left", sessionId: "cccccccc-0000-4000-8000-00000000000c" } satisfies PresenceEvent)
      // The rename is what a list shows too.
      assert.strictEqual((yield* a.list).find((s) => s.id === B_ID)?.name, "beta-2")
    }))

  it.live("leftSince: a session_left read after a mark, though the session joined again since (C-ASK-9)", () =>
    Effect.gen(function*() {
      const { a, broker, closeB } = yield* pair()
      const events = yield* subscribe(a.presenceEvents, "alpha's presence events")
      const before = yield* a.presenceMark
      yield* closeB
      yield* events.next((e) => e._tag === "Left" && e.sessionId === B_ID)
      const b = yield* makeClient(brokerClientOptions(broker, B_ID, "beta"))
      yield* b.client.connect
      yield* events.next((e) => e._tag === "Joined" && e.session.id === B_ID)
      assert.isFalse(yield* a.isDeparted(B_ID), "beta is back")
      assert.isTrue(yield* a.leftSince(B_ID, before), "beta left after the mark")
      const after = yield* a.presenceMark
      assert.isAbove(after, before)
      assert.isFalse(yield* a.leftSince(B_ID, after), "no departure since the later mark")
      assert.isFalse(yield* a.leftSince("never-seen", 0))
    }))

  it.live("receipt reaches the sender's controls stream", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const controls = yield* subscribe(a.controls, "alpha's controls")
      const inbox = yield* subscribe(b.messages, "beta's messages")
      const sent = message("please ack")
      yield* a.send({ to: "beta", message: sent })
      yield* inbox.next()
      yield* b.receipt({ messageId: sent.id, status: "acknowledged", timestamp: 1234, detail: "accepted by receiver" })
      const receipt = yield* controls.next()
      assert.strictEqual(receipt._tag, "Receipt")
      assert.strictEqual(receipt._tag === "Receipt" ? receipt.from.id : undefined, B_ID)
      assert.deepStrictEqual(receipt._tag === "Receipt" ? receipt.receipt : undefined, {
        messageId: sent.id,
        status: "acknowledged",
        timestamp: 1234,
        detail: "accepted by receiver"
      })
    }))

  it.live("two cancels of one id at once share the broker's one answer: neither waits out its timeout", () =>
    Effect.gen(function*() {
      const { a } = yield* pair()
      const sent = message("twice withdrawn")
      yield* a.send({ to: "beta", message: sent })
      const answers = yield* Effect.all([a.cancel(sent.id), a.cancel(sent.id)], { concurrency: 2 })
      assert.deepStrictEqual(answers, [true, true])
    }))

  it.live("cancel retried after it was carried out (its answer lost, say, with a crashed broker) is true again, not false", () =>
    Effect.gen(function*() {
      const { a, closeB } = yield* pair()
      const events = yield* subscribe(a.presenceEvents, "alpha's presence events")
      yield* closeB
      yield* events.next((e) => e._tag === "Left" && e.sessionId === B_ID)
      const sent = message("while beta is away")
      const queued = yield* a.send({ to: "beta", message: sent })
      assert.strictEqual(queued.delivery, "queued")
      assert.isTrue(yield* a.cancel(sent.id))
      assert.isTrue(yield* a.cancel(sent.id))
    }))

  it.live("cancel: true for a delivered message (the receiver gets a cancel control), false for an unknown one", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const controls = yield* subscribe(b.controls, "beta's controls")
      const sent = message("never mind")
      yield* a.send({ to: "beta", message: sent })
      assert.isTrue(yield* a.cancel(sent.id))
      const control = yield* controls.next()
      assert.strictEqual(control._tag, "Control")
      assert.deepStrictEqual(
        control._tag === "Control" ? [control.from.id, control.control.action, control.control.messageId] : [],
        [A_ID, "cancel", sent.id]
      )
      assert.isFalse(yield* a.cancel("no-such-message"))
      // A resend of the cancelled id replays the cancellation.
      assertDeliveryError(yield* failure(a, { to: "beta", message: sent }), {
        tag: "DeliveryCancelled",
        code: DeliveryCode.DeliveryCancelled,
        reason: Reason.cancelled,
        messageId: sent.id
      })
    }))

  it.live("cancelAsk drops the ask edge: a later reply to it is refused", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      const question = message("still there?", { expectsReply: true })
      yield* a.send({ to: "beta", message: question })
      yield* a.cancelAsk(question.id)
      yield* a.list // a round trip on alpha's connection: the broker has handled cancel_ask
      const reply = message("yes", { replyTo: question.id })
      assertDeliveryError(yield* failure(b, { to: "alpha", message: reply }), {
        tag: "ReplyTargetMismatch",
        code: DeliveryCode.ReplyTarget,
        reason: Reason.replyNoAsk,
        messageId: reply.id
      })
      // Control: without cancelAsk the reply goes through.
      const again = message("and now?", { expectsReply: true })
      yield* a.send({ to: "beta", message: again })
      assert.strictEqual((yield* b.send({ to: "alpha", message: message("yes", { replyTo: again.id }) })).delivery, "socket_delivered")
    }))
})

describe("delivery failures from the broker, as typed errors with the broker's reason verbatim", () => {
  it.live("TargetNotFound, SelfTarget, AmbiguousTarget, InvalidTarget, TargetRebound", () =>
    Effect.gen(function*() {
      const { a, broker } = yield* pair()
      const m1 = message("anyone?")
      assertDeliveryError(yield* failure(a, { to: "nobody", message: m1 }), {
        tag: "TargetNotFound",
        code: DeliveryCode.TargetNotFound,
        reason: "Session not found",
        messageId: m1.id
      })
      const m2 = message("me")
      assertDeliveryError(yield* failure(a, { to: A_ID, message: m2 }), {
        tag: "SelfTarget",
        code: DeliveryCode.SelfTarget,
        reason: "Cannot message the current session",
        messageId: m2.id
      })
      const twin1 = yield* makeClient(brokerClientOptions(broker, "twin-1111-0000", "twin"))
      const twin2 = yield* makeClient(brokerClientOptions(broker, "twin-2222-0000", "Twin"))
      yield* twin1.client.connect
      yield* twin2.client.connect
      const m3 = message("which one?")
      assertDeliveryError(yield* failure(a, { to: "twin", message: m3 }), {
        tag: "AmbiguousTarget",
        code: DeliveryCode.AmbiguousTarget,
        reason: `Multiple sessions named "twin" are connected. Use the session ID instead.`,
        messageId: m3.id
      })
      const m4 = message("half exact")
      assertDeliveryError(yield* failure(a, { to: "beta", targetId: B_ID, message: m4 }), {
        tag: "InvalidTarget",
        code: DeliveryCode.InvalidTarget,
        reason: "Exact target requires an id and endpoint epoch",
        messageId: m4.id
      })
      const m5 = message("old epoch")
      assertDeliveryError(yield* failure(a, { to: "beta", targetId: B_ID, targetEpoch: "stale-epoch", message: m5 }), {
        tag: "TargetRebound",
        code: DeliveryCode.TargetRebound,
        reason: "Target endpoint changed before delivery",
        messageId: m5.id,
        retryable: true
      })
    }))

  it.live("MutualAsk, ReplyTargetMismatch, SupersedeTargetMismatch, MessageIdReuse, DeliverySuperseded", () =>
    Effect.gen(function*() {
      const { a, b } = yield* pair()
      yield* a.send({ to: "beta", message: message("question?", { expectsReply: true }) })
      const back = message("counter-question?", { expectsReply: true })
      assertDeliveryError(yield* failure(b, { to: "alpha", message: back }), {
        tag: "MutualAsk",
        code: DeliveryCode.MutualAsk,
        reason: "Mutual ask refused: target session is already waiting for a reply from this session.",
        messageId: back.id
      })
      const stray = message("answer", { replyTo: "no-such-ask" })
      assertDeliveryError(yield* failure(b, { to: "alpha", message: stray }), {
        tag: "ReplyTargetMismatch",
        code: DeliveryCode.ReplyTarget,
        reason: "Reply target does not match a pending ask",
        messageId: stray.id
      })
      const orphan = message("instead", { supersedes: "no-such-message" })
      assertDeliveryError(yield* failure(a, { to: "beta", message: orphan }), {
        tag: "SupersedeTargetMismatch",
        code: DeliveryCode.SupersedeTarget,
        reason: "Supersede target does not match a previous message from this sender to this receiver",
        messageId: orphan.id
      })
      const original = message("first words")
      yield* a.send({ to: "beta", message: original })
      const reused = { ...original, content: { text: "other words" } }
      assertDeliveryError(yield* failure(a, { to: "beta", message: reused }), {
        tag: "MessageIdReuse",
        code: DeliveryCode.MessageIdReuse,
        reason: "Message id was reused with different authored content",
        messageId: original.id
      })
      const replacement = message("better words", { supersedes: original.id })
      yield* a.send({ to: "beta", message: replacement })
      assertDeliveryError(yield* failure(a, { to: "beta", message: original }), {
        tag: "DeliverySuperseded",
        code: DeliveryCode.DeliverySuperseded,
        reason: `Superseded by ${replacement.id}`,
        messageId: original.id
      })
    }))

  it.live("TargetDisconnected, MessageTooLarge", () =>
    Effect.gen(function*() {
      const { a, b, closeB } = yield* pair()
      // Fits one frame on the way in, but not once the broker adds `from` (our E_MESSAGE_TOO_LARGE).
      const big = message("")
      const overhead = Buffer.byteLength(JSON.stringify({ type: "send", to: "beta", message: big }))
      const large = { ...big, content: { text: "x".repeat(MAX_FRAME_BYTES - overhead - 16) } }
      const tooLarge = yield* failure(a, { to: "beta", message: large })
      assert.strictEqual(tooLarge._tag, "MessageTooLarge", tooLarge.message)
      assert.match(
        tooLarge.message,
        /^Message is too large to deliver: the forwarded frame would be \d+ bytes, over the 1048576-byte frame limit\./
      )
      assert.deepStrictEqual((yield* b.list).map((s) => s.id), [A_ID, B_ID], "beta is still connected")
      yield* closeB
      const ask = message("are you there?", { expectsReply: true })
      assertDeliveryError(yield* failure(a, { to: "beta", message: ask }), {
        tag: "TargetDisconnected",
        code: DeliveryCode.TargetDisconnected,
        reason: "Target session is not currently connected; blocking asks are not queued",
        messageId: ask.id
      })
    }))

  it.live("DeliveryEvicted: a queued message pushed out of a full mailbox", () =>
    Effect.gen(function*() {
      const { a, closeB } = yield* pair({ mailboxCapacity: 1 })
      yield* closeB
      const first = message("one")
      assert.strictEqual((yield* a.send({ to: "beta", message: first })).delivery, "queued")
      assert.strictEqual((yield* a.send({ to: "beta", message: message("two") })).delivery, "queued")
      assertDeliveryError(yield* failure(a, { to: "beta", message: first }), {
        tag: "DeliveryEvicted",
        code: DeliveryCode.DeliveryEvicted,
        reason: "Mailbox capacity evicted the delivery",
        messageId: first.id
      })
    }))

  it.live("refused before sending: an invalid message (InvalidMessage, naming the field), a send frame over 1 MiB (MessageTooLarge)", () =>
    Effect.gen(function*() {
      const { a, b, broker } = yield* pair()
      const observer = yield* broker.session({ name: "observer" })
      // JSON turns NaN into null; the broker would answer under the id "unknown" and the send would time out.
      const nan = { ...message("when?"), timestamp: Number.NaN }
      // Refused by the client itself: an answer from the broker would carry the id "unknown" and never match.
      assertDeliveryError(yield* failure(a, { to: "beta", message: nan }), {
        tag: "InvalidMessage",
        code: DeliveryCode.InvalidMessage,
        reason: "Invalid message format: message.timestamp: Expected number (JSON writes NaN and Infinity as null); " +
          "nothing was sent: correct that field and send again",
        messageId: nan.id
      })
      // The broker would drop the connection: beta, the observer and alpha itself would see churn.
      const huge = message("y".repeat(MAX_FRAME_BYTES))
      const tooLarge = yield* failure(a, { to: "beta", message: huge })
      assert.strictEqual(tooLarge._tag, "MessageTooLarge")
      assert.match(tooLarge.message, /^Message is too large to send: the send frame would be \d+ bytes, over the 1048576-byte frame limit\./)
      assert.strictEqual((yield* a.status).connections, 1)
      yield* a.list // a round trip on alpha's connection: had anything been sent, the broker has handled it
      yield* observer.client.roundTrip
      yield* observer.client.expectNothing(["session_left", "message"])
      // The same ids are still usable once fixed.
      assert.strictEqual((yield* a.send({ to: "beta", message: { ...nan, timestamp: 1 } })).delivery, "socket_delivered")
      assert.deepStrictEqual((yield* b.list).map((s) => s.id).slice(0, 2), [A_ID, B_ID])
    }))

  it("every code maps to its class; a missing or unknown code is DeliveryFailed", () => {
    const expected: Record<string, string> = {
      [DeliveryCode.InvalidMessage]: "InvalidMessage",
      [DeliveryCode.SenderNotFound]: "SenderNotFound",
      [DeliveryCode.InvalidTarget]: "InvalidTarget",
      [DeliveryCode.TargetNotFound]: "TargetNotFound",
      [DeliveryCode.TargetRebound]: "TargetRebound",
      [DeliveryCode.AmbiguousTarget]: "AmbiguousTarget",
      [DeliveryCode.ReplyTarget]: "ReplyTargetMismatch",
      [DeliveryCode.SupersedeTarget]: "SupersedeTargetMismatch",
      [DeliveryCode.MutualAsk]: "MutualAsk",
      [DeliveryCode.TargetDisconnected]: "TargetDisconnected",
      [DeliveryCode.MessageIdReuse]: "MessageIdReuse",
      [DeliveryCode.DeliverySuperseded]: "DeliverySuperseded",
      [DeliveryCode.DeliveryCancelled]: "DeliveryCancelled",
      [DeliveryCode.DeliveryExpired]: "DeliveryExpired",
      [DeliveryCode.DeliveryEvicted]: "DeliveryEvicted",
      [DeliveryCode.DeliveryFailed]: "DeliveryFailed",
      [DeliveryCode.SelfTarget]: "SelfTarget",
      [DeliveryCode.MessageTooLarge]: "MessageTooLarge",
      [DeliveryCode.TooManyAsks]: "TooManyAsks",
      [DeliveryCode.CrossGroup]: "CrossGroup",
      [DeliveryCode.SupervisorUnauthorized]: "SupervisorUnauthorized",
      [DeliveryCode.SupervisorTarget]: "SupervisorTargetMismatch",
      [DeliveryCode.ReplaceQueueFull]: "ReplaceQueueFull",
      [DeliveryCode.DeliveryUnsupported]: "DeliveryUnsupported",
      "": "DeliveryFailed",
      "E_FROM_A_NEWER_BROKER": "DeliveryFailed"
    }
    assert.sameMembers(Object.values(DeliveryCode), Object.keys(expected).filter((code) => code.startsWith("E_") && code !== "E_FROM_A_NEWER_BROKER"))
    for (const [code, tag] of Object.entries(expected)) {
      const error = deliveryError({ messageId: "m-1", code, reason: `reason for ${code}`, retryable: code === "E_TARGET_REBOUND" })
      assert.strictEqual(error._tag, tag, code)
      assert.strictEqual(error.message, `reason for ${code}`)
      assert.deepStrictEqual([error.messageId, error.code, error.retryable], ["m-1", code, code === "E_TARGET_REBOUND"])
    }
  })
})
