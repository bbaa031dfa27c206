/**
 * The stored formats' history: a change to what the durable store writes
 * comes with a marker migration, so a build that does not know the change
 * refuses the file as newer (`DatabaseTooNew`) instead of misreading it.
 *
 * An older build reads a newer store two ways, both wrong without a marker:
 * a replay block with an outcome tag it does not know fails its load as
 * corrupt (migration 0011 exists for the `r` outcome), and a mail, ask edge
 * or fingerprint field it does not know is dropped without a word (its
 * Schema ignores unknown keys: the last test shows it) — the mail would be
 * restored without, say, the ask edge it reopens. So `FORMATS` below lists,
 * for each change, the fields and tags the store holds from then on (the
 * first entry in full, each later one as what it added and removed) and the
 * marker migration that came with it. The field lists are checked against
 * the types at compile time (`satisfies Record<keyof T, true>`: a new field
 * is a type error here until it is listed), and against the block reader's
 * accepted tags and the owed notices a load accepts at run time. A change therefore needs a new `FORMATS` entry,
 * and the entry a new migration (src/store/migrations/index.ts; see
 * 0011_replay_receiver.ts for a marker with no schema change).
 *
 * Not covered: a change of a field's meaning or value set under the same
 * name (a new `delivery` mode, a new refusal code), which needs the same
 * marker and which only review catches.
 */
import { assert, describe, it } from "@effect/vitest"
import { Message, ReceiptStatus } from "../../src/protocol/frames.ts"
import type { DeliveryChoice } from "../../src/protocol/deliveryModes.ts"
import { CorruptRow, decodeMail, encodeMail } from "../../src/store/mailCodec.ts"
import { migrations } from "../../src/store/migrations/index.ts"
import { checkNotice } from "../../src/store/OwedNotices.ts"
import { ACCEPTED, type AskEdge, type Fingerprint, type Mail, type Outcome } from "../../src/store/records.ts"
import { decodeBlock, encodeBlock } from "../../src/store/replayBlock.ts"

/** The shape of what the store holds, as of one marker migration. */
interface StoredShape {
  /** The migration that marks this shape (a key of `migrations`). */
  readonly through: string
  readonly mail: ReadonlyArray<string>
  readonly message: ReadonlyArray<string>
  readonly delivery: ReadonlyArray<string>
  readonly edge: ReadonlyArray<string>
  readonly fingerprint: ReadonlyArray<string>
  readonly accepted: ReadonlyArray<string>
  readonly refused: ReadonlyArray<string>
  /** The replay block's outcome tags (replayBlock.ts's grammar). */
  readonly outcomeTags: string
  /** The owed notices a load accepts (OwedNotices.checkNotice): `ask_expired`, `message_receipt:<status>`. */
  readonly notices: ReadonlyArray<string>
}

// Each list names every key of its type, and nothing else: a new field is a compile error until listed.
const mailKeys = {
  recordKey: true,
  senderKey: true,
  senderId: true,
  senderIdentity: true,
  senderEnd: true,
  fromJson: true,
  message: true,
  brokerReceivedAt: true,
  spaceKey: true,
  targetKey: true,
  targetId: true,
  targetIdentity: true,
  queuedAt: true,
  askTimeoutMs: true,
  channel: true,
  replyError: true,
  delivery: true,
  traceparent: true,
  answers: true,
  askDueAt: true,
  // Not a stored field: a symbol key, which JSON (encodeMail) skips and `Object.keys` below leaves out.
  [ACCEPTED]: true
} satisfies Record<keyof Mail, true>
const deliveryKeys = { delivery: true, queueMode: true, threadId: true } satisfies Record<keyof DeliveryChoice, true>
const edgeKeys = {
  messageKey: true,
  messageId: true,
  askerKey: true,
  targetKey: true,
  deadline: true,
  openedAt: true,
  question: true,
  notify: true,
  dueAt: true
} satisfies Record<keyof AskEdge, true>
const fingerprintKeys = {
  targetId: true,
  textLength: true,
  textHash: true,
  attachmentsLength: true,
  attachmentsHash: true,
  replyTo: true,
  expectsReply: true,
  supersedes: true,
  retryOf: true,
  replyErrorLength: true,
  replyErrorHash: true
} satisfies Record<keyof Fingerprint, true>
const acceptedKeys = { ok: true, delivery: true, staged: true, receiverId: true } satisfies Record<
  keyof Extract<Outcome, { readonly ok: true }>,
  true
>
const refusedKeys = { ok: true, code: true, reason: true, retryable: true } satisfies Record<
  keyof Extract<Outcome, { readonly ok: false }>,
  true
