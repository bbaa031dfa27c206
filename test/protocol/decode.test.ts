/**
 * Frame decoding: valid frames decode to themselves; a failure is a value that
 * names the frame type and the offending field; re-broadcast numbers are finite
 * (JSON `1e400` parses to Infinity, which a strict client would choke on, P04).
 */
import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import fc from "fast-check"
import {
  BrokerFrame,
  ClientFrame,
  decodeBrokerFrameText,
  decodeClientFrame,
  FrameDecodeError,
  isFrameDecodeError,
  ObserveBrokerFrame,
  parseFrameText
} from "../../src/protocol/index.ts"

// ---------------------------------------------------------------------------
// Arbitraries for valid frames
// ---------------------------------------------------------------------------

const finite = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))
const text = fc.string({ maxLength: 20 })
const nonBlank = text.filter((s) => s.trim().length > 0)

const registrationArb = fc.record(
  {
    cwd: text,
    model: text,
    pid: finite,
    startedAt: finite,
    lastActivity: finite,
    name: text,
    runtimeFallbackAlias: fc.boolean(),
    status: text,
    tmuxPane: text,
    extensions: fc.array(
      fc.record({
        namespace: fc.stringMatching(/^[a-z0-9][a-z0-9._/-]{0,63}$/),
        ownerEligible: fc.boolean()
      }),
      { maxLength: 32 }
    )
  },
  { requiredKeys: ["cwd", "model", "pid", "startedAt", "lastActivity"] }
)

const registerArb = fc.record(
  {
    type: fc.constant("register"),
    session: registrationArb,
    sessionId: nonBlank,
    scopeId: text,
    stateId: text
  },
  { requiredKeys: ["type", "session"] }
)

const attachmentArb = fc.record(
  {
    type: fc.constantFrom("file", "snippet", "context"),
    name: text,
    content: text,
    language: text
  },
  { requiredKeys: ["type", "name", "content"] }
)

const messageArb = fc.record(
  {
    id: text,
    timestamp: finite,
    content: fc.record({ text, attachments: fc.array(attachmentArb, { maxLength: 3 }) }, { requiredKeys: ["text"] }),
    senderSequence: finite,
    brokerReceivedAt: finite,
    brokerDeliveredAt: finite,
    supersedes: text,
    retryOf: text,
    replyTo: text,
    expectsReply: fc.boolean()
  },
  { requiredKeys: ["id", "timestamp", "content"] }
)

const sendArb = fc.record(
  { type: fc.constant("send"), to: text, message: messageArb, targetId: text, targetEpoch: text },
  { requiredKeys: ["type", "to", "message"] }
)

const presenceArb = fc.record(
  {
    type: fc.constant("presence"),
    name: text,
    runtimeFallbackAlias: fc.boolean(),
    status: text,
    model: text,
    contextPct: fc.option(finite, { nil: null }),
    contextTokens: fc.option(finite, { nil: null }),
    contextWindow: fc.option(finite, { nil: null })
  },
  { requiredKeys: ["type"] }
)

const receiptArb = fc.record({
  type: fc.constant("message_receipt"),
  receipt: fc.record(
    {
      messageId: text,
      status: fc.constantFrom(
        "receiver_received",
        "queued",
        "injected",
        "acknowledged",
        "expired",
        "cancelled",
        "superseded",
        "cancellation_requested"
      ),
      timestamp: finite,
      detail: text
    },
    { requiredKeys: ["messageId", "status", "timestamp"] }
  )
})

/** JSON round trip turns -0 into 0; compare what actually crosses the wire. */
const wire = (value: unknown): unknown => JSON.parse(JSON.stringify(value))

const decodeText = (raw: string) => {
  const parsed = parseFrameText(raw)
  if (isFrameDecodeError(parsed)) return parsed
  switch (parsed.type) {
    case "register":
      return decodeClientFrame.register(parsed)
    case "send":
      return decodeClientFrame.send(parsed)
    case "presence":
      return decodeClientFrame.presence(parsed)
    case "message_receipt":
      return decodeClientFrame.message_receipt(parsed)
    default:
      throw new Error(`test bug: no decoder for ${parsed.type}`)
  }
}

