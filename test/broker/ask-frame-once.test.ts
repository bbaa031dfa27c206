/**
 * An ask's message is stringified once per send, whatever its recipient's
 * grants (issue 16): a base recipient (not granted `ask-timeout-v1`) is
 * written the frame the size check built, and exactly the base frame, with
 * no field only an extension client was granted; a recipient granted
 * `ask-timeout-v1` is written that frame with the ask's `askTimeoutMs`
 * spliced in after the message, not a second encoding. `Encode.messageFrame`
 * (the one place a `message` frame's message is stringified) is wrapped by a
 * counter that calls through: nothing it builds changes. `extendsBaseFrame`,
 * which decides whether the base frame is written as it is, is held to
 * `messageFrameFor` for every extension field, granted or not; `liveFrameFor`,
 * which builds the frame written, is held to `messageFrameFor`'s bytes by a
 * property over every combination of fields and grants, also when handed the
 * size check's longest tail (`longestTail`) to reuse. Driven by hand
 * (handRouter.ts): each batch is handled and its output written in the
 * test's own step.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { vi } from "vitest"
import fc from "fast-check"
import { extendsBaseFrame, liveFrameFor, longestTail, messageFrameFor } from "../../src/broker/RecipientFrames.ts"
import * as Encode from "../../src/broker/encode.ts"
import type { Mail, Peer } from "../../src/broker/Peer.ts"
import { STEER } from "../../src/protocol/deliveryModes.ts"
import { decodeMessage, isFrameDecodeError } from "../../src/protocol/decode.ts"
import { ASK_TIMEOUT_V1, DELIVERY_V1, REPLY_ERROR_V1, SUPERVISOR_V1, TRACE_V1 } from "../../src/protocol/features.ts"
import { encodeFrames, encodeFramesInto, FrameScratch, frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

/**
 * How many `message` frames were encoded (`Encode.messageFrame` calls), and how many extension-field tails were built
 * outside it (`Encode.messageTail` calls from other modules), since the counters were last reset.
 */
const encoded = vi.hoisted(() => ({ messageFrames: 0, tails: 0 }))

vi.mock("../../src/broker/encode.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../src/broker/encode.ts")>()
  return {
    ...original,
    messageFrame: (...args: Parameters<typeof original.messageFrame>) => {
      encoded.messageFrames++
      return original.messageFrame(...args)
    },
    messageTail: (...args: Parameters<typeof original.messageTail>) => {
      encoded.tails++
      return original.messageTail(...args)
    }
  }
})

const ANNOUNCED_MS = 120_000

interface WrittenMessage {
  readonly keys: ReadonlyArray<string>
  readonly message: Message
  readonly askTimeoutMs?: number
}

/** An asker granted `ask-timeout-v1` asks `recipientFeatures`' session (announcing ANNOUNCED_MS): what it was written, and how many encodings the send made. */
const askOnce = (recipientFeatures: ReadonlyArray<string>) => Effect.gen(function*() {
  const { attach, batch } = yield* handRouter({})
  const written = new Map<Peer, Array<OutFrame>>()
  const connect = (id: number): Peer => {
    const frames: Array<OutFrame> = []
    const peer = attach({
      ...fakeConnection(id, false),
      write: (out: ReadonlyArray<OutFrame>) => {
        frames.push(...out)
        return undefined
      }
    })
    written.set(peer, frames)
    return peer
  }
  const asker = connect(1)
  batch(asker, [registerFrame({ sessionId: "asker", frame: { features: [ASK_TIMEOUT_V1] } })])
  const recipient = connect(2)
  batch(recipient, [registerFrame({ sessionId: "recipient", frame: { features: recipientFeatures } })])
  const ask = message("well?", { expectsReply: true })
  encoded.messageFrames = 0
  encoded.tails = 0
  batch(asker, [{ type: "send", to: "recipient", message: ask, askTimeoutMs: ANNOUNCED_MS }])
  const encodings = encoded.messageFrames
  const tails = encoded.tails
  const messages = (written.get(recipient) ?? []).flatMap((frame): Array<WrittenMessage> => {
    const parsed: Record<string, unknown> & WrittenMessage = JSON.parse(frameText(frame))
    return parsed["type"] === "message" ? [{ ...parsed, keys: Object.keys(parsed) }] : []
  })
  assert.strictEqual(messages.length, 1, "the recipient was written the ask once")
  return { ask, encodings, tails, written: messages[0]! }
})

