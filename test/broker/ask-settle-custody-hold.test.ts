/**
 * `ask-expiry-v1`: a reply to the asker kept by a takeover's custody hold
 * (CustodyHold.ts) — its sender had mail in the old connection's custody,
 * and the reply was forced to the asker's new connection (its sender's
 * close) — is not parked anywhere, but the broker accepted it and it goes
 * to the asker when the hold ends. The answer to the asker's settling
 * `list` must wait for it as for a parked reply (ParkedReplies.ts), or the
 * asker ends in ReplyTimeout although the reply is on its way (review
 * settle2's uncovered case). Driven by hand: no fiber runs, each close and
 * each drainer offer is the test's; the asker's frames go through its
 * reader (`PeerReader.frames`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import {
  ASK_EXPIRY_V1,
  ASK_TIMEOUT_V1,
  LIST_PAGE_V1,
  RECEIVED_V1,
  REJOIN_V1,
  TAKEOVER_V1
} from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const FEATURES = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1, ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1]
const TIMEOUT_MS = 1_000

/** `message:<text>` for a message, `sessions:<requestId>` for a `list` answer; other frames left out. */
const labelsOf = (frames: ReadonlyArray<OutFrame>): Array<string> =>
  frames.flatMap((frame) => {
    const parsed = parseFrameText(frameText(frame))
    if (isFrameDecodeError(parsed)) return []
    if (parsed.type === "sessions") return [`sessions:${String(parsed.requestId)}`]
    const inner = parsed.message
    if (parsed.type !== "message" || typeof inner !== "object" || inner === null || !("content" in inner)) return []
    const content = inner.content
    return typeof content === "object" && content !== null && "text" in content ? [`message:${String(content.text)}`] : []
  })

/** A connection whose writes complete at once, noting their labels in `seen`. */
const noting = (id: number, seen: Array<string>): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    seen.push(...labelsOf(frames))
    return undefined
  }
})

/**
 * Session `b` (`received-v1`) on an old connection that wrote `d`'s `m0`,
 * never confirmed; another instance takes `b` over (a custody hold on `d`),
 * asks `d`, and `d` replies: the reply is held behind the hold (parked with
 * `d`'s batch, its drainer waiting).
 */
const setUp = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, closeAbandoning: close, router, tryDrain } = yield* handRouter({}, () => clock.now)
  const oldSeen: Array<string> = []
  const old = attach(noting(1, oldSeen))
  batch(old, [registerFrame({ sessionId: "b", frame: { features: FEATURES, instanceId: "b-1" } })])
  const answerer = attach(fakeConnection(2, false))
  batch(answerer, [registerFrame({ sessionId: "d" })])
  batch(answerer, [{ type: "send", to: "b", message: message("m0") }])
  assert.deepStrictEqual(oldSeen, ["message:m0"], "the old connection did not write m0: the test sets up nothing")
  const seen: Array<string> = []
  const asker = attach(noting(3, seen))
  batch(asker, [registerFrame({ sessionId: "b", frame: { features: FEATURES, instanceId: "b-2" } })])
  const question = message("well?", { expectsReply: true })
  batch(asker, [{ type: "send", to: "d", message: question, askTimeoutMs: TIMEOUT_MS }])
  assert.isTrue(
    batch(answerer, [{ type: "send", to: "b", message: message("the answer", { replyTo: question.id }) }]),
    "the reply was not held behind the custody hold: the test sets up nothing"
  )
  /** What the asker's connection has queued, written now (a hand-driven writer runs only when told). */
  const flush = (peer: Peer = asker): void => {
    seen.push(...labelsOf(router.output.writes.takeForWrite(peer).frames))
  }
  const settle = (requestId: string): void => {
    clock.now += TIMEOUT_MS
    asker.reader.frames([JSON.stringify({ type: "list", requestId, limit: 1, settle: true })])
  }
  const counts = () => {
    const s = router.stats()
    return {
      held: s.answersBehindReplies,
      offered: s.answersReleasedOffered,
      forced: s.answersReleasedForced,
      custody: s.answersReleasedCustody,
      dropped: s.answersDropped
    }
  }
  return { answerer, asker, close, counts, flush, old, router, seen, settle, tryDrain }
})

/** The message and answer labels among `seen` from the reply on. */
const fromReply = (seen: ReadonlyArray<string>): Array<string> =>
  seen.filter((label) => label === "message:the answer" || label.startsWith("sessions:"))

describe("ask-expiry-v1: a reply kept by a takeover's custody hold", () => {
  it.effect("forced to the hold before the settling list: the answer waits for the hold's end, then follows the reply", () =>
    Effect.gen(function*() {
      const { answerer, close, counts, flush, old, seen, settle } = yield* setUp
      // The answerer's connection closes: its parked reply is forced to `b`'s new connection, and kept by the hold.
      close(answerer)
      flush()
      assert.deepStrictEqual(fromReply(seen), [], "the reply reached the asker before the old close: the test sets up nothing")
      settle("settle")
      flush()
      assert.deepStrictEqual(fromReply(seen), [], "the settling answer overtook the reply the hold keeps")
      close(old)
      flush()
      assert.deepStrictEqual(fromReply(seen), ["message:the answer", "sessions:settle"])
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 1, dropped: 0 })
    }))

  it.effect("held behind the parked reply, then the reply forced to the hold: the answer still waits for the hold's end", () =>
    Effect.gen(function*() {
      const { answerer, close, counts, flush, old, seen, settle } = yield* setUp
      settle("settle")
      flush()
      assert.deepStrictEqual(fromReply(seen), [])
      close(answerer)
      flush()
      assert.deepStrictEqual(fromReply(seen), [], "the settling answer was released when the reply was forced to the hold")
      close(old)
      flush()
      assert.deepStrictEqual(fromReply(seen), ["message:the answer", "sessions:settle"])
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 1, dropped: 0 })
    }))

  it.effect("held behind the parked reply with the answerer live: the old close wakes its drainer, and the answer follows the reply", () =>
    Effect.gen(function*() {
      const { answerer, close, counts, flush, old, seen, settle, tryDrain } = yield* setUp
      settle("settle")
      close(old)
      while (tryDrain(answerer)) continue
      flush()
      assert.deepStrictEqual(fromReply(seen), ["message:the answer", "sessions:settle"])
      assert.deepStrictEqual(counts(), { held: 1, offered: 1, forced: 0, custody: 0, dropped: 0 })
    }))

  it.effect("the asker's connection closes while the hold keeps the reply: the held answer is dropped", () =>
    Effect.gen(function*() {
      const { answerer, asker, close, counts, router, settle } = yield* setUp
      close(answerer)
      settle("settle")
      close(asker)
      assert.isFalse(router.output.replies.holding)
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 0, dropped: 1 })
    }))
})
