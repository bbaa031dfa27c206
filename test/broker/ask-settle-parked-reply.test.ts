/**
 * `ask-expiry-v1`: a reply the broker accepted (its edge closed) but parked
 * behind its sender's earlier mail to a session whose outbox is full (C-ORD:
 * a batch's output keeps its order) must still reach the asker ahead of the
 * answer to the asker's settling `list` (`settle: true`), the round trip at
 * its own deadline (Discovery.ts, Ask.ts). Answered at once, that `sessions`
 * frame overtook the parked reply, and the asker ended in ReplyTimeout
 * although the broker delivered the reply a moment later (review revag,
 * D2). Only that answer is held (ParkedReplies.ts): the asker's reader reads
 * on, its unmarked `list`s (the liveness probe) are answered at once and its
 * sends are routed. Driven by hand: no fiber runs, the clock is the test's,
 * each drainer offer is the test's (`tryDrain`); the asker's frames go
 * through its connection's reader (`PeerReader.frames`), which holds them
 * while its own output is parked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_HELD } from "../../src/broker/ParkedReplies.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { isFrameDecodeError, parseFrameText } from "../../src/protocol/decode.ts"
import { frameText } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { recording, type TypedClient, typedSessions, written } from "../support/frameTypes.ts"
import { handRouter } from "../support/handRouter.ts"

const EXPIRY = [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1]
const TIMEOUT_MS = 1_000

/** The `message` and `sessions` frames among `types`, in order (membership and receipts left out). */
const replyAndAnswer = (types: ReadonlyArray<string>) => types.filter((type) => type === "message" || type === "sessions")

/** `frames`, one batch read from `peer`'s connection, handed to its reader as the transport hands them. */
const read = (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>): void =>
  peer.reader.frames(frames.map((frame) => JSON.stringify(frame)))

/** The `requestId`s of the `sessions` answers `peer`'s writer takes now, in order. */
const answeredLists = (router: Router, peer: Peer): Array<string> =>
  router.output.writes.takeForWrite(peer).frames.flatMap((frame) => {
    const parsed = parseFrameText(frameText(frame))
    return !isFrameDecodeError(parsed) && parsed.type === "sessions" && typeof parsed.requestId === "string"
      ? [parsed.requestId]
      : []
  })

/**
 * `asker` asks `answerer`; `slow` does not read; `bystander` reads. The
 * answerer's one batch sends `slow` mail until its outbox is full (the rest
 * parked), then replies: the reply is accepted and parked behind that mail.
 * The asker's deadline passes and it sends its settling `list`. The asker
 * is granted `features` (by default, ask-expiry-v1 among them).
 */
const setUp = (features: ReadonlyArray<string> = EXPIRY) => Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 }, () => clock.now)
  const session = typedSessions({ attach, batch })
  const asker = session("asker", features)
  const answerer = session("answerer", [])
  const slow = session("slow", [])
  const bystander = session("bystander", [])
  written(router, asker)
  const question = message("well?", { expectsReply: true })
  batch(asker.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
  assert.deepStrictEqual(written(router, asker), ["delivered"])
  const parked = batch(answerer.peer, [
    ...Array.from({ length: 4 }, (_, i) => ({ type: "send", to: "slow", message: message(`mail ${i}`) })),
    { type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }
  ])
  assert.isTrue(parked, "the answerer's reply is parked behind its mail to the full outbox")
  clock.now += TIMEOUT_MS
  read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
  return { router, asker, answerer, slow, bystander, attach, batch, close, tryDrain }
})

/** Offers `reader`'s parked output until an offer waits or nothing is left. */
const drain = (tryDrain: (reader: TypedClient["peer"]) => boolean, reader: TypedClient["peer"]) => {
  while (tryDrain(reader)) continue
}