>

/** This build's shape, from the types above and the protocol's message schema. */
const current = {
  mail: Object.keys(mailKeys),
  message: Object.keys(Message.fields),
  delivery: Object.keys(deliveryKeys),
  edge: Object.keys(edgeKeys),
  fingerprint: Object.keys(fingerprintKeys),
  accepted: Object.keys(acceptedKeys),
  refused: Object.keys(refusedKeys)
}

/** The lists of a `StoredShape`: what a later entry of `FORMATS` may add to or remove from. */
type ShapeList = "mail" | "message" | "delivery" | "edge" | "fingerprint" | "accepted" | "refused" | "notices"

/** A change to what the store holds: its marker migration and what it added and removed (`outcomeTags`: the new tags). */
interface ShapeChange {
  readonly through: string
  readonly added?: Partial<Record<ShapeList, ReadonlyArray<string>>>
  readonly removed?: Partial<Record<ShapeList, ReadonlyArray<string>>>
  readonly outcomeTags?: string
}

/**
 * What the store holds, oldest first: the first entry in full, each later one as its change from the entry
 * before (`SHAPES` has them all in full; the last is this build's). Begun at 0011 (the earlier changes predate
 * this check). Add an entry — with a new marker migration — whenever a list or the tags change; never edit a
 * released entry (an older build was written against it), as with migrations.
 */
const FORMATS: readonly [StoredShape, ...ReadonlyArray<ShapeChange>] = [
  {
    through: "0011_replay_receiver",
    mail: [
      "recordKey",
      "senderKey",
      "senderId",
      "senderIdentity",
      "senderEnd",
      "fromJson",
      "message",
      "brokerReceivedAt",
      "spaceKey",
      "targetKey",
      "targetId",
      "targetIdentity",
      "queuedAt",
      "askTimeoutMs",
      "channel",
      "replyError",
      "delivery",
      "traceparent",
      "answers"
    ],
    message: [
      "id",
      "timestamp",
      "content",
      "senderSequence",
      "brokerReceivedAt",
      "brokerDeliveredAt",
      "receiverReceivedAt",
      "injectedAt",
      "supersedes",
      "retryOf",
      "replyTo",
      "expectsReply"
    ],
    delivery: ["delivery", "queueMode", "threadId"],
    edge: ["messageKey", "messageId", "askerKey", "targetKey", "deadline", "openedAt", "question", "notify"],
    fingerprint: [
      "targetId",
      "textLength",
      "textHash",
      "attachmentsLength",
      "attachmentsHash",
      "replyTo",
      "expectsReply",
      "supersedes",
      "retryOf",
      "replyErrorLength",
      "replyErrorHash"
    ],
    accepted: ["ok", "delivery", "staged", "receiverId"],
    refused: ["ok", "code", "reason", "retryable"],
    outcomeTags: "dfqr",
    notices: ["ask_expired", "message_receipt:expired", "message_receipt:superseded"]
  },
  // An ask's due time on the clock of the run that stored it (review revby by1). 0013 was not released without
  // them: only this stop's earlier builds wrote 0013 stores whose rows lack them (they restore by the derived rule).
  { through: "0013_stamp_high", added: { mail: ["askDueAt"], edge: ["dueAt"] } }
]

/** `shape` after `change`: each list less what it removed, plus what it added; its tags, when it names them. */
const applied = (shape: StoredShape, change: ShapeChange): StoredShape => {
  const list = (part: ShapeList): ReadonlyArray<string> => {
    const removed = change.removed?.[part] ?? []
    return [...shape[part].filter((key) => !removed.includes(key)), ...(change.added?.[part] ?? [])]
  }
  return {
    through: change.through,
    mail: list("mail"),
    message: list("message"),
    delivery: list("delivery"),
    edge: list("edge"),
    fingerprint: list("fingerprint"),
    accepted: list("accepted"),
    refused: list("refused"),
    outcomeTags: change.outcomeTags ?? shape.outcomeTags,
    notices: list("notices")
  }
}

const [first, ...changes] = FORMATS
/** Every entry of `FORMATS` in full, oldest first. */
const SHAPES: ReadonlyArray<StoredShape> = changes.reduce<ReadonlyArray<StoredShape>>(
  (shapes, change) => [...shapes, applied(shapes[shapes.length - 1]!, change)],
  [first]
)
/** This build's shape: the last entry's. */
const last = SHAPES[SHAPES.length - 1]!
/** What a failing check asks for. */
const addAMarker = "Add a marker migration (see 0011_replay_receiver.ts) and a FORMATS entry naming it."

