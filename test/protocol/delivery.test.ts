/**
 * P45: delivery codes and reason strings are part of the wire contract — real
 * clients match on them — so they must stay verbatim. Plus our two additions,
 * the error-frame texts (P18) and feature negotiation (P12, P47).
 */
import { assert, describe, it } from "@effect/vitest"
import {
  BASE_FEATURES,
  DeliveryCode,
  ErrorText,
  EXACT_SEND_V1,
  isRetryable,
  MAX_FRAME_BYTES,
  negotiateFeatures,
  PROTOCOL_NAME,
  PROTOCOL_VERSION,
  Reason
} from "../../src/protocol/index.ts"

describe("P45 reason strings, verbatim", () => {
  it.each<[string, string]>([
    [Reason.invalidMessage, "Invalid message format"],
    [Reason.senderNotFound, "Sender session not found"],
    [Reason.invalidTarget, "Exact target requires an id and endpoint epoch"],
    [Reason.targetNotFound, "Session not found"],
    [Reason.targetRebound, "Target endpoint changed before delivery"],
    [Reason.ambiguousLive("Worker"), "Multiple sessions named \"Worker\" are connected. Use the session ID instead."],
    [
      Reason.ambiguousDisconnected("worker"),
      "Multiple disconnected sessions named \"worker\" can receive queued mail. Use the session ID instead."
    ],
    [Reason.replyNoAsk, "Reply target does not match a pending ask"],
    [Reason.replyWrongAsk, "Reply target does not match the pending ask"],
    [Reason.supersedeNoRoute, "Supersede target does not match a previous message from this sender to this receiver"],
    [Reason.supersedeDisconnected, "Supersede target is not connected"],
    [Reason.mutualAsk, "Mutual ask refused: target session is already waiting for a reply from this session."],
    [Reason.targetDisconnected, "Target session is not currently connected; blocking asks are not queued"],
    [Reason.messageIdReuse, "Message id was reused with different authored content"],
    [Reason.superseded("m-2"), "Superseded by m-2"],
    [Reason.cancelled, "Sender cancelled the delivery"],
    [Reason.cancelledQueued, "Sender cancelled the queued delivery"],
    [Reason.expired, "Mailbox delivery expired"],
    [Reason.evicted, "Mailbox capacity evicted the delivery"],
    [Reason.previousFailed, "Previous delivery failed"],
    [Reason.cannotCancel, "Message cannot be cancelled by this session"],
    [Reason.selfTarget, "Cannot message the current session"]
  ])("%s", (actual, expected) => {
    assert.strictEqual(actual, expected)
  })

  it("the ambiguity reason quotes the target as given, even when it is a prefix", () => {
    assert.strictEqual(
      Reason.ambiguousLive("ab"),
      "Multiple sessions named \"ab\" are connected. Use the session ID instead."
    )
  })

  it("a supersede of a message settled already is refused with a reason that starts as the base one does", () => {
    assert.isTrue(Reason.supersedeCancelled.startsWith(`${Reason.supersedeNoRoute}: `))
    const superseded = Reason.supersedeSuperseded(Reason.superseded("m-2"))
    assert.isTrue(superseded.startsWith(`${Reason.supersedeNoRoute}: `))
    assert.include(superseded, "Superseded by m-2")
  })

  it("the too-large reason names both sizes", () => {
    const reason = Reason.tooLarge(MAX_FRAME_BYTES + 17, MAX_FRAME_BYTES)
    assert.include(reason, String(MAX_FRAME_BYTES + 17))
    assert.include(reason, String(MAX_FRAME_BYTES))
  })

  it("the too-large reason, for a message with extension fields, says how many of its bytes they are and names them", () => {
    assert.strictEqual(
      Reason.tooLarge(MAX_FRAME_BYTES + 1, MAX_FRAME_BYTES, 65, ["askTimeoutMs", "delivery"]),
      `Message is too large to deliver: the forwarded frame would be ${MAX_FRAME_BYTES + 1} bytes (65 of them for the askTimeoutMs and delivery fields a recipient may be given with it), over the ${MAX_FRAME_BYTES}-byte frame limit. Send a smaller message or attach less content.`
    )
    assert.include(Reason.tooLarge(MAX_FRAME_BYTES + 1, MAX_FRAME_BYTES, 72, ["traceparent"]), "(72 of them for the traceparent field a recipient")
    assert.include(Reason.tooLarge(9, 8, 3, ["askTimeoutMs", "channel", "delivery"]), "the askTimeoutMs, channel and delivery fields")
  })
})