describe("ask-expiry-v1: a reply parked behind its sender's mail to a full outbox", () => {
  it.effect("reaches the asker ahead of the answer to its settling list", () =>
    Effect.gen(function*() {
      const { answerer, asker, router, slow, tryDrain } = yield* setUp()
      const seen = written(router, asker)
      drain(tryDrain, asker.peer)
      seen.push(...written(router, asker))
      // Nothing yet: the reply waits for room at `slow`, the answer waits behind the reply.
      assert.deepStrictEqual(replyAndAnswer(seen), [])
      // `slow` reads: the answerer's parked mail moves, the reply with it; then the asker's answer.
      for (let round = 0; round < 10; round++) {
        written(router, slow)
        written(router, answerer)
        drain(tryDrain, answerer.peer)
        seen.push(...written(router, asker))
        drain(tryDrain, asker.peer)
        seen.push(...written(router, asker))
      }
      assert.deepStrictEqual(replyAndAnswer(seen), ["message", "sessions"])
    }))

  it.effect("when the answerer's connection closes, its parked reply is forced to the asker, and the answer follows it", () =>
    Effect.gen(function*() {
      const { answerer, asker, close, router, tryDrain } = yield* setUp()
      const seen = written(router, asker)
      drain(tryDrain, asker.peer)
      seen.push(...written(router, asker))
      assert.deepStrictEqual(replyAndAnswer(seen), [])
      close(answerer.peer)
      seen.push(...written(router, asker))
      drain(tryDrain, asker.peer)
      seen.push(...written(router, asker))
      assert.deepStrictEqual(replyAndAnswer(seen), ["message", "sessions"])
    }))

  it.effect("an unmarked list from the asker (its liveness probe) is answered at once while the settling answer is held", () =>
    Effect.gen(function*() {
      const { asker, router } = yield* setUp()
      read(asker.peer, [{ type: "list", requestId: "probe", limit: 1 }])
      // The probe's answer is written; the settling one still waits for the reply.
      assert.deepStrictEqual(answeredLists(router, asker.peer), ["probe"])
    }))

  it.effect("the asker's send is read and routed while its settling answer is held", () =>
    Effect.gen(function*() {
      const { asker, bystander, router } = yield* setUp()
      written(router, bystander)
      read(asker.peer, [{ type: "send", to: "bystander", message: message("meanwhile") }])
      assert.include(written(router, bystander), "message")
      assert.deepStrictEqual(replyAndAnswer(written(router, asker)), [])
    }))

  it.effect("a reply forced into the asker's own parked list, behind its mailbox flush, still comes before the settling answer", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 }, () => clock.now)
      const session = typedSessions({ attach, batch })
      const away = session("asker", EXPIRY)
      const answerer = session("answerer", [])
      const question = message("well?", { expectsReply: true })
      batch(away.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      close(away.peer)
      // Mail for the absent asker waits in the mailbox; back, its flush does not fit its outbox: parked.
      batch(answerer.peer, Array.from({ length: 4 }, (_, i) => ({ type: "send", to: "asker", message: message(`mail ${i}`) })))
      const asker = session("asker", EXPIRY)
      assert.isDefined(router.output.drain.nextParked(asker.peer), "the asker's mailbox flush is parked on its own reader")
      // The reply waits behind that mail (sender order); its sender's close forces it behind the flush.
      batch(answerer.peer, [{ type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }])
      close(answerer.peer)
      const kinds: Array<string> = []
      const take = () => {
        for (const frame of router.output.writes.takeForWrite(asker.peer).frames) {
          const parsed = parseFrameText(frameText(frame))
          if (isFrameDecodeError(parsed)) continue
          const inner = parsed.message
          if (parsed.type === "sessions") kinds.push("answer")
          else if (parsed.type === "message" && typeof inner === "object" && inner !== null && "replyTo" in inner) {
            kinds.push("reply")
          }
        }
      }
      take()
      clock.now += TIMEOUT_MS
      read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
      for (let round = 0; round < 10; round++) {
        take()
        drain(tryDrain, asker.peer)
      }
      take()
      assert.deepStrictEqual(kinds, ["reply", "answer"])
    }))

  it.effect("past MAX_HELD held answers a further settling list is answered at once; the held ones follow the reply in order", () =>
    Effect.gen(function*() {
      const { answerer, asker, router, slow, tryDrain } = yield* setUp()
      const more = Array.from({ length: MAX_HELD }, (_, i) => `settle-${i + 1}`)
      for (const requestId of more) read(asker.peer, [{ type: "list", requestId, limit: 1, settle: true }])
      // One held by setUp, MAX_HELD - 1 more; the last goes at once.
      assert.deepStrictEqual(answeredLists(router, asker.peer), [more[MAX_HELD - 1]])
      const answered: Array<string> = []
      for (let round = 0; round < 10; round++) {
        written(router, slow)
        written(router, answerer)
        drain(tryDrain, answerer.peer)
        answered.push(...answeredLists(router, asker.peer))
      }
      assert.deepStrictEqual(answered, ["settle", ...more.slice(0, MAX_HELD - 1)])
    }))

  it.effect("a settling list from an asker not granted ask-expiry-v1 is answered at once, ahead of the parked reply", () =>
    Effect.gen(function*() {
      const { asker, router } = yield* setUp([ASK_TIMEOUT_V1, LIST_PAGE_V1])
      assert.deepStrictEqual(answeredLists(router, asker.peer), ["settle"])
    }))

  // The held answer's asker goes away meanwhile (the mailbox part passes without the fix too).
  it.effect("when the asker's connection closes, its held answer is dropped, and the parked reply goes back to the mailbox and reaches the asker when it registers again", () =>
    Effect.gen(function*() {
      const { answerer, asker, attach, batch, close, router, slow, tryDrain } = yield* setUp()
      close(asker.peer)
      assert.isFalse(router.output.replies.holding, "the closed asker's held settling answer is dropped")
      // `slow` reads: the answerer's drainer offers the reply to the closed connection, which refuses it.
      for (let round = 0; round < 10; round++) {
        written(router, slow)
        written(router, answerer)
        drain(tryDrain, answerer.peer)
      }
      assert.isUndefined(router.output.drain.nextParked(answerer.peer))
      const log: Array<string> = []
      const back = { peer: attach(recording(99, log)), log }
      batch(back.peer, [registerFrame({ sessionId: "asker", frame: { features: [...EXPIRY] } })])
      assert.include(written(router, back), "message")
    }))

  it.effect("counts how each held answer left its slot: released after the offered reply, released at the answerer's close, dropped at the asker's", () =>
    Effect.gen(function*() {
      const counts = (router: Router) => {
        const { answersBehindReplies, answersDropped, answersReleasedForced, answersReleasedOffered } = router.stats()
        return { answersBehindReplies, answersReleasedOffered, answersReleasedForced, answersDropped }
      }
      // `slow` reads: the reply is offered by the answerer's drainer, then the answer goes.
      const offered = yield* setUp()
      for (let round = 0; round < 10; round++) {
        written(offered.router, offered.slow)
        written(offered.router, offered.answerer)
        drain(offered.tryDrain, offered.answerer.peer)
      }
      assert.isFalse(offered.router.output.replies.holding)
      assert.deepStrictEqual(counts(offered.router), { answersBehindReplies: 1, answersReleasedOffered: 1, answersReleasedForced: 0, answersDropped: 0 })
      // The answerer closes: its parked reply is forced, then the answer goes.
      const forced = yield* setUp()
      forced.close(forced.answerer.peer)
      assert.isFalse(forced.router.output.replies.holding)
      assert.deepStrictEqual(counts(forced.router), { answersBehindReplies: 1, answersReleasedOffered: 0, answersReleasedForced: 1, answersDropped: 0 })
      // The asker closes: its held answer is dropped.
      const dropped = yield* setUp()
      dropped.close(dropped.asker.peer)
      assert.deepStrictEqual(counts(dropped.router), { answersBehindReplies: 1, answersReleasedOffered: 0, answersReleasedForced: 0, answersDropped: 1 })
    }))
})

