/**
 * `PeerCustody` (received-v1) against a model: a FIFO of (frame number,
 * message) that releases, oldest first, what a confirmation covers, and gives
 * back the rest at close. Its arrays are reused once emptied and compacted
 * after many releases; the model has neither.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { PeerCustody } from "../../src/broker/Custody.ts"
import type { Mail, OutboundMessage } from "../../src/broker/Peer.ts"

const message = (n: number): OutboundMessage => {
  const mail: Mail = {
    recordKey: `s\u0001m${n}`,
    senderKey: "s",
    senderId: "s",
    senderIdentity: undefined,
    fromJson: "{}",
    message: { id: `m${n}`, timestamp: 0, content: { text: "" } },
    brokerReceivedAt: 0,
    spaceKey: "",
    targetKey: "t",
    targetId: "t",
    targetIdentity: undefined,
    queuedAt: 0,
    askTimeoutMs: undefined,
    channel: undefined,
    replyError: undefined,
    delivery: undefined,
    traceparent: undefined
  }
  return { frame: "{}", mail, to: "t" }
}

const ops = fc.array(
  fc.oneof(
    { weight: 6, arbitrary: fc.record({ op: fc.constant("hold" as const), frames: fc.integer({ min: 1, max: 3 }) }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant("confirm" as const), ahead: fc.integer({ min: -2, max: 40 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("takeBack" as const) }) }
  ),
  { maxLength: 3_000 }
)

describe("PeerCustody", () => {
  it("property: releases what each confirmation covers, oldest first, and gives back the rest, like a plain FIFO", () => {
    fc.assert(
      fc.property(ops, (script) => {
        const released: Array<string> = []
        const custody = new PeerCustody((key) => released.push(key))
        const expected: Array<string> = []
        let model: Array<{ readonly end: number; readonly key: string }> = []
        let confirmed = 0
        let written = 0
        let next = 0
        for (const step of script) {
          if (step.op === "hold") {
            written += step.frames
            const item = message(next++)
            custody.hold(written, item)
            if (written <= confirmed) expected.push(item.mail.recordKey)
            else model.push({ end: written, key: item.mail.recordKey })
          } else if (step.op === "confirm") {
            const frames = Math.max(0, written + step.ahead - 20)
            custody.confirm(frames)
            if (frames > confirmed) {
              confirmed = frames
              while (model.length > 0 && model[0]!.end <= frames) expected.push(model.shift()!.key)
            }
          } else {
            assert.deepStrictEqual(custody.takeBack().map((item) => item.mail.recordKey), model.map((entry) => entry.key))
            model = []
          }
          assert.deepStrictEqual(released, expected)
          assert.strictEqual(custody.size, model.length)
        }
      }),
      { numRuns: 200 }
    )
  })

  it("after a compaction (over a thousand released, more held) the order and the count stay right", () => {
    const released: Array<string> = []
    const custody = new PeerCustody((key) => released.push(key))
    for (let n = 1; n <= 3_000; n++) custody.hold(n, message(n))
    custody.confirm(2_000)
    assert.strictEqual(custody.size, 1_000)
    for (let n = 3_001; n <= 3_010; n++) custody.hold(n, message(n))
    custody.confirm(2_500)
    assert.deepStrictEqual(released, Array.from({ length: 2_500 }, (_, i) => `s\u0001m${i + 1}`))
    assert.deepStrictEqual(
      custody.takeBack().map((item) => item.mail.recordKey),
      Array.from({ length: 510 }, (_, i) => `s\u0001m${i + 2_501}`)
    )
    assert.strictEqual(custody.size, 0)
  })
})
