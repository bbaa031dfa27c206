/**
 * `PeerCustody` (received-v1) against a model: a FIFO of (frame number,
 * message or failure notice) that releases, oldest first, what a confirmation
 * covers (the store is told of mail, and of notices it stored), and gives back
 * the rest at close.
 * Its entries are in rings that wrap, grow when full and are let go once a
 * burst is confirmed; the * model has neither.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { PeerCustody } from "../../src/broker/Custody.ts"
import type { OutboundNotice, Written } from "../../src/broker/Peer.ts"
import { message } from "./fixtures/custodyItems.ts"

/** A notice; every third one has no number, as without a store (it is released to no one). */
const notice = (n: number): OutboundNotice => ({ frame: `notice ${n}`, owedTo: "s", seq: n % 3 === 0 ? undefined : n, owedAt: 0 })

const keyOf = (item: Written): string => "mail" in item ? item.mail.recordKey : "frame" in item ? item.frame : item.text()

const ops = fc.array(
  fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({ op: fc.constant("hold" as const), frames: fc.integer({ min: 1, max: 3 }), notice: fc.boolean() })
    },
    { weight: 3, arbitrary: fc.record({ op: fc.constant("confirm" as const), ahead: fc.integer({ min: -2, max: 40 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant("takeBack" as const) }) }
  ),
  { maxLength: 3_000 }
)

describe("PeerCustody", () => {
  it("property: releases the mail and stored notices each confirmation covers, oldest first, and gives back the rest (mail and notices), like a plain FIFO", () => {
    fc.assert(
      fc.property(ops, (script) => {
        const released: Array<string> = []
        const custody = new PeerCustody((mail) => released.push(mail.recordKey), (seq) => released.push(`notice ${seq}`))
        const expected: Array<string> = []
        let model: Array<{ readonly end: number; readonly key: string; readonly stored: boolean }> = []
        let confirmed = 0
        let written = 0
        let next = 0
        for (const step of script) {
          if (step.op === "hold") {
            written += step.frames
            const item = step.notice ? notice(next++) : message(next++)
            custody.hold(written, item)
            const stored = "mail" in item || item.seq !== undefined
            if (written > confirmed) model.push({ end: written, key: keyOf(item), stored })
            else if (stored) expected.push(keyOf(item))
          } else if (step.op === "confirm") {
            const frames = Math.max(0, written + step.ahead - 20)
            custody.confirm(frames)
            if (frames > confirmed) {
              confirmed = frames
              while (model.length > 0 && model[0]!.end <= frames) {
                const entry = model.shift()!
                if (entry.stored) expected.push(entry.key)
              }
            }
          } else {
            assert.deepStrictEqual(custody.takeBack().map(keyOf), model.map((entry) => entry.key))
            model = []
          }
          assert.deepStrictEqual(released, expected)
          assert.strictEqual(custody.size, model.length)
        }
      }),
      { numRuns: 200 }
    )
  })

  it("after growing to thousands held and releasing most from the front, the order and the count stay right", () => {
    const released: Array<string> = []
    const custody = new PeerCustody((mail) => released.push(mail.recordKey))
    for (let n = 1; n <= 3_000; n++) custody.hold(n, message(n))
    custody.confirm(2_000)
    assert.strictEqual(custody.size, 1_000)
    for (let n = 3_001; n <= 3_010; n++) custody.hold(n, message(n))
    custody.confirm(2_500)
    assert.deepStrictEqual(released, Array.from({ length: 2_500 }, (_, i) => `s\u0001m${i + 1}`))
    assert.deepStrictEqual(
      custody.takeBack().map(keyOf),
      Array.from({ length: 510 }, (_, i) => `s\u0001m${i + 2_501}`)
    )
    assert.strictEqual(custody.size, 0)
  })

  it("rings wrap in place while entries are held; a ring that grows past a thousand slots is let go once emptied", () => {
    const released: Array<string> = []
    const custody = new PeerCustody((mail) => released.push(mail.recordKey))
    assert.strictEqual(custody.slots, 0)
    let n = 0
    // Two windows of 32 in flight, the older confirmed each time: the ring of 64 wraps, never grows.
    for (let w = 0; w < 50; w++) {
      for (let i = 0; i < 32; i++) custody.hold(++n, message(n))
      if (w > 0) custody.confirm(n - 32)
      assert.strictEqual(custody.slots, 64)
    }
    custody.confirm(n)
    assert.strictEqual(custody.size, 0)
    assert.strictEqual(custody.slots, 64)
    // A burst of 2,000 held: the ring doubles to 2,048; confirmed, it is let go.
    for (let i = 0; i < 2_000; i++) custody.hold(++n, message(n))
    assert.strictEqual(custody.slots, 2_048)
    custody.confirm(n - 1)
    assert.strictEqual(custody.slots, 2_048)
    custody.confirm(n)
    assert.strictEqual(custody.slots, 0)
    assert.deepStrictEqual(released, Array.from({ length: n }, (_, i) => `s\u0001m${i + 1}`))
  })

  it("takeBackFor gives back one session's mail and notices, oldest first, and keeps the rest in order (a session's unregister)", () => {
    const released: Array<string> = []
    const custody = new PeerCustody((mail) => released.push(mail.recordKey), (seq) => released.push(`notice ${seq}`))
    // Mail for "t" (odd) and "u" (even), a notice owed to another session ("s"), and one owed to "t".
    for (let n = 1; n <= 6; n++) custody.hold(n, n % 2 === 1 ? message(n) : { ...message(n), to: "u" })
    custody.hold(7, notice(7))
    custody.hold(8, { ...notice(8), owedTo: "t" })
    assert.deepStrictEqual(custody.takeBackFor("t").map(keyOf), ["s\u0001m1", "s\u0001m3", "s\u0001m5", "notice 8"])
    assert.strictEqual(custody.size, 7, "the emptied slot at the front is let go; those behind count until passed")
    assert.deepStrictEqual(custody.takeBackFor("t"), [])
    custody.confirm(4)
    assert.deepStrictEqual(released, ["s\u0001m2", "s\u0001m4"])
    assert.deepStrictEqual(custody.takeBack().map(keyOf), ["s\u0001m6", "notice 7"])
  })

  it("knows the instance each session registered as while it holds its mail, and lets go of idle sessions past a few", () => {
    const custody = new PeerCustody(() => {})
    // Mail for "t" (custodyItems' target) is held; t registered first, then many sessions nothing is held for.
    custody.registeredAs("t", 7)
    custody.hold(1, message(1))
    for (let i = 0; i < 20; i++) custody.registeredAs(`idle${i}`, 100 + i)
    assert.strictEqual(custody.instanceOf("t"), 7)
    assert.strictEqual(custody.instanceOf("idle0"), undefined)
    assert.strictEqual(custody.instanceOf("idle19"), 119)
  })
})