describe("P45 codes", () => {
  it("every code, verbatim", () => {
    assert.deepStrictEqual({ ...DeliveryCode }, {
      InvalidMessage: "E_INVALID_MESSAGE",
      SenderNotFound: "E_SENDER_NOT_FOUND",
      InvalidTarget: "E_INVALID_TARGET",
      TargetNotFound: "E_TARGET_NOT_FOUND",
      TargetRebound: "E_TARGET_REBOUND",
      AmbiguousTarget: "E_AMBIGUOUS_TARGET",
      ReplyTarget: "E_REPLY_TARGET",
      SupersedeTarget: "E_SUPERSEDE_TARGET",
      MutualAsk: "E_MUTUAL_ASK",
      TargetDisconnected: "E_TARGET_DISCONNECTED",
      MessageIdReuse: "E_MESSAGE_ID_REUSE",
      DeliverySuperseded: "E_DELIVERY_SUPERSEDED",
      DeliveryCancelled: "E_DELIVERY_CANCELLED",
      DeliveryExpired: "E_DELIVERY_EXPIRED",
      DeliveryEvicted: "E_DELIVERY_EVICTED",
      DeliveryFailed: "E_DELIVERY_FAILED",
      SelfTarget: "E_SELF_TARGET",
      MessageTooLarge: "E_MESSAGE_TOO_LARGE",
      TooManyAsks: "E_TOO_MANY_ASKS",
      CrossGroup: "E_CROSS_GROUP",
      SupervisorUnauthorized: "E_SUPERVISOR_UNAUTHORIZED",
      SupervisorTarget: "E_SUPERVISOR_TARGET",
      ReplaceQueueFull: "E_REPLACE_QUEUE_FULL",
      DeliveryUnsupported: "E_DELIVERY_UNSUPPORTED"
    })
  })

  it("only E_TARGET_REBOUND (P45), E_DELIVERY_FAILED (a durable broker that could not save), E_TOO_MANY_ASKS and E_REPLACE_QUEUE_FULL (their texts say wait or retry; not recorded) are retryable", () => {
    const retryable = Object.values(DeliveryCode).filter(isRetryable)
    assert.sameMembers(retryable, ["E_TARGET_REBOUND", "E_DELIVERY_FAILED", "E_TOO_MANY_ASKS", "E_REPLACE_QUEUE_FULL"])
  })

  it("error-frame text for the session cap (P18)", () => {
    assert.strictEqual(ErrorText.tooManySessions, "Too many registered intercom sessions")
  })

  it("health identity (P20)", () => {
    assert.strictEqual(PROTOCOL_NAME, "pi-intercom")
    assert.strictEqual(PROTOCOL_VERSION, 1)
    assert.strictEqual(MAX_FRAME_BYTES, 1_048_576)
  })
})

describe("feature negotiation", () => {
  it("a base client gets the base features, including exact-send-v1 (P12, P47)", () => {
    assert.strictEqual(EXACT_SEND_V1, "exact-send-v1")
    assert.include(negotiateFeatures(undefined), "exact-send-v1")
    assert.deepStrictEqual(negotiateFeatures([]), BASE_FEATURES)
  })

  it("unknown requests are not granted; the extension bus is not offered", () => {
    const granted = negotiateFeatures(["extension-bus-v1", "made-up", "exact-send-v1"])
    assert.notInclude(granted, "extension-bus-v1")
    assert.notInclude(granted, "made-up")
    assert.include(granted, "exact-send-v1")
    assert.strictEqual(new Set(granted).size, granted.length)
  })
})
