/**
 * The `message` frame's text (src/broker/encode.ts): the broker's timestamps
 * are spliced onto the message's own JSON; the frame must read exactly as
 * `JSON.stringify` of the message with them added.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { deliveredFrame, messageFrame } from "../../src/broker/encode.ts"
import { decodeMessage, isFrameDecodeError } from "../../src/protocol/decode.ts"

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

describe("messageFrame", () => {
  it("property: the message reads as JSON.stringify of the message with the broker's timestamps added", () => {
    fc.assert(fc.property(message, fc.integer(), fc.integer(), (decoded, receivedAt, deliveredAt) => {
      const frame = JSON.parse(messageFrame(`{"id":"s1"}`, decoded, receivedAt, deliveredAt))
      assert.strictEqual(
        JSON.stringify(frame.message),
        JSON.stringify({ ...decoded, brokerReceivedAt: receivedAt, brokerDeliveredAt: deliveredAt })
      )
      assert.deepStrictEqual(frame.from, { id: "s1" })
    }))
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
})
