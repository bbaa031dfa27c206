/**
 * P01–P04 over a real socket: framing, the 1 MiB limit, garbage handling.
 * Every offence closes the offending connection only, with no reply frame, and
 * a malformed registration is never re-broadcast (one bad SessionInfo in
 * `session_joined` would disconnect every strict client).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrame, encodeFrames, MAX_FRAME_BYTES } from "../../src/protocol/index.ts"
import { closedWithoutReply } from "../support/assertions.ts"
import { list, register, registerFrame, type TestBroker, withBroker } from "../support/broker.ts"
import { header, paddedJson } from "../support/bytes.ts"
import type { WireClient } from "../support/wire.ts"

/**
 * The bystander is untouched: still open, still answered. Its `list` is a
 * round trip, so once it returns, whatever the offender's frames caused for
 * the bystander has been read (the offender itself is closed already).
 */
const bystanderUnaffected = (bystander: WireClient, bystanderId: string) =>
  Effect.gen(function*() {
    assert.isFalse(bystander.isClosed(), "bystander was closed")
    const sessions = yield* list(bystander)
    assert.deepStrictEqual(sessions.map((s) => s.id), [bystanderId])
  })

const setup = Effect.gen(function*() {
  const broker = yield* withBroker()
  const bystander = yield* broker.session({ label: "bystander" })
  return { broker, bystander }
})

describe("P01 framing", () => {
  it.live("a frame written in 1-byte pieces, and frames coalesced in one write, are both understood", () =>
    Effect.gen(function*() {
      const { broker } = yield* setup
      const client = yield* broker.connect("health")
      const bytes = encodeFrame(JSON.stringify({ type: "health", requestId: "split" }))
      // Whether the kernel delivers these as 1-byte reads or coalesces some, the frame is understood.
      // (Every split of the byte stream is covered exactly by the decoder's tests, test/protocol/framing.test.ts.)
      for (let i = 0; i < bytes.length; i++) yield* client.sendRaw(bytes.subarray(i, i + 1))
      const first = yield* client.next("health_ok")
      assert.strictEqual(first.requestId, "split")

      yield* client.sendRaw(encodeFrames(["a", "b", "c"].map((requestId) => JSON.stringify({ type: "health", requestId }))))
      const ids = [yield* client.nextAny(), yield* client.nextAny(), yield* client.nextAny()]
      assert.deepStrictEqual(ids.map((f) => f.type === "health_ok" ? f.requestId : f.type), ["a", "b", "c"])
    }))
})

describe("P02 frame size limit", () => {
  it.live("a frame of exactly 1 MiB is accepted", () =>
    Effect.gen(function*() {
      const { broker } = yield* setup
      const client = yield* broker.connect("big")
      const text = paddedJson({ type: "health", requestId: "exactly-1-MiB" }, MAX_FRAME_BYTES)
      assert.strictEqual(Buffer.byteLength(text), MAX_FRAME_BYTES)
      yield* client.sendText(text)
      const ok = yield* client.next("health_ok")
      assert.strictEqual(ok.requestId, "exactly-1-MiB")
    }))

  it.live("a 1 MiB + 1 header closes that connection at once, before any payload, with no reply", () =>
    Effect.gen(function*() {
      const { broker, bystander } = yield* setup
      const offender = yield* broker.connect("oversize")
      yield* offender.sendRaw(header(MAX_FRAME_BYTES + 1)) // the payload never comes
      yield* closedWithoutReply(offender)
      yield* bystanderUnaffected(bystander.client, bystander.id)
    }))

  it.live("a registered session sending an oversize frame is dropped; others see it leave and stay connected", () =>
    Effect.gen(function*() {
      const { broker, bystander } = yield* setup
      const offender = yield* broker.session({ label: "offender" })
      yield* bystander.client.next("session_joined", (f) => f.session.id === offender.id)
      offender.client.drain()
      yield* offender.client.sendRaw(Buffer.concat([header(MAX_FRAME_BYTES + 1), Buffer.alloc(1000, 0x20)]))
      yield* closedWithoutReply(offender.client)
      yield* bystander.client.next("session_left", (f) => f.sessionId === offender.id)
      yield* bystanderUnaffected(bystander.client, bystander.id)
    }))
})

interface GarbageCase {
  readonly name: string
  /** Payload text (framed correctly) or a frame object. */
  readonly payload: string | object
}

const preRegistration: ReadonlyArray<GarbageCase> = [
  { name: "invalid JSON", payload: "{nope" },
  { name: "a zero-length payload", payload: "" },
  { name: "a JSON array", payload: "[]" },
  { name: "a JSON string", payload: "\"register\"" },
  { name: "JSON null", payload: "null" },
  { name: "a JSON number", payload: "42" },
  { name: "an object without type", payload: { requestId: "x" } },
  { name: "a non-string type", payload: { type: 7 } },
  { name: "an unknown type", payload: { type: "bogus" } },
  { name: "an extension-bus frame (no extension bus)", payload: { type: "extension_publish", namespace: "x", audience: "capable", payload: {} } },
  { name: "list before register (P10)", payload: { type: "list", requestId: "r" } },
  { name: "send before register (P10)", payload: { type: "send", to: "x", message: { id: "m", timestamp: 1, content: { text: "hi" } } } },
  { name: "presence before register (P10)", payload: { type: "presence", status: "idle" } },
  { name: "cancel_message before register (P10)", payload: { type: "cancel_message", messageId: "m" } },
  { name: "message_receipt before register (P10)", payload: { type: "message_receipt", receipt: { messageId: "m", status: "queued", timestamp: 1 } } },
  { name: "health with a non-string requestId (P20)", payload: { type: "health", requestId: 5 } }
]

