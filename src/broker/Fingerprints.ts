/**
 * How an outbound record keeps its fingerprint (P46) small: the text, the
 * attachments and a failure reply's text as a 53-bit hash and a length each
 * (`hash`), never the text itself, and the fields most sends leave at their
 * defaults in one shared object (`RareFingerprint`, `rareOf`) rather than a
 * field each on every record. The record (OutboundRecord.ts) is kept by the
 * hundred thousand, so each field it need not carry is memory saved per
 * message; this module holds only the hashing and the split of the
 * fingerprint's fields, apart from the record's layout and its table.
 */
import type { Fingerprint } from "./DeliveryRecords.ts"

/**
 * 53-bit string hash (cyrb53). The fingerprint hashes message text instead of
 * keeping it: 4,096 records of 1 MiB texts would otherwise pin gigabytes.
 */
export const hash = (text: string): number => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return 4294967296 * (2097151 & h2) + (h1 >>> 0)
}

/** The attachments' hash of a send with none (`hash` of the empty string): a fingerprint field's default. */
export const NO_ATTACHMENTS_HASH = hash("")

/**
 * The fingerprint fields most sends leave at their defaults (attachments,
 * reply, ask, supersede and retry fields, a failure reply's text): one shared
 * object when set, none otherwise, so a plain send's record carries one field
 * for all of them.
 */
export type RareFingerprint = Omit<Fingerprint, "targetId" | "textLength" | "textHash">

/** `fingerprint`'s rare fields, or undefined when they are all at their defaults. */
export const rareOf = (fingerprint: RareFingerprint): RareFingerprint | undefined =>
  fingerprint.attachmentsLength === 0 && fingerprint.attachmentsHash === NO_ATTACHMENTS_HASH &&
    fingerprint.replyTo === undefined && fingerprint.expectsReply === undefined && fingerprint.supersedes === undefined &&
    fingerprint.retryOf === undefined && fingerprint.replyErrorLength === -1 && fingerprint.replyErrorHash === 0
    ? undefined
    : {
      attachmentsLength: fingerprint.attachmentsLength,
      attachmentsHash: fingerprint.attachmentsHash,
      replyTo: fingerprint.replyTo,
      expectsReply: fingerprint.expectsReply,
      supersedes: fingerprint.supersedes,
      retryOf: fingerprint.retryOf,
      replyErrorLength: fingerprint.replyErrorLength,
      replyErrorHash: fingerprint.replyErrorHash
    }

