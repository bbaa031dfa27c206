/**
 * The `message` and `delivered` frames (src/broker/encode.ts,
 * src/broker/frameParts.ts): the broker's timestamps are spliced onto the
 * message's own JSON, and the frame must read exactly as `JSON.stringify` of
 * the message with them added. Kept in parts, a frame must frame to exactly
 * the bytes of the string the broker built before it kept frames in parts
 * (`stringMessageFrame`, `stringDeliveredFrame` below: that builder, as it was).
 * The membership feed's `session_joined` in parts (`JoinedFrameParts`) must
 * frame to the bytes of the template string the feed cached before.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { deliveredFrame, deliveredFrameParts, messageFrame } from "../../src/broker/encode.ts"
import { JoinedFrameParts } from "../../src/broker/frameParts.ts"
import { decodeMessage, isFrameDecodeError } from "../../src/protocol/decode.ts"
import type { DeliveryChoice } from "../../src/protocol/deliveryModes.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { encodeFrames, encodeFramesInto, FrameScratch, frameText, type OutFrame } from "../../src/protocol/framing.ts"

const optionalNumber = fc.option(fc.integer(), { nil: undefined })
const optionalId = fc.option(fc.string({ maxLength: 6 }), { nil: undefined })

/** Decoded messages (what the broker forwards), with or without client-supplied broker timestamps. */
const message = fc.record({
  id: fc.string({ maxLength: 6 }),
  timestamp: fc.integer(),
  content: fc.record({ text: fc.string() }),
  senderSequence: optionalNumber,
  brokerReceivedAt: optionalNumber,
  brokerDeliveredAt: optionalNumber,
  replyTo: optionalId,
  expectsReply: fc.option(fc.boolean(), { nil: undefined })
}).map((fields) => {
  const decoded = decodeMessage(JSON.parse(JSON.stringify(fields)))
  if (isFrameDecodeError(decoded)) throw new Error(decoded.message)
  return decoded
})

const q = JSON.stringify

/** The `message` frame as one string, as encode.ts built it before frames were kept in parts. */
const stringMessageFrame = (
  fromJson: string,
  message: Message,
  receivedAt: number,
  deliveredAt: number,
  askTimeoutMs?: number,
  channel?: "supervisor",
  replyError?: string,
  delivery?: DeliveryChoice,
  traceparent?: string
): string => {
  const stamped = (): string => {
    if (message.brokerReceivedAt !== undefined || message.brokerDeliveredAt !== undefined) {
      return q({ ...message, brokerReceivedAt: receivedAt, brokerDeliveredAt: deliveredAt })
    }
    const json = q(message)
    const received = q(receivedAt)
    return `${json.slice(0, -1)},"brokerReceivedAt":${received},"brokerDeliveredAt":${
      deliveredAt === receivedAt ? received : q(deliveredAt)
    }}`
  }
  const deliveryFields = (choice: DeliveryChoice): string =>
    `,"delivery":"${choice.delivery}"${choice.queueMode === undefined ? "" : `,"queueMode":"${choice.queueMode}"`}${
      choice.threadId === undefined ? "" : `,"threadId":${q(choice.threadId)}`
    }`
  return `{"type":"message","from":${fromJson},"message":${stamped()}${
    askTimeoutMs === undefined ? "" : `,"askTimeoutMs":${askTimeoutMs}`
  }${channel === undefined ? "" : `,"channel":"${channel}"`}${replyError === undefined ? "" : `,"replyError":${q(replyError)}`}${
    delivery === undefined ? "" : deliveryFields(delivery)
  }${traceparent === undefined ? "" : `,"traceparent":"${traceparent}"`}}`
}

/** The `delivered` frame as one string, as encode.ts built it before. */
const stringDeliveredFrame = (messageId: string, delivery: "socket_delivered" | "queued"): string =>
  `{"type":"delivered","messageId":${q(messageId)},"delivery":"${delivery}","retryable":false,"outcomeKnown":true}`

/** Any text, lone surrogates and characters JSON escapes included. */
const anyText = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({ unit: fc.constantFrom("a", "é", "€", "😀", "\ud800", "\udfff", "\"", "\\", "\n", "\u0000", "\u001f", "\u007f", "\u2028") })
)

/** Broker times: safe integers mostly, and the numbers `JSON.stringify` writes otherwise. */
const time = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 45 }),
  fc.maxSafeInteger(),
  fc.integer(),
  fc.constantFrom(0, -0, 9, 10, 99, 100, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 53, 1e21, 1.5, -0.25, Number.NaN, Number.POSITIVE_INFINITY),
  fc.double()
)

/** A sender's SessionInfo JSON (any text in its fields). */
const fromJson = fc.record({ id: anyText, name: fc.option(anyText, { nil: undefined }), pid: fc.integer() }).map((info) => q(info))

/** A decoded message whose text and ids may hold any character. */
const anyMessage = fc.record({
  id: anyText,
  timestamp: fc.integer(),
  content: fc.record({ text: anyText }),
  replyTo: fc.option(anyText, { nil: undefined }),
  brokerReceivedAt: fc.option(fc.integer(), { freq: 8, nil: undefined })
}).map((fields) => {
  const decoded = decodeMessage(JSON.parse(JSON.stringify(fields)))
  if (isFrameDecodeError(decoded)) throw new Error(decoded.message)
  return decoded
})

