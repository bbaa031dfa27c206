/**
 * The replay block codec (`replayBlock.ts`): any records, in any order, with
 * any strings (lone surrogates included) and finite numbers, decode back to
 * what was encoded, in order; a block cut short, with text after its last
 * record, or with a field out of place is a `CorruptRow` naming the block,
 * never a shorter list. The text is the module header's grammar, byte for
 * byte (stored blocks are read by other builds).
 */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { DeliveryCode } from "../../src/protocol/delivery.ts"
import { CorruptRow, type StoredRecord } from "../../src/store/mailCodec.ts"
import { decodeBlock, encodeBlock, newestAt } from "../../src/store/replayBlock.ts"

const optional = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: undefined })
/** Any text: ASCII, any code point, and any UTF-16 unit (lone surrogates too). */
const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }))
/** Finite numbers as the store writes them (-0 is written as 0, as JSON writes it). */
const number = fc.oneof(fc.integer(), fc.integer({ min: -1, max: 10 }), fc.double({ noNaN: true, noDefaultInfinity: true }))
  .map((n) => Object.is(n, -0) ? 0 : n)

const outcomeArb = fc.oneof(
  fc.constant({ ok: true, delivery: "socket_delivered" } as const),
  fc.constant({ ok: true, delivery: "queued" } as const),
  fc.record({ ok: fc.constant(true as const), delivery: fc.constant("socket_delivered" as const), receiverId: text }),
  fc.record({
    ok: fc.constant(false as const),
    code: fc.constantFrom(...Object.values(DeliveryCode)),
    reason: text,
    retryable: fc.boolean()
  })
)

const recordArb: fc.Arbitrary<StoredRecord> = fc.record({
  sender: text,
  id: text,
  /** Most keys are `recordKeyOf(sender, id)`; any other text is kept whole. */
  otherKey: optional(text),
  targetId: text,
  textLength: number,
  textHash: number,
  attachmentsLength: number,
  attachmentsHash: number,
  replyTo: optional(text),
  expectsReply: optional(fc.boolean()),
  supersedes: optional(text),
  retryOf: optional(text),
  replyErrorLength: number,
  replyErrorHash: number,
  outcome: outcomeArb,
  at: fc.integer({ min: 0, max: 4_000_000_000_000 })
}).map(({ at, id, otherKey, outcome, sender, ...fingerprint }) => ({
  key: otherKey ?? recordKeyOf(sender, id),
  sender,
  fingerprint,
  outcome,
  at
}))

/**
 * Records, some sharing the sender, time, target and the fingerprint fields after the text's of the
 * one before (written as "^", or as the same text again), as a tick's do.
 */
const blockArb = fc.array(fc.tuple(recordArb, fc.boolean(), fc.boolean(), fc.boolean(), fc.boolean()), { maxLength: 12 }).map(
  (drafts) => {
    const records: Array<StoredRecord> = []
    for (const [draft, sameSender, sameAt, sameTarget, sameRest] of drafts) {
      const previous = records[records.length - 1]
      const sender = sameSender && previous !== undefined ? previous.sender : draft.sender
      const rest = sameRest && previous !== undefined ? previous.fingerprint : draft.fingerprint
      records.push({
        ...draft,
        key: sameSender && previous !== undefined ? recordKeyOf(sender, draft.key) : draft.key,
        sender,
        at: sameAt && previous !== undefined ? previous.at : draft.at,
        fingerprint: {
          ...rest,
          targetId: sameTarget && previous !== undefined ? previous.fingerprint.targetId : draft.fingerprint.targetId,
          textLength: draft.fingerprint.textLength,
          textHash: draft.fingerprint.textHash
        }
      })
    }
    return records
  }
)

/** `records` with the message id given beside the key wherever the key is `recordKeyOf(sender, id)` and `withId` says so. */
const withIds = (records: ReadonlyArray<StoredRecord>, withId: ReadonlyArray<boolean>): ReadonlyArray<StoredRecord> =>
  records.map((record, i) => {
    const prefix = recordKeyOf(record.sender, "")
    return withId[i] === true && record.key.startsWith(prefix)
      ? { ...record, id: record.key.slice(prefix.length) }
      : record
  })

/**
 * The block text as the module header's grammar spells it, field by field: the oracle the encoder
 * is checked against (its `^`s, a repeated run of fields written again, integers of every length).
 */
const grammarText = (records: ReadonlyArray<StoredRecord>): string => {
  const str = (s: string): string => /[\uD800-\uDFFF]/.test(s) ? `j${JSON.stringify(s).length}:${JSON.stringify(s)}` : `${s.length}:${s}`
  const opt = (s: string | undefined): string => s === undefined ? "-" : str(s)
  const key = (r: StoredRecord): string => {
    const prefix = recordKeyOf(r.sender, "")
    return r.key.startsWith(prefix) ? `=${str(r.key.slice(prefix.length))}` : `!${str(r.key)}`
  }
  let text = `b1:${records.length};`
  records.forEach((r, i) => {
    const p = i === 0 ? undefined : records[i - 1]
    const f = r.fingerprint
    const o = r.outcome
    text += p?.sender === r.sender ? "^" : str(r.sender)
    text += r.id !== undefined ? `=${str(r.id)}` : key(r)
    text += p?.at === r.at ? "^" : `${r.at},`
    text += p?.fingerprint.targetId === f.targetId ? "^" : str(f.targetId)
    text += `${f.textLength},${f.textHash},${f.attachmentsLength},${f.attachmentsHash},${f.replyErrorLength},${f.replyErrorHash},`
    text += `${opt(f.replyTo)}${f.expectsReply === undefined ? "-" : f.expectsReply ? "1" : "0"}${opt(f.supersedes)}${opt(f.retryOf)}`
    text += o.ok
      ? (o.delivery === "queued" ? "q" : o.receiverId === undefined ? "d" : `r${str(o.receiverId)}`)
      : `f${str(o.code)}${str(o.reason)}${o.retryable ? "1" : "0"}`
  })
  return text
}