const expectError = (result: unknown, frameType: string, field: string) => {
  assert.instanceOf(result, FrameDecodeError, `expected a FrameDecodeError, got ${JSON.stringify(result)}`)
  if (result instanceof FrameDecodeError) {
    assert.strictEqual(result.frameType, frameType)
    assert.strictEqual(result.field, field)
    assert.include(result.message, frameType)
    if (field !== "") assert.include(result.message, field)
  }
}

describe("valid client frames decode to themselves", () => {
  it("register, send, presence and message_receipt (property)", () => {
    fc.assert(
      fc.property(fc.oneof(registerArb, sendArb, presenceArb, receiptArb), (frame) => {
        const raw = JSON.stringify(frame)
        const decoded = decodeText(raw)
        assert.isFalse(isFrameDecodeError(decoded), isFrameDecodeError(decoded) ? decoded.message : "")
        assert.deepStrictEqual(wire(decoded), wire(frame))
      }),
      { numRuns: 300 }
    )
  })

  it("presence: null context fields are kept as null (null deletes, P32)", () => {
    const decoded = decodeClientFrame.presence({ type: "presence", contextPct: null, contextTokens: 5 })
    assert.deepStrictEqual(decoded, { type: "presence", contextPct: null, contextTokens: 5 })
  })
})

describe("a failure names the frame type and the field", () => {
  const validSession = { cwd: "/", model: "m", pid: 1, startedAt: 1, lastActivity: 1 }

  it("every required SessionRegistration field: missing or of the wrong type", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("cwd", "model", "pid", "startedAt", "lastActivity"),
        fc.constantFrom<unknown>(undefined, null, true, "7", 7, [], {}),
        (key, bad) => {
          const expectsString = key === "cwd" || key === "model"
          fc.pre(expectsString ? typeof bad !== "string" : typeof bad !== "number")
          const session: Record<string, unknown> = { ...validSession }
          if (bad === undefined) delete session[key]
          else session[key] = bad
          expectError(decodeClientFrame.register({ type: "register", session }), "register", `session.${key}`)
        }
      )
    )
  })

  it("register: blank sessionId, non-string scopeId, bad extension namespace, too many extensions", () => {
    expectError(
      decodeClientFrame.register({ type: "register", session: validSession, sessionId: "  \t" }),
      "register",
      "sessionId"
    )
    expectError(decodeClientFrame.register({ type: "register", session: validSession, scopeId: 5 }), "register", "scopeId")
    expectError(
      decodeClientFrame.register({
        type: "register",
        session: { ...validSession, extensions: [{ namespace: "Upper", ownerEligible: true }] }
      }),
      "register",
      "session.extensions.0.namespace"
    )
    const many = Array.from({ length: 33 }, (_, i) => ({ namespace: `ns${i}`, ownerEligible: false }))
    expectError(
      decodeClientFrame.register({ type: "register", session: { ...validSession, extensions: many } }),
      "register",
      "session.extensions"
    )
  })

  it("send: nested message fields are named by their full path", () => {
    const message = { id: "m", timestamp: 1, content: { text: "hi" } }
    expectError(decodeClientFrame.send({ type: "send", to: 1, message }), "send", "to")
    expectError(
      decodeClientFrame.send({ type: "send", to: "a", message: { ...message, content: {} } }),
      "send",
      "message.content.text"
    )
    expectError(
      decodeClientFrame.send({
        type: "send",
        to: "a",
        message: { ...message, content: { text: "t", attachments: [{ type: "image", name: "n", content: "c" }] } }
      }),
      "send",
      "message.content.attachments.0.type"
    )
    expectError(
      decodeClientFrame.send({ type: "send", to: "a", message: { ...message, expectsReply: "yes" } }),
      "send",
      "message.expectsReply"
    )
  })

  it("other client frames", () => {
    expectError(decodeClientFrame.health({ type: "health", requestId: 1 }), "health", "requestId")
    expectError(decodeClientFrame.list({ type: "list" }), "list", "requestId")
    expectError(decodeClientFrame.presence({ type: "presence", status: 3 }), "presence", "status")
    expectError(decodeClientFrame.cancel_ask({ type: "cancel_ask", messageId: null }), "cancel_ask", "messageId")
    expectError(
      decodeClientFrame.cancel_message({ type: "cancel_message", messageId: 2 }),
      "cancel_message",
      "messageId"
    )
    expectError(
      decodeClientFrame.message_receipt({
        type: "message_receipt",
        receipt: { messageId: "m", status: "read", timestamp: 1 }
      }),
      "message_receipt",
      "receipt.status"
    )
  })

  it("parseFrameText: not JSON, not an object, no string type", () => {
    expectError(parseFrameText("{nope"), "(unknown)", "")
    expectError(parseFrameText(""), "(unknown)", "")
    for (const raw of ["[]", "null", "42", "\"register\"", "true"]) expectError(parseFrameText(raw), "(unknown)", "")
    expectError(parseFrameText("{}"), "(unknown)", "type")
    expectError(parseFrameText("{\"type\":5}"), "(unknown)", "type")
    assert.deepStrictEqual(parseFrameText("{\"type\":\"x\",\"a\":1}"), { type: "x", a: 1 })
  })
})