describe("an ask's message frame, encoded once per encoding needed", () => {
  it.effect("a base recipient is written exactly the base frame (no askTimeoutMs), its message encoded once", () =>
    Effect.gen(function*() {
      const { ask, encodings, written } = yield* askOnce([])
      assert.deepStrictEqual(written.keys, ["type", "from", "message"])
      const { brokerReceivedAt, brokerDeliveredAt, ...sent } = written.message
      assert.deepStrictEqual(sent, ask)
      assert.isNumber(brokerReceivedAt)
      assert.strictEqual(brokerDeliveredAt, brokerReceivedAt)
      assert.strictEqual(encodings, 1, "the size check's frame is the one written")
    }))

  it.effect("a recipient granted ask-timeout-v1 is written the extended frame, with the ask's askTimeoutMs, its message encoded once and its tail built once (the size check's)", () =>
    Effect.gen(function*() {
      const { ask, encodings, tails, written } = yield* askOnce([ASK_TIMEOUT_V1])
      assert.deepStrictEqual(written.keys, ["type", "from", "message", "askTimeoutMs"])
      assert.strictEqual(written.askTimeoutMs, ANNOUNCED_MS)
      const { brokerReceivedAt, brokerDeliveredAt, ...sent } = written.message
      assert.deepStrictEqual(sent, ask)
      assert.isNumber(brokerReceivedAt)
      assert.strictEqual(brokerDeliveredAt, brokerReceivedAt)
      assert.strictEqual(encodings, 1, "the size check's frame, with askTimeoutMs spliced in, is the one written")
      assert.strictEqual(tails, 1, "the tail the size check built is the one spliced in (RecipientFrames.longestTail)")
    }))
})

const STAMP = 1_000_000

/** A mail with each extension field in `fields` set, received at STAMP. */
const mailWith = (fields: ReadonlySet<string>): Mail => ({
  recordKey: "k",
  senderKey: "s",
  senderId: "asker",
  senderIdentity: undefined,
  fromJson: `{"id":"asker"}`,
  message: message("a question", { expectsReply: true, timestamp: 0 }),
  brokerReceivedAt: STAMP,
  spaceKey: "",
  targetKey: "t",
  targetId: "recipient",
  targetIdentity: undefined,
  queuedAt: STAMP,
  askTimeoutMs: fields.has("askTimeoutMs") ? ANNOUNCED_MS : undefined,
  channel: fields.has("channel") ? "supervisor" : undefined,
  replyError: fields.has("replyError") ? "it failed" : undefined,
  delivery: fields.has("delivery") ? STEER : undefined,
  traceparent: fields.has("traceparent") ? "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" : undefined
})

const FIELDS: ReadonlyArray<readonly [field: string, feature: string]> = [
  ["askTimeoutMs", ASK_TIMEOUT_V1],
  ["channel", SUPERVISOR_V1],
  ["delivery", DELIVERY_V1],
  ["traceparent", TRACE_V1],
  ["replyError", REPLY_ERROR_V1]
]

describe("extendsBaseFrame", () => {
  it("is false exactly when messageFrameFor's frame for the recipient is the base frame, for each extension field alone, granted or not", () => {
    for (const [field, feature] of FIELDS) {
      for (const granted of [false, true]) {
        const mail = mailWith(new Set([field]))
        const recipient = { features: new Set(granted ? [feature] : []) }
        const frame = frameText(messageFrameFor(mail, recipient, STAMP))
        const base = frameText(Encode.messageFrame(mail.fromJson, mail.message, STAMP, STAMP))
        assert.strictEqual(extendsBaseFrame(mail, recipient), frame !== base, `${field}, granted: ${granted}`)
      }
    }
    const plain = mailWith(new Set())
    const everything = { features: new Set(FIELDS.map(([, feature]) => feature)) }
    assert.isFalse(extendsBaseFrame(plain, everything), "a plain message with every grant")
  })
})