/**
 * Review revd2's cases: the asker's own parked sends to a session that does
 * not read (D1), a reply queued for the asker's previous connection (D2), and
 * a settling list read in one batch with the registration whose parked
 * mailbox flush holds the reply (D3).
 */
describe("ask-expiry-v1: where a held settling answer goes", () => {
  /** Clients on a hand-driven Router with outboxes of two frames; the clock is the test's. */
  const world = Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const hand = yield* handRouter({ outboxCapacity: 2 }, () => clock.now)
    return { ...hand, clock, session: typedSessions(hand) }
  })
  const sendsTo = (to: string, count: number, text: string) =>
    Array.from({ length: count }, (_, i) => ({ type: "send", to, message: message(`${text} ${i}`) }))

  it.effect("released after the reply, it is queued ahead of the asker's own sends parked behind a session that does not read, and a later probe is answered", () =>
    Effect.gen(function*() {
      const { batch, clock, router, session, tryDrain } = yield* world
      const asker = session("asker", EXPIRY)
      const answerer = session("answerer", [])
      const slow = session("slow", [])
      session("stuck", [])
      written(router, asker)
      const question = message("well?", { expectsReply: true })
      batch(asker.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      assert.isTrue(batch(answerer.peer, [
        ...sendsTo("slow", 4, "mail"),
        { type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }
      ]))
      // The asker's sends to `stuck`, which never reads, park on the asker's own reader.
      read(asker.peer, sendsTo("stuck", 4, "m"))
      assert.isDefined(router.output.drain.nextParked(asker.peer))
      clock.now += TIMEOUT_MS
      read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
      const seen: Array<string> = []
      for (let round = 0; round < 10; round++) {
        written(router, slow)
        written(router, answerer)
        drain(tryDrain, answerer.peer)
        seen.push(...written(router, asker))
      }
      assert.deepStrictEqual(replyAndAnswer(seen), ["message", "sessions"])
      read(asker.peer, [{ type: "list", requestId: "probe", limit: 1 }])
      assert.deepStrictEqual(answeredLists(router, asker.peer), ["probe"])
    }))

  it.effect("held behind a reply in the asker's own parked list, it is parked right after that reply, ahead of the asker's sends to a session that does not read", () =>
    Effect.gen(function*() {
      const { attach, batch, clock, close, router, session, tryDrain } = yield* world
      const away = session("asker", EXPIRY)
      const answerer = session("answerer", [])
      session("stuck", [])
      const question = message("well?", { expectsReply: true })
      batch(away.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      close(away.peer)
      batch(answerer.peer, [
        ...sendsTo("asker", 3, "mail"),
        { type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }
      ])
      // Back, its flush (with the reply) is parked, and its sends to `stuck` behind it, in one batch.
      const log: Array<string> = []
      const asker: TypedClient = { peer: attach(recording(50, log)), log }
      assert.isTrue(batch(asker.peer, [
        registerFrame({ sessionId: "asker", frame: { features: [...EXPIRY] } }),
        ...sendsTo("stuck", 4, "m")
      ]))
      clock.now += TIMEOUT_MS
      read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
      const seen: Array<string> = []
      for (let round = 0; round < 10; round++) {
        seen.push(...written(router, asker))
        drain(tryDrain, asker.peer)
      }
      seen.push(...written(router, asker))
      assert.deepStrictEqual(replyAndAnswer(seen).slice(-2), ["message", "sessions"])
    }))

  it.effect("a reply parked for the asker's previous connection comes before the settling answer on its new one", () =>
    Effect.gen(function*() {
      const { batch, clock, close, router, session, tryDrain } = yield* world
      const before = session("asker", EXPIRY)
      const answerer = session("answerer", [])
      const slow = session("slow", [])
      const question = message("well?", { expectsReply: true })
      batch(before.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      assert.isTrue(batch(answerer.peer, [
        ...sendsTo("slow", 4, "mail"),
        { type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }
      ]))
      // The asker's connection drops; its client reconnects, the ask still waiting there.
      close(before.peer)
      const asker = session("asker", EXPIRY)
      const seen = written(router, asker)
      clock.now += TIMEOUT_MS
      read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
      for (let round = 0; round < 10; round++) {
        seen.push(...written(router, asker))
        written(router, slow)
        written(router, answerer)
        drain(tryDrain, answerer.peer)
      }
      seen.push(...written(router, asker))
      assert.deepStrictEqual(replyAndAnswer(seen), ["message", "sessions"])
    }))

  it.effect("a reply parked for the connection the asker's session was taken over from comes before the settling answer on the new one", () =>
    Effect.gen(function*() {
      const { batch, clock, close, router, session, tryDrain } = yield* world
      const features = [...EXPIRY, TAKEOVER_V1]
      const before = session("asker", features)
      const answerer = session("answerer", [])
      const slow = session("slow", [])
      const question = message("well?", { expectsReply: true })
      batch(before.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      assert.isTrue(batch(answerer.peer, [
        ...sendsTo("slow", 4, "mail"),
        { type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }
      ]))
      written(router, before)
      // A new connection takes the session over while the reply is parked for the old one.
      const asker = session("asker", features)
      const seen = written(router, asker)
      clock.now += TIMEOUT_MS
      read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
      for (let round = 0; round < 10; round++) {
        seen.push(...written(router, asker))
        written(router, before)
        written(router, slow)
        written(router, answerer)
        drain(tryDrain, answerer.peer)
      }
      close(before.peer)
      seen.push(...written(router, asker))
      assert.deepStrictEqual(replyAndAnswer(seen), ["message", "sessions"])
    }))

  it.effect("a settling list read in one batch with the registration whose parked mailbox flush holds the reply is answered after it, and a later one is not held", () =>
    Effect.gen(function*() {
      const { attach, batch, clock, close, router, session, tryDrain } = yield* world
      const away = session("asker", EXPIRY)
      const answerer = session("answerer", [])
      const question = message("well?", { expectsReply: true })
      batch(away.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      close(away.peer)
      batch(answerer.peer, [
        ...sendsTo("asker", 4, "mail"),
        { type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }
      ])
      clock.now += TIMEOUT_MS
      const asker: TypedClient = { peer: attach(recording(50, [])), log: [] }
      assert.isTrue(batch(asker.peer, [
        registerFrame({ sessionId: "asker", frame: { features: [...EXPIRY] } }),
        { type: "list", requestId: "settle", limit: 1, settle: true }
      ]), "the mailbox flush (with the reply) is parked on the asker's own reader")
      const seen: Array<string> = []
      for (let round = 0; round < 10; round++) {
        seen.push(...written(router, asker))
        drain(tryDrain, asker.peer)
      }
      seen.push(...written(router, asker))
      assert.isUndefined(router.output.drain.nextParked(asker.peer), "the flush is all out")
      assert.deepStrictEqual(replyAndAnswer(seen).slice(-2), ["message", "sessions"])
      read(asker.peer, [{ type: "list", requestId: "again", limit: 1, settle: true }])
      assert.deepStrictEqual(answeredLists(router, asker.peer), ["again"])
    }))
})

/**
 * A reply forced into the asker's own parked list lands at its end, behind
 * the asker's own sends to a session that does not read (its sender's
 * older mail is in the asker's mailbox flush there, ForcedOutput.parkOwn).
 * The head waits for room that never comes; the drainer offers the asker's
 * own items ahead of it (ParkedDrain.offerOwnAhead): the reply, the settling
 * answer parked behind it, and then the probe's answer (no parked answer
 * holds it back, PeerReader.whileHeldBack). Before, all three waited with
 * the head. With running fibers: own-ahead.test.ts.
 */
describe("ask-expiry-v1: a reply forced behind the asker's own sends to a session that does not read", () => {
  it.effect("reaches the asker, and the settling answer follows it; a later probe is answered", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 }, () => clock.now)
      const session = typedSessions({ attach, batch })
      const away = session("asker", EXPIRY)
      const answerer = session("answerer", [])
      session("stuck", [])
      const question = message("well?", { expectsReply: true })
      batch(away.peer, [{ type: "send", to: "answerer", message: question, askTimeoutMs: TIMEOUT_MS }])
      close(away.peer)
      batch(answerer.peer, Array.from({ length: 4 }, (_, i) => ({ type: "send", to: "asker", message: message(`mail ${i}`) })))
      // Back, its mailbox flush is parked, and its sends to `stuck` (which never reads) behind it, in one batch.
      const log: Array<string> = []
      const asker: TypedClient = { peer: attach(recording(50, log)), log }
      assert.isTrue(batch(asker.peer, [
        registerFrame({ sessionId: "asker", frame: { features: [...EXPIRY] } }),
        ...Array.from({ length: 4 }, (_, i) => ({ type: "send", to: "stuck", message: message(`m ${i}`) }))
      ]))
      // The reply waits behind the answerer's older mail in that flush; the answerer's close forces it to the list's end.
      batch(answerer.peer, [{ type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) }])
      close(answerer.peer)
      const seen: Array<string> = []
      for (let round = 0; round < 10; round++) {
        seen.push(...written(router, asker))
        drain(tryDrain, asker.peer)
      }
      clock.now += TIMEOUT_MS
      read(asker.peer, [{ type: "list", requestId: "settle", limit: 1, settle: true }])
      for (let round = 0; round < 10; round++) {
        seen.push(...written(router, asker))
        drain(tryDrain, asker.peer)
      }
      seen.push(...written(router, asker))
      assert.deepStrictEqual(replyAndAnswer(seen).slice(-2), ["message", "sessions"])
      read(asker.peer, [{ type: "list", requestId: "probe", limit: 1 }])
      assert.deepStrictEqual(answeredLists(router, asker.peer), ["probe"])
    }))
})