describe("Finite: 1e400 (Infinity after JSON.parse) is rejected", () => {
  const registerWith = (field: string, literal: string) =>
    `{"type":"register","session":{"cwd":"/","model":"m","pid":1,"startedAt":1,"lastActivity":1,"${field}":${literal}}}`

  it.each(["pid", "startedAt", "lastActivity"])("register session.%s", (field) => {
    for (const literal of ["1e400", "-1e400"]) expectError(decodeText(registerWith(field, literal)), "register", `session.${field}`)
  })

  it("send message.timestamp / senderSequence, presence context, receipt timestamp", () => {
    expectError(
      decodeText("{\"type\":\"send\",\"to\":\"a\",\"message\":{\"id\":\"m\",\"timestamp\":1e400,\"content\":{\"text\":\"\"}}}"),
      "send",
      "message.timestamp"
    )
    expectError(
      decodeText(
        "{\"type\":\"send\",\"to\":\"a\",\"message\":{\"id\":\"m\",\"timestamp\":1,\"senderSequence\":-1e999,\"content\":{\"text\":\"\"}}}"
      ),
      "send",
      "message.senderSequence"
    )
    expectError(decodeText("{\"type\":\"presence\",\"contextPct\":1e400}"), "presence", "contextPct")
    expectError(
      decodeText("{\"type\":\"message_receipt\",\"receipt\":{\"messageId\":\"m\",\"status\":\"queued\",\"timestamp\":1e400}}"),
      "message_receipt",
      "receipt.timestamp"
    )
  })

  it("large but finite numbers are accepted", () => {
    const decoded = decodeText(registerWith("pid", "1.7976931348623157e308"))
    assert.isFalse(isFrameDecodeError(decoded))
  })
})