const sorted = (keys: ReadonlyArray<string>): ReadonlyArray<string> => [...keys].sort()

/** A one-record replay block's text up to its outcome (a delivered record's block without its `d`). */
const beforeOutcome = encodeBlock([{
  key: "k",
  id: "m1",
  sender: "scope\u0000alice",
  fingerprint: {
    targetId: "bob",
    textLength: 2,
    textHash: 7,
    attachmentsLength: 0,
    attachmentsHash: 0,
    replyTo: undefined,
    expectsReply: undefined,
    supersedes: undefined,
    retryOf: undefined,
    replyErrorLength: -1,
    replyErrorHash: 0
  },
  outcome: { ok: true, delivery: "socket_delivered" },
  at: 10
}]).slice(0, -1)

/** The printable characters the block reader takes for an outcome tag (any other it calls "not an outcome"). */
const acceptedTags = (): string => {
  let tags = ""
  for (let code = 33; code < 127; code++) {
    const tag = String.fromCharCode(code)
    const decoded = decodeBlock(1, beforeOutcome + tag)
    if (!(decoded instanceof CorruptRow) || !decoded.detail.includes("is not an outcome")) tags += tag
  }
  return tags
}

/**
 * The owed notices a load accepts, among an `ask_expired` and a
 * `message_receipt` of every receipt status the protocol has (a new status
 * is probed as soon as it exists; a new frame type for notices is not).
 */
const acceptedNotices = (): ReadonlyArray<string> => {
  const candidates: Array<readonly [string, unknown]> = [
    ["ask_expired", { type: "ask_expired", messageId: "m1", expiredAt: 5 }],
    ...ReceiptStatus.literals.map((status) =>
      [`message_receipt:${status}`, { type: "message_receipt", receipt: { messageId: "m1", status, timestamp: 5 } }] as const
    )
  ]
  return candidates.flatMap(([name, frame]) =>
    checkNotice({ seq: 1, senderKey: "scope\u0000alice", frame: JSON.stringify(frame), at: 5 }) instanceof CorruptRow ? [] : [name]
  )
}

describe("the stored formats' history", () => {
  it("this build's mail, message, delivery, ask edge, fingerprint and outcome fields are the last entry's", () => {
    for (const part of ["mail", "message", "delivery", "edge", "fingerprint", "accepted", "refused"] as const) {
      assert.deepStrictEqual(
        sorted(current[part]),
        sorted(last[part]),
        `the stored ${part} fields changed since ${last.through}: a build without the change would drop or ` +
          `refuse them. ${addAMarker}`
      )
    }
  })

  it("the replay block reads exactly the last entry's outcome tags", () => {
    assert.strictEqual(
      acceptedTags(),
      last.outcomeTags,
      `the replay block's outcome tags changed since ${last.through}: an older build would call the store ` +
        `corrupt. ${addAMarker}`
    )
  })

  it("an owed notice's load accepts exactly the last entry's notice kinds", () => {
    assert.deepStrictEqual(
      sorted(acceptedNotices()),
      sorted(last.notices),
      `the owed notices a load accepts changed since ${last.through}: an older build would call the store ` +
        `corrupt. ${addAMarker}`
    )
  })

  it("each entry names a migration of this build, in the order the migrations run", () => {
    const ids = Object.keys(migrations).sort()
    let previous = -1
    for (const entry of FORMATS) {
      const at = ids.indexOf(entry.through)
      assert.isAtLeast(at, 0, `${entry.through} is not a migration of this build`)
      assert.isAbove(at, previous, `${entry.through} does not come after the previous entry's migration`)
      previous = at
    }
  })

  it("a mail field this build does not know is dropped on load, which is why a new one needs a marker", () => {
    const mail: Mail = {
      recordKey: "k",
      senderKey: "scope\u0000alice",
      senderId: "alice",
      senderIdentity: undefined,
      fromJson: "{}",
      message: { id: "m1", timestamp: 1, content: { text: "hi" } },
      brokerReceivedAt: 2,
      spaceKey: "scope",
      targetKey: "scope\u0000bob",
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 3,
      askTimeoutMs: undefined
    }
    const text = encodeMail(mail)
    const decoded = decodeMail("k", `${text.slice(0, -1)},"fieldFromANewerBuild":1}`)
    assert.notInstanceOf(decoded, Error)
    assert.deepStrictEqual(decoded, decodeMail("k", text))
    assert.notProperty(decoded, "fieldFromANewerBuild")
  })
})
