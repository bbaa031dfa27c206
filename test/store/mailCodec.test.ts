/**
 * `mailCodec`: the replay record's fingerprint and outcome are written as the
 * JSON `JSON.stringify` gives for them (the encoders write it out directly,
 * for the commit's CPU), and decode back to what was encoded; a fingerprint
 * read through an outbound record's getters encodes as its plain copy would;
 * mail is written without what the running broker alone keeps on it (a
 * short-lived sender's end, its place in the acceptance order).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { DELIVERED, type Fingerprint, type Outcome, QUEUED } from "../../src/broker/DeliveryRecords.ts"
import { OutboundRecord } from "../../src/broker/OutboundRecord.ts"
import type { Mail } from "../../src/broker/Peer.ts"
import {
  CorruptRow,
  decodeEdge,
  decodeMail,
  decodeRecord,
  encodeEdge,
  encodeFingerprint,
  encodeMail,
  encodeOutcome
} from "../../src/store/mailCodec.ts"
import { ACCEPTED } from "../../src/store/records.ts"

const optional = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: undefined })
const number = fc.oneof(fc.integer(), fc.integer({ min: -1, max: 10 }), fc.double({ noNaN: true, noDefaultInfinity: true }))

/** Fingerprints with every field present, in the order the broker's fields are listed (`Fingerprint`). */
const fingerprintArb: fc.Arbitrary<Fingerprint> = fc.record({
  targetId: fc.string(),
  textLength: number,
  textHash: number,
  attachmentsLength: number,
  attachmentsHash: number,
  replyTo: optional(fc.string()),
  expectsReply: optional(fc.boolean()),
  supersedes: optional(fc.string()),
  retryOf: optional(fc.string()),
  replyErrorLength: number,
  replyErrorHash: number
})