describe("broker frames (client side, P04)", () => {
  const info = { id: "a", cwd: "/", model: "m", pid: 1, startedAt: 1, lastActivity: 1 }

  it("valid broker frames decode", () => {
    const frames: ReadonlyArray<object> = [
      { type: "registered", sessionId: "a", features: ["exact-send-v1"] },
      { type: "registered", sessionId: "a" },
      { type: "error", error: "Too many registered intercom sessions" },
      { type: "health_ok", requestId: "r", protocol: "pi-intercom", version: 1 },
      { type: "sessions", requestId: "r", sessions: [info] },
      { type: "session_joined", session: { ...info, endpointEpoch: "e", trustedLocal: true } },
      { type: "session_left", sessionId: "a" },
      { type: "presence_update", session: { ...info, contextPct: 5 } },
      { type: "message", from: info, message: { id: "m", timestamp: 1, content: { text: "t" }, brokerReceivedAt: 2 } },
      { type: "delivered", messageId: "m", delivery: "queued", retryable: false, outcomeKnown: true },
      { type: "delivered", messageId: "m" },
      { type: "delivery_failed", messageId: "m", reason: "r", delivery: "failed", code: "E", retryable: true },
      { type: "delivery_failed", messageId: "m", reason: "Message cannot be cancelled by this session" },
      { type: "message_receipt", from: info, receipt: { messageId: "m", status: "injected", timestamp: 1 } },
      { type: "message_control", from: info, control: { messageId: "m", action: "supersede", timestamp: 1, supersededBy: "n" } }
    ]
    for (const frame of frames) {
      const decoded = decodeBrokerFrameText(JSON.stringify(frame))
      assert.isFalse(isFrameDecodeError(decoded), `${JSON.stringify(frame)}: ${isFrameDecodeError(decoded) ? decoded.message : ""}`)
      assert.deepStrictEqual(decoded, frame)
    }
  })

  it("rejects what a strict pi-intercom client rejects", () => {
    const bad: ReadonlyArray<string> = [
      JSON.stringify({ type: "health_ok", requestId: "r", protocol: "pi-intercom", version: 2 }),
      JSON.stringify({ type: "delivered", messageId: "m", delivery: "failed" }),
      JSON.stringify({ type: "delivery_failed", messageId: "m" }),
      JSON.stringify({ type: "delivery_failed", messageId: "m", reason: "r", delivery: "queued" }),
      JSON.stringify({ type: "registered", sessionId: "a", features: [1] }),
      JSON.stringify({ type: "session_joined", session: { id: "a", cwd: "/", model: "m", pid: 1, startedAt: 1 } }),
      JSON.stringify({ type: "extension_owner", namespace: "x" }),
      "{\"type\":\"session_joined\",\"session\":{\"id\":\"a\",\"cwd\":\"/\",\"model\":\"m\",\"pid\":1,\"startedAt\":1,\"lastActivity\":1e400}}"
    ]
    for (const raw of bad) assert.isTrue(isFrameDecodeError(decodeBrokerFrameText(raw)), raw)
  })

  it("a broker-frame failure names the frame's own type and the field", () => {
    const raw =
      "{\"type\":\"session_joined\",\"session\":{\"id\":\"a\",\"cwd\":\"/\",\"model\":\"m\",\"pid\":1,\"startedAt\":1,\"lastActivity\":1e400}}"
    expectError(decodeBrokerFrameText(raw), "session_joined", "session.lastActivity")
    expectError(
      decodeBrokerFrameText(JSON.stringify({ type: "delivery_failed", messageId: "m" })),
      "delivery_failed",
      "reason"
    )
  })
})

describe("the frame unions (plain Schema unions, no tagged-union helpers)", () => {
  const decodes = (schema: Schema.Decoder<unknown>, frame: object): boolean =>
    Exit.isSuccess(Schema.decodeUnknownExit(schema)(frame))

  it("decode a member of each kind and refuse an unknown type", () => {
    assert.isTrue(decodes(ClientFrame, { type: "list", requestId: "r" }))
    assert.isTrue(decodes(ClientFrame, { type: "observe", requestId: "r", watch: true }))
    assert.isFalse(decodes(ClientFrame, { type: "nonsense", requestId: "r" }))
    assert.isTrue(decodes(BrokerFrame, { type: "session_left", sessionId: "a" }))
    assert.isFalse(decodes(BrokerFrame, { type: "observe", requestId: "r" }))
    const events = { type: "observe_events", requestId: "r", events: [{ type: "traffic", entries: [], missed: 0 }] }
    assert.isTrue(decodes(ObserveBrokerFrame, events))
    assert.isFalse(decodes(ObserveBrokerFrame, { ...events, events: [{ type: "nonsense", entries: [], missed: 0 }] }))
  })
})