const postRegistration: ReadonlyArray<GarbageCase> = [
  { name: "invalid JSON", payload: "{\"type\":\"list\"" },
  { name: "an unknown type", payload: { type: "bogus" } },
  { name: "extension_capabilities_update (no extension bus)", payload: { type: "extension_capabilities_update", extensions: [] } },
  { name: "list with a non-string requestId (P31)", payload: { type: "list", requestId: 5 } },
  { name: "presence with a wrong field type (P32)", payload: { type: "presence", status: 5 } },
  { name: "presence with contextPct 1e400", payload: "{\"type\":\"presence\",\"contextPct\":1e400}" },
  { name: "cancel_message with a non-string id (P71)", payload: { type: "cancel_message", messageId: 5 } },
  { name: "cancel_ask with a non-string id (P64)", payload: { type: "cancel_ask", messageId: ["m"] } },
  { name: "message_receipt with an unknown status (P70)", payload: { type: "message_receipt", receipt: { messageId: "m", status: "read", timestamp: 1 } } },
  { name: "health with a non-string requestId (P20)", payload: { type: "health", requestId: null } }
]

const sendPayload = (client: WireClient, payload: string | object) =>
  typeof payload === "string" ? client.sendText(payload) : client.send(payload)

describe("P03 garbage before registration closes that connection only, without reply", () => {
  for (const garbage of preRegistration) {
    it.live(garbage.name, () =>
      Effect.gen(function*() {
        const { broker, bystander } = yield* setup
        const offender = yield* broker.connect("offender")
        yield* sendPayload(offender, garbage.payload)
        yield* closedWithoutReply(offender)
        yield* bystanderUnaffected(bystander.client, bystander.id)
        yield* bystander.client.expectNothing(["session_joined", "session_left", "message"])
      }))
  }
})

describe("P03 garbage from a registered session closes it (others see it leave)", () => {
  for (const garbage of postRegistration) {
    it.live(garbage.name, () =>
      Effect.gen(function*() {
        const { broker, bystander } = yield* setup
        const offender = yield* broker.session({ label: "offender" })
        yield* bystander.client.next("session_joined", (f) => f.session.id === offender.id)
        offender.client.drain()
        yield* sendPayload(offender.client, garbage.payload)
        yield* closedWithoutReply(offender.client)
        yield* bystander.client.next("session_left", (f) => f.sessionId === offender.id)
        yield* bystanderUnaffected(bystander.client, bystander.id)
      }))
  }
})

const validSession = () => {
  const now = Date.now()
  return { cwd: "/tmp", model: "m", pid: 1, startedAt: now, lastActivity: now }
}

const badRegistrations: ReadonlyArray<GarbageCase> = [
  { name: "session missing", payload: { type: "register", sessionId: "bad" } },
  { name: "cwd missing", payload: { type: "register", sessionId: "bad", session: { ...validSession(), cwd: undefined } } },
  { name: "pid a string", payload: { type: "register", sessionId: "bad", session: { ...validSession(), pid: "1" } } },
  {
    name: "lastActivity 1e400 (Infinity)",
    payload: `{"type":"register","sessionId":"bad","session":{"cwd":"/tmp","model":"m","pid":1,"startedAt":1,"lastActivity":1e400}}`
  },
  { name: "name not a string", payload: { type: "register", sessionId: "bad", session: { ...validSession(), name: 5 } } },
  { name: "status not a string", payload: { type: "register", sessionId: "bad", session: { ...validSession(), status: {} } } },
  { name: "blank sessionId", payload: { type: "register", sessionId: "   ", session: validSession() } },
  { name: "non-string sessionId", payload: { type: "register", sessionId: 12, session: validSession() } },
  { name: "non-string scopeId (P17)", payload: { type: "register", sessionId: "bad", scopeId: 3, session: validSession() } },
  {
    name: "invalid extension namespace",
    payload: {
      type: "register",
      sessionId: "bad",
      session: { ...validSession(), extensions: [{ namespace: "Not/Valid!", ownerEligible: true }] }
    }
  }
]

describe("P04 a malformed registration is rejected and never re-broadcast", () => {
  for (const bad of badRegistrations) {
    it.live(bad.name, () =>
      Effect.gen(function*() {
        const { broker, bystander } = yield* setup
        const offender = yield* broker.connect("offender")
        yield* sendPayload(offender, bad.payload)
        yield* closedWithoutReply(offender)
        yield* bystanderUnaffected(bystander.client, bystander.id)
        yield* bystander.client.expectNothing(["session_joined", "presence_update", "session_left"])
      }))
  }

  it.live("a valid registration after a rejected one works (the broker did not keep half a session)", () =>
    Effect.gen(function*() {
      const broker: TestBroker = yield* withBroker()
      const observer = yield* broker.session({ label: "observer" })
      const offender = yield* broker.connect("offender")
      yield* offender.send({ ...registerFrame({ sessionId: "same-id" }), session: { cwd: "/tmp" } })
      yield* offender.waitClosed()
      const retry = yield* broker.connect("retry")
      const registered = yield* register(retry, { sessionId: "same-id" })
      assert.strictEqual(registered.sessionId, "same-id")
      const joined = yield* observer.client.next("session_joined")
      assert.strictEqual(joined.session.id, "same-id")
    }))
})
