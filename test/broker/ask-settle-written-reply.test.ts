/**
 * `ask-expiry-v1`: a reply already written to the asker's connection, and
 * never confirmed read (`received-v1`), when that connection is left — the
 * asker's own client rejoins on another (`rejoin-v1`), or the connection
 * closes and the client registers again. The reply is given back (Custody.ts)
 * and must reach the asker's new connection ahead of the answer to its
 * settling `list` (`settle: true`, ParkedReplies.ts), or the asker would end
 * its ask in ReplyTimeout and read the reply late. Driven by hand: no fiber
 * runs, each close is the test's; the asker's frames go through its reader
 * (`PeerReader.frames`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1, RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const FEATURES = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1, ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1]
const TIMEOUT_MS = 1_000

/** `message:<text>` for a message, `sessions:<requestId>` for a `list` answer, `taken_over`; other frames left out. */
const labelsOf = (frames: ReadonlyArray<OutFrame>): Array<string> =>
  frames.flatMap((frame) => {
    const parsed = parseFrameText(frameText(frame))
    if (isFrameDecodeError(parsed)) return []
    if (parsed.type === "sessions") return [`sessions:${String(parsed.requestId)}`]
    if (parsed.type === "taken_over") return ["taken_over"]
    const inner = parsed.message
    if (parsed.type !== "message" || typeof inner !== "object" || inner === null || !("content" in inner)) return []
    const content = inner.content
    return typeof content === "object" && content !== null && "text" in content ? [`message:${String(content.text)}`] : []
  })

/**
 * A connection whose writes complete at once (or, from when `stuck.now` is
 * set, never, its socket taking none of them), noting their labels in `seen`.
 */
const noting = (id: number, seen: Array<string>, stuck = { now: false }): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    seen.push(...labelsOf(frames))
    return stuck.now ? Effect.never : undefined
  },
  // A stuck write's socket took none of it (its frames are the untaken rest once the write is abandoned).
  unfinishedWrite: () => (stuck.now ? 0 : undefined)
})

/**
 * Session `b` (`received-v1`, instance `b-1`) asks `d`, and `d` replies: the
 * reply is written to `b`'s connection at once, and its client confirms
 * nothing (it never read it: the connection broke with the frame unread).
 * With `stuck`, that write never completes: the reply stays in the old
 * connection's write in progress until its close.
 */
const setUpWith = (stuck: boolean) => Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, closeAbandoning: close, router } = yield* handRouter({}, () => clock.now)
  const oldSeen: Array<string> = []
  const oldStuck = { now: false }
  const old = attach(noting(1, oldSeen, oldStuck))
  batch(old, [registerFrame({ sessionId: "b", frame: { features: FEATURES, instanceId: "b-1" } })])
  const answerer = attach(fakeConnection(2, false))
  batch(answerer, [registerFrame({ sessionId: "d" })])
  const question = message("well?", { expectsReply: true })
  batch(old, [{ type: "send", to: "d", message: question, askTimeoutMs: TIMEOUT_MS }])
  oldStuck.now = stuck
  batch(answerer, [{ type: "send", to: "b", message: message("the answer", { replyTo: question.id }) }])
  assert.deepStrictEqual(oldSeen, ["message:the answer"], "the reply was not written to the old connection: the test sets up nothing")
  const seen: Array<string> = []
  /** A new connection of `b`, registered by client instance `instanceId`. */
  const register = (instanceId: string): Peer => {
    const peer = attach(noting(3, seen))
    batch(peer, [registerFrame({ sessionId: "b", frame: { features: FEATURES, instanceId } })])
    return peer
  }
  /** `peer`'s client settles its ask at its deadline: the settling `list`, through its reader. */
  const settle = (peer: Peer, requestId: string): void => {
    clock.now += TIMEOUT_MS
    peer.reader.frames([JSON.stringify({ type: "list", requestId, limit: 1, settle: true })])
  }
  /** What `peer` has queued, written now (a hand-driven writer runs only when told). */
  const flush = (peer: Peer): void => {
    seen.push(...labelsOf(router.output.writes.takeForWrite(peer).frames))
  }
  const counts = () => {
    const s = router.stats()
    return {
      held: s.answersBehindReplies,
      offered: s.answersReleasedOffered,
      forced: s.answersReleasedForced,
      custody: s.answersReleasedCustody,
      dropped: s.answersDropped,
      awaited: s.custodyAwaitedReplies
    }
  }
  return { abandonWrites: (peer: Peer) => router.abandonWrites(peer), close, counts, flush, old, oldSeen, register, router, seen, settle }
})

const setUp = setUpWith(false)