describe("mailCodec", () => {
  it("encodeFingerprint writes what JSON.stringify writes, and decodes back to the fingerprint", () => {
    fc.assert(
      fc.property(fingerprintArb, (f) => {
        const text = encodeFingerprint(f)
        assert.strictEqual(text, JSON.stringify(f))
        const decoded = decodeRecord("k", "s", text, encodeOutcome(DELIVERED), 1)
        assert.notInstanceOf(decoded, CorruptRow)
        if (!(decoded instanceof CorruptRow)) {
          // -0 is written as 0, as JSON.stringify writes it.
          const plain = JSON.parse(JSON.stringify(f)) as Fingerprint
          assert.deepStrictEqual(decoded.fingerprint, { ...plain, replyTo: f.replyTo, expectsReply: f.expectsReply, supersedes: f.supersedes, retryOf: f.retryOf })
        }
      }),
      { numRuns: 500, seed: 13 }
    )
  })

  it("encodeOutcome writes what JSON.stringify writes, the constant successes included", () => {
    const outcomes: ReadonlyArray<Outcome> = [
      DELIVERED,
      QUEUED,
      { ok: true, delivery: "socket_delivered" },
      { ok: true, delivery: "socket_delivered", receiverId: "bob-2" },
      { ok: false, code: "E_DELIVERY_EXPIRED", reason: "expired \"now\"", retryable: false }
    ]
    for (const outcome of outcomes) assert.strictEqual(encodeOutcome(outcome), JSON.stringify(outcome))
  })

  it("an outbound record, read through its getters, encodes as the plain fingerprint it holds", () => {
    const message = { id: "m1", timestamp: 1, content: { text: "hello" }, replyTo: "ask-1", expectsReply: true }
    const record = OutboundRecord.of("scope\u0000alice", "bob", message, undefined)
    const plain: Fingerprint = {
      targetId: record.targetId,
      textLength: record.textLength,
      textHash: record.textHash,
      attachmentsLength: record.attachmentsLength,
      attachmentsHash: record.attachmentsHash,
      replyTo: record.replyTo,
      expectsReply: record.expectsReply,
      supersedes: record.supersedes,
      retryOf: record.retryOf,
      replyErrorLength: record.replyErrorLength,
      replyErrorHash: record.replyErrorHash
    }
    assert.strictEqual(plain.replyTo, "ask-1")
    assert.strictEqual(encodeFingerprint(record), JSON.stringify(plain))
  })

  it("stored mail keeps its trace context: encodeMail then decodeMail gives back its traceparent", () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    const mail: Mail = {
      recordKey: "\u0000alice\u0001m1",
      senderKey: "\u0000alice",
      senderId: "alice",
      senderIdentity: undefined,
      fromJson: JSON.stringify({ id: "alice", name: "alice" }),
      message: { id: "m1", timestamp: 1, content: { text: "hi" } },
      brokerReceivedAt: 10,
      spaceKey: "",
      targetKey: "\u0000bob",
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 10,
      askTimeoutMs: undefined,
      traceparent
    }
    const decoded = decodeMail(mail.recordKey, encodeMail(mail))
    assert.notInstanceOf(decoded, CorruptRow)
    if (!(decoded instanceof CorruptRow)) assert.strictEqual(decoded.traceparent, traceparent)
  })

  it("a short-lived sender's end is not stored: encodeMail leaves senderEnd out, as if the mail had none", () => {
    const mail: Mail = {
      recordKey: "\u0000cli\u0001m2",
      senderKey: "\u0000cli",
      senderId: "cli",
      senderIdentity: undefined,
      senderEnd: { ended: false },
      fromJson: JSON.stringify({ id: "cli" }),
      message: { id: "m2", timestamp: 1, content: { text: "hi" } },
      brokerReceivedAt: 10,
      spaceKey: "",
      targetKey: "\u0000bob",
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 10,
      askTimeoutMs: undefined
    }
    const text = encodeMail(mail)
    assert.notInclude(text, "senderEnd")
    assert.strictEqual(text, encodeMail({ ...mail, senderEnd: undefined }))
    assert.deepStrictEqual(mail.senderEnd, { ended: false }, "the mail itself was changed")
  })

  it("a mail's place in the acceptance order is not stored: encodeMail writes it as if the mail had none, given back or not", () => {
    const mail: Mail = {
      recordKey: "\u0000alice\u0001m3",
      senderKey: "\u0000alice",
      senderId: "alice",
      senderIdentity: undefined,
      fromJson: JSON.stringify({ id: "alice" }),
      message: { id: "m3", timestamp: 1, content: { text: "hi" } },
      brokerReceivedAt: 10,
      spaceKey: "",
      targetKey: "\u0000bob",
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 10,
      askTimeoutMs: undefined
    }
    const accepted: Mail = { ...mail, [ACCEPTED]: 7 }
    assert.strictEqual(encodeMail(accepted), encodeMail(mail))
    assert.strictEqual(encodeMail(accepted, 4), encodeMail(mail, 4))
    const decoded = decodeMail(mail.recordKey, encodeMail(accepted))
    assert.notInstanceOf(decoded, CorruptRow)
    if (!(decoded instanceof CorruptRow)) assert.isUndefined(decoded[ACCEPTED], "a decoded row came back with a place in the acceptance order: the row held it (the restore gives it one, RestoreOrder.acceptInSeqOrder)")
    // Every copy the broker makes of its mail (given back, requeued: `{ ...mail, queuedAt }`) keeps the place.
    assert.strictEqual({ ...accepted, queuedAt: 11 }[ACCEPTED], 7)
  })

  it("a stored reply keeps the ask edge it closed: restored and then lost, it can still reopen that ask", () => {
    const answers = {
      messageKey: "\u0000bob\u0001ask-1",
      messageId: "ask-1",
      askerKey: "\u0000bob",
      targetKey: "\u0000alice",
      deadline: 600_010,
      openedAt: 10
    }
    const mail: Mail = {
      recordKey: "\u0000alice\u0001m1",
      senderKey: "\u0000alice",
      senderId: "alice",
      senderIdentity: undefined,
      fromJson: JSON.stringify({ id: "alice", name: "alice" }),
      message: { id: "m1", timestamp: 1, replyTo: "ask-1", content: { text: "4" } },
      brokerReceivedAt: 20,
      spaceKey: "",
      targetKey: "\u0000bob",
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 20,
      askTimeoutMs: undefined,
      answers
    }
    const decoded = decodeMail(mail.recordKey, encodeMail(mail))
    assert.notInstanceOf(decoded, CorruptRow)
    if (!(decoded instanceof CorruptRow)) assert.deepStrictEqual(decoded.answers, answers)
  })

  it("an ask's due time on the clock is stored: its mail's askDueAt and its edge's dueAt decode back (review revby by1)", () => {
    const mail: Mail = {
      recordKey: "\u0000alice\u0001q1",
      senderKey: "\u0000alice",
      senderId: "alice",
      senderIdentity: undefined,
      fromJson: JSON.stringify({ id: "alice", name: "alice" }),
      message: { id: "q1", timestamp: 1, expectsReply: true, content: { text: "?" } },
      brokerReceivedAt: 3_600_010,
      spaceKey: "",
      targetKey: "\u0000bob",
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 10,
      askTimeoutMs: 10_000,
      askDueAt: 10_010
    }
    const decodedMail = decodeMail(mail.recordKey, encodeMail(mail))
    assert.notInstanceOf(decodedMail, CorruptRow)
    if (!(decodedMail instanceof CorruptRow)) assert.strictEqual(decodedMail.askDueAt, 10_010)
    const edge = {
      messageKey: mail.recordKey,
      messageId: "q1",
      askerKey: "\u0000alice",
      targetKey: "\u0000bob",
      deadline: 3_610_010,
      dueAt: 10_010,
      openedAt: 3_600_010
    }
    assert.deepStrictEqual(decodeEdge(edge.messageKey, encodeEdge(edge)), edge)
  })
})