/** Any text, characters JSON escapes and lone surrogates included. */
const anyText = fc.string({
  unit: fc.constantFrom("a", "é", "€", "😀", "\ud800", "\"", "\\", "\n", "\u0000", "\u2028")
})

/** A decoded message whose text may hold any character; some carry broker timestamps of their own (a one-string frame). */
const anyMessage = fc.record({
  id: anyText,
  timestamp: fc.integer(),
  content: fc.record({ text: anyText }),
  replyTo: fc.option(anyText, { nil: undefined }),
  expectsReply: fc.option(fc.boolean(), { nil: undefined }),
  brokerReceivedAt: fc.option(fc.integer(), { freq: 4, nil: undefined })
}).map((fields) => {
  const decoded = decodeMessage(JSON.parse(JSON.stringify(fields)))
  if (isFrameDecodeError(decoded)) throw new Error(decoded.message)
  return decoded
})

/** Every extension field a mail may carry, each present or not, and which of their extensions the recipient was granted. */
const extensionsAndGrants = fc.record({
  askTimeoutMs: fc.option(fc.nat(), { nil: undefined }),
  channel: fc.option(fc.constant("supervisor" as const), { nil: undefined }),
  replyError: fc.option(anyText, { freq: 4, nil: undefined }),
  delivery: fc.option(
    fc.record({
      delivery: fc.constantFrom("steer" as const, "queue" as const, "passive" as const),
      queueMode: fc.option(fc.constantFrom("stack" as const, "replace" as const), { nil: undefined }),
      threadId: fc.option(anyText, { nil: undefined })
    }),
    { nil: undefined }
  ),
  traceparent: fc.option(fc.constant("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"), { nil: undefined }),
  grants: fc.subarray([ASK_TIMEOUT_V1, SUPERVISOR_V1, DELIVERY_V1, TRACE_V1, REPLY_ERROR_V1])
})

describe("liveFrameFor", () => {
  it("property: for every combination of extension fields and grants, the frame written (built from the size check's, with or without its longest tail to reuse) parses to, and is byte for byte, messageFrameFor's", () => {
    const scratch = new FrameScratch()
    fc.assert(
      fc.property(anyText, anyMessage, fc.integer({ min: 0, max: 2 ** 45 }), extensionsAndGrants, (id, sent, stamp, ext) => {
        const fromJson = JSON.stringify({ id, pid: 1 })
        const mail: Mail = {
          ...mailWith(new Set()),
          fromJson,
          message: sent,
          brokerReceivedAt: stamp,
          askTimeoutMs: ext.askTimeoutMs,
          channel: ext.channel,
          replyError: ext.replyError,
          delivery: ext.delivery,
          traceparent: ext.traceparent
        }
        const recipient = { features: new Set(ext.grants) }
        // The size check's frame, as the send pipeline builds it for a mail without `replyError` (with one it is not read).
        const base = Encode.messageFrame(fromJson, sent, stamp, stamp)
        const written = liveFrameFor(base, mail, recipient)
        const expected = frameText(messageFrameFor(mail, recipient, stamp))
        assert.deepStrictEqual(JSON.parse(frameText(written)), JSON.parse(expected))
        assert.strictEqual(frameText(written), expected)
        assert.strictEqual(written.length, expected.length)
        assert.isTrue(Buffer.from(encodeFramesInto(["{}", written], scratch)).equals(encodeFrames(["{}", expected])))
        // The size check's tail (every field the mail carries) handed over: used only for a recipient granted them all.
        assert.strictEqual(frameText(liveFrameFor(base, mail, recipient, longestTail(mail))), expected)
      }),
      { numRuns: 1_000 }
    )
  })
})