/** The reply and answer labels among `seen`. */
const replyAndAnswer = (seen: ReadonlyArray<string>): Array<string> =>
  seen.filter((label) => label === "message:the answer" || label.startsWith("sessions:"))

describe("ask-expiry-v1: a reply written to the asker's old connection and never confirmed", () => {
  it.effect("the client rejoins while the old connection is open: the reply comes back at the register, ahead of the settling answer", () =>
    Effect.gen(function*() {
      const { flush, register, router, seen, settle } = yield* setUp
      const fresh = register("b-1")
      settle(fresh, "settle")
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), ["message:the answer", "sessions:settle"])
      assert.strictEqual(router.stats().answersBehindReplies, 0, "nothing was held: the reply was queued first")
    }))

  it.effect("the old connection closes first and the client registers again: the mailbox's flush brings the reply ahead of the settling answer", () =>
    Effect.gen(function*() {
      const { close, flush, old, register, seen, settle } = yield* setUp
      close(old)
      const fresh = register("b-1")
      settle(fresh, "settle")
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), ["message:the answer", "sessions:settle"])
    }))

  it.effect("another instance takes the session over: its settling answer waits for the old close, which gives the reply back ahead of it", () =>
    Effect.gen(function*() {
      const { close, counts, flush, old, register, router, seen, settle } = yield* setUp
      const fresh = register("b-2")
      settle(fresh, "settle")
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), [], "the settling answer overtook the reply the old connection gives back at its close")
      close(old)
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), ["message:the answer", "sessions:settle"])
      assert.isFalse(router.output.replies.holding)
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 1, dropped: 0, awaited: 1 })
    }))

  it.effect("the asker's client takes its session back from the instance that took it over, before the old close: its settling answer follows the reply given back", () =>
    Effect.gen(function*() {
      const { close, counts, flush, old, register, seen, settle } = yield* setUp
      register("b-2")
      // The asker's own instance again: not a rejoin (the session's connection is b-2's), a takeover carrying the hold.
      const back = register("b-1")
      settle(back, "settle")
      flush(back)
      assert.deepStrictEqual(replyAndAnswer(seen), [], "the settling answer overtook the reply the old connection gives back at its close")
      close(old)
      flush(back)
      assert.deepStrictEqual(replyAndAnswer(seen), ["message:the answer", "sessions:settle"])
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 1, dropped: 0, awaited: 1 })
    }))

  it.effect("the old client confirms the reply while its connection closes: the held answer goes at the old close, and no reply follows", () =>
    Effect.gen(function*() {
      const { close, counts, flush, old, oldSeen, register, seen, settle } = yield* setUp
      const fresh = register("b-2")
      settle(fresh, "settle")
      // The old client read everything written to it (the reply, and its taken_over): it says so as it closes.
      old.reader.frames([JSON.stringify({ type: "received", frames: 100 })])
      assert.include(oldSeen, "taken_over", "the old connection was not ended by the takeover: the test sets up nothing")
      close(old)
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), ["sessions:settle"])
      // Nothing is left to give back once the old client confirmed it: the close's recheck releases it.
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 1, custody: 0, dropped: 0, awaited: 1 })
    }))

  it.effect("another instance takes the session over while the reply is in the old connection's write in progress: the answer waits for the old close", () =>
    Effect.gen(function*() {
      const { close, counts, flush, old, register, seen, settle } = yield* setUpWith(true)
      assert.isDefined(old.writer.inFlight, "the old connection's write completed: the test sets up nothing")
      const fresh = register("b-2")
      settle(fresh, "settle")
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), [], "the settling answer overtook the reply in the old connection's write in progress")
      close(old)
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), ["message:the answer", "sessions:settle"])
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 1, dropped: 0, awaited: 1 })
    }))

  it.effect("the old connection's close abandoned its write in progress before the settling list: the answer waits for the rest it gives back", () =>
    Effect.gen(function*() {
      const { abandonWrites, close, counts, flush, old, register, seen, settle } = yield* setUpWith(true)
      const fresh = register("b-2")
      // Its close has begun: the write is settled (its socket took none of it) and the rest waits for the detach.
      abandonWrites(old)
      assert.isDefined(old.untakenRest, "nothing of the old connection's write was left untaken: the test sets up nothing")
      settle(fresh, "settle")
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), [], "the settling answer overtook the reply in the old write's untaken rest")
      close(old)
      flush(fresh)
      assert.deepStrictEqual(replyAndAnswer(seen), ["message:the answer", "sessions:settle"])
      assert.deepStrictEqual(counts(), { held: 1, offered: 0, forced: 0, custody: 1, dropped: 0, awaited: 1 })
    }))
})