const extensions = fc.record({
  askTimeoutMs: fc.option(fc.nat(), { nil: undefined }),
  channel: fc.option(fc.constant("supervisor" as const), { nil: undefined }),
  replyError: fc.option(anyText, { nil: undefined }),
  delivery: fc.option(
    fc.record({
      delivery: fc.constantFrom("steer" as const, "queue" as const, "passive" as const),
      queueMode: fc.option(fc.constantFrom("stack" as const, "replace" as const), { nil: undefined }),
      threadId: fc.option(anyText, { nil: undefined })
    }),
    { nil: undefined }
  ),
  traceparent: fc.option(fc.constant("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), { nil: undefined })
})

/** The frame as the socket writes it: through the reused scratch buffer, after a text frame (an offset). */
const onTheWire = (frame: OutFrame, scratch: FrameScratch): Buffer =>
  Buffer.from(encodeFramesInto(["{}", frame], scratch))

describe("messageFrame", () => {
  it("property: the message reads as JSON.stringify of the message with the broker's timestamps added", () => {
    fc.assert(fc.property(message, fc.integer(), fc.integer(), (decoded, receivedAt, deliveredAt) => {
      const frame = JSON.parse(frameText(messageFrame(`{"id":"s1"}`, decoded, receivedAt, deliveredAt)))
      assert.strictEqual(
        JSON.stringify(frame.message),
        JSON.stringify({ ...decoded, brokerReceivedAt: receivedAt, brokerDeliveredAt: deliveredAt })
      )
      assert.deepStrictEqual(frame.from, { id: "s1" })
    }))
  })

  it("property: in parts, it frames to exactly the bytes of the string the broker built before", () => {
    const scratch = new FrameScratch()
    fc.assert(
      fc.property(fromJson, anyMessage, time, time, fc.boolean(), extensions, (from, decoded, receivedAt, later, same, ext) => {
        const deliveredAt = same ? receivedAt : later
        const frame = messageFrame(
          from, decoded, receivedAt, deliveredAt,
          ext.askTimeoutMs, ext.channel, ext.replyError, ext.delivery, ext.traceparent
        )
        const expected = stringMessageFrame(
          from, decoded, receivedAt, deliveredAt,
          ext.askTimeoutMs, ext.channel, ext.replyError, ext.delivery, ext.traceparent
        )
        assert.strictEqual(frameText(frame), expected)
        assert.strictEqual(frame.length, expected.length)
        assert.isTrue(onTheWire(frame, scratch).equals(encodeFrames(["{}", expected])))
      }),
      { numRuns: 1_000 }
    )
  })

  it("a plain message is kept in parts; one with broker timestamps of its own is one string", () => {
    const plain = decodeMessage({ id: "m1", timestamp: 1, content: { text: "hi" } })
    const stamped = decodeMessage({ id: "m2", timestamp: 1, content: { text: "hi" }, brokerReceivedAt: 5 })
    if (isFrameDecodeError(plain) || isFrameDecodeError(stamped)) throw new Error("fixture")
    assert.strictEqual(typeof messageFrame(`{"id":"s1"}`, plain, 10, 10), "object")
    assert.strictEqual(typeof messageFrame(`{"id":"s1"}`, stamped, 10, 10), "string")
  })
})

describe("deliveredFrame", () => {
  it("property: a delivered frame is JSON.stringify of its fields, for either delivery", () => {
    fc.assert(
      fc.property(fc.string(), fc.constantFrom("socket_delivered" as const, "queued" as const), (messageId, delivery) => {
        assert.strictEqual(
          deliveredFrame(messageId, delivery),
          JSON.stringify({ type: "delivered", messageId, delivery, retryable: false, outcomeKnown: true })
        )
      })
    )
  })

  it("property: in parts, it frames to exactly the bytes of the string the broker built before", () => {
    const scratch = new FrameScratch()
    fc.assert(
      fc.property(anyText, fc.constantFrom("socket_delivered" as const, "queued" as const), (messageId, delivery) => {
        const frame = deliveredFrameParts(messageId, delivery)
        const expected = stringDeliveredFrame(messageId, delivery)
        assert.strictEqual(deliveredFrame(messageId, delivery), expected)
        assert.strictEqual(frameText(frame), expected)
        assert.strictEqual(frame.length, expected.length)
        assert.isTrue(onTheWire(frame, scratch).equals(encodeFrames(["{}", expected])))
      }),
      { numRuns: 1_000 }
    )
  })
})

describe("JoinedFrameParts", () => {
  it("property: in parts, a session_joined frames to exactly the bytes of the string the feed cached before", () => {
    const scratch = new FrameScratch()
    fc.assert(
      fc.property(fromJson, (info) => {
        const frame = new JoinedFrameParts(info)
        const expected = `{"type":"session_joined","session":${info}}`
        assert.strictEqual(frameText(frame), expected)
        assert.strictEqual(frame.length, expected.length)
        assert.isTrue(onTheWire(frame, scratch).equals(encodeFrames(["{}", expected])))
      }),
      { numRuns: 1_000 }
    )
  })
})