/** Integers of every length up to 2⁵³ (a text hash's range), either sign. */
const wideInteger = fc.oneof(fc.maxSafeInteger(), fc.integer({ min: 0, max: 16 }).map((digits) => 10 ** digits - 1))

describe("replayBlock", () => {
  it("a block's text is the grammar's, byte for byte: any strings, integers up to 2⁵³, long fields", () => {
    const wide = fc.record({ textHash: wideInteger, attachmentsHash: wideInteger, at: fc.integer({ min: 0, max: 2 ** 53 - 1 }) })
    const long = fc.string({ unit: "grapheme", minLength: 200, maxLength: 400 })
    fc.assert(
      fc.property(blockArb, fc.array(wide, { minLength: 12, maxLength: 12 }), long, fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), (records, wides, longText, withId) => {
        const widened = records.map((r, i) => ({
          ...r,
          at: wides[i]!.at,
          fingerprint: { ...r.fingerprint, textHash: wides[i]!.textHash, attachmentsHash: wides[i]!.attachmentsHash }
        }))
        const longer = records.map((r) => ({ ...r, fingerprint: { ...r.fingerprint, targetId: r.fingerprint.targetId + longText } }))
        for (const block of [records, widened, longer, withIds(records, withId)]) {
          assert.strictEqual(encodeBlock(block), grammarText(block))
        }
      }),
      { numRuns: 500 }
    )
  })

  it("a block decodes back to its records, in order", () => {
    fc.assert(
      fc.property(blockArb, (records) => {
        const decoded = decodeBlock(1, encodeBlock(records))
        assert.notInstanceOf(decoded, CorruptRow)
        assert.deepStrictEqual(decoded, records)
      }),
      { numRuns: 500 }
    )
  })

  it("a record given with its id encodes as it does with its key alone", () => {
    fc.assert(
      fc.property(blockArb, fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), (records, withId) => {
        const given = withIds(records, withId)
        assert.strictEqual(encodeBlock(given), encodeBlock(records))
        assert.deepStrictEqual(decodeBlock(1, encodeBlock(given)), records)
      }),
      { numRuns: 500 }
    )
  })

  it("a block cut anywhere, or with anything after its last record, is corrupt, never fewer records", () => {
    const cutArb = blockArb.chain((records) => {
      const block = encodeBlock(records)
      return fc.tuple(fc.constant(block), fc.integer({ min: 0, max: block.length - 1 }), fc.string({ minLength: 1 }))
    })
    fc.assert(
      fc.property(cutArb, ([block, cut, tail]) => {
        for (const corrupt of [block.slice(0, cut), block + tail]) {
          const decoded = decodeBlock(42, corrupt)
          assert.instanceOf(decoded, CorruptRow)
          if (decoded instanceof CorruptRow) {
            assert.strictEqual(decoded.table, "replay block")
            assert.include(decoded.message, "replay block \"42\"")
          }
        }
      }),
      { numRuns: 500 }
    )
  })

  it("a field out of place is corrupt: a bad header, count, number, optional, outcome or delivery code", () => {
    const record: StoredRecord = {
      key: recordKeyOf("scope\u0000a", "m1"),
      sender: "scope\u0000a",
      fingerprint: {
        targetId: "b",
        textLength: 3,
        textHash: -7,
        attachmentsLength: 0,
        attachmentsHash: 0,
        replyTo: undefined,
        expectsReply: true,
        supersedes: undefined,
        retryOf: undefined,
        replyErrorLength: -1,
        replyErrorHash: 0
      },
      outcome: { ok: false, code: "E_DELIVERY_EXPIRED", reason: "expired", retryable: false },
      at: 1_000
    }
    const good = encodeBlock([record])
    assert.notInstanceOf(decodeBlock(1, good), CorruptRow)
    for (
      const [from, to] of [
        ["b1:", "b2:"], // a format this build does not know
        ["b1:1;", "b1:2;"], // more records than the text holds
        ["b1:1;", "b1:x;"], // a count that is not one
        ["1000,", "10x0,"], // a number that is not one
        ["1-", "1?"], // an optional string that is neither absent nor a string
        ["E_DELIVERY_EXPIRED", "E_DELIVERY_EXPIRES"] // a code this build does not know
      ] as const
    ) {
      const corrupt = good.replace(from, to)
      assert.notStrictEqual(corrupt, good, `${from} is in the block`)
      assert.instanceOf(decodeBlock(1, corrupt), CorruptRow, `${from} → ${to}`)
    }
    assert.instanceOf(decodeBlock(1, good.replace(/f(\d+:E_)/, "x$1")), CorruptRow, "an outcome tag that is not one")
    assert.instanceOf(decodeBlock(1, ""), CorruptRow, "an empty body")
    assert.instanceOf(decodeBlock(1, good.replace("b1:1;7:scope\u0000a", "b1:1;^")), CorruptRow, "a first record that refers to a previous one")
  })

  it("newestAt is the newest record's time, whatever their order", () => {
    fc.assert(
      fc.property(fc.array(recordArb, { minLength: 1, maxLength: 12 }), (records) => {
        assert.strictEqual(newestAt(records), Math.max(...records.map((r) => r.at)))
      })
    )
  })
})
