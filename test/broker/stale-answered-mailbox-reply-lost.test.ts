/**
 * An ask whose copy waits in the mailbox when a reply is accepted: the
 * reply drops that copy at once, as answered (MailDelivery.askClosed), and
 * StaleAsks remembers it with the reply's edge, also before the ask's
 * deadline. Should that reply then be lost before it reaches the asker
 * (here: given back to the mailbox by the asker's dropped connection and
 * evicted there by its byte bound), the edge opens again and the question
 * is put back (StaleAsks.replyLost): waiting in the mailbox, its replay
 * record says `queued` again; the replier, back within the deadline,
 * is asked it again; once the reopened edge expires unanswered, the asker
 * is told `expired` (review revw W1). One its asker withdrew after the
 * reply, before the deadline, is neither asked again nor told expired.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, recordedSessions, type Seen } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 60_000
const WINDOW_MS = 1_000
const PER_TARGET = 20_000
const replace = (threadId: string) => ({ delivery: "queue", queueMode: "replace", threadId })

const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

/**
 * As stale-answered-elsewhere.test.ts's `answeredWhileQueued` (the reply accepted while the ask's copy waits
 * in the mailbox), but d reads with custody: its connection then drops before confirming the reply, which goes
 * back to the mailbox, and c's big message to d pushes it out (d's byte bound): the reply is lost before the
 * ask's deadline. `withdrawnFirst`: d withdraws the ask (`cancel_ask`) after it got the reply, before it drops.
 */
const replyLostBeforeDeadline = (withdrawnFirst = false, late?: { readonly retentionMs: number; readonly lossAfterMs: number }) => Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const hand = yield* handRouter(
    {
      askTimeout: ASK_TIMEOUT_MS,
      replaceWindow: WINDOW_MS,
      outboxCapacity: 1,
      mailboxBytesPerTarget: PER_TARGET,
      ...(late === undefined ? {} : { mailboxRetention: Duration.millis(late.retentionMs) })
    },
    () => clock.now
  )
  const { batch, close, router, tryDrain } = hand
  const recorded = recordedSessions(hand)
  const connect = recorded.connect
  // The outbox holds one item: what a registration parked is offered again, one write at a time.
  const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
    peer.writer.flush()
    for (let i = 0; i < 16 && peer.parked.length > 0 && tryDrain(peer); i++) peer.writer.flush()
    return recorded.framesOf(peer)
  }
  const messagesOf = (peer: Peer) => framesOf(peer).flatMap((frame) => frame.type === "message" ? [frame.message?.id ?? "?"] : [])
  const closeAbandoned = (peer: Peer): void => {
    closePeer(peer, "destroy")
    router.abandonWrites(peer)
    close(peer)
  }
  const b1 = connect(1, "b", [...custodyFeatures, DELIVERY_V1], "b-1")
  const d = connect(2, "d", custodyFeatures, "d-1")
  const c = connect(3, "c", [], "c-1")
  const ask = message("still need this?", { expectsReply: true })
  const reply = message("yes", { replyTo: ask.id })
  const status = message("busy")
  batch(d, [{ type: "send", to: "b", message: ask }])
  assert.deepStrictEqual(messagesOf(b1), [ask.id], "setup: the ask was not written to b-1")
  batch(b1, [{ type: "send", to: "d", message: status, ...replace("status") }])
  clock.now += 1
  batch(b1, [{ type: "send", to: "d", message: reply, ...replace("answer") }])
  clock.now += WINDOW_MS - 1
  router.staging.flushDue(clock.now)
  assert.strictEqual(d.outbox.length, 1, "setup: d's outbox is not full")
  closeAbandoned(b1)
  assert.strictEqual(router.stats().mailbox, 1, "setup: the ask did not go back to the mailbox")
  // The reply is accepted now, while the ask's copy waits in the mailbox.
  assert.deepStrictEqual(messagesOf(d), [status.id, reply.id], "setup: the reply did not reach d")
  // Asked to: d withdraws the ask it has the reply to, before the deadline (the reply's loss reopens nothing).
  if (withdrawnFirst) batch(d, [{ type: "cancel_ask", messageId: ask.id }])
  // Asked to: the reply is lost only after the ask's copy would have outlived the mailbox's retention.
  if (late !== undefined) clock.now += late.lossAfterMs
  // d's connection drops before its client confirmed the reply: it goes back to the mailbox, for d.
  closeAbandoned(d)
  // c's big message to d pushes d's older mail out (its byte bound): the reply is lost, before the deadline.
  batch(c, [{ type: "send", to: "d", message: message("x".repeat(9_300)) }])
  // Withdrawn, nothing is put back: only c's message waits.
  if (withdrawnFirst) assert.strictEqual(router.stats().mailbox, 1, "setup: the reply was not evicted")
  assert.strictEqual(router.stats().asks, withdrawnFirst ? 0 : 1, "setup: the ask's edge is not open again, or is though withdrawn")
  return { ask, batch, c, clock, connect, framesOf, messagesOf, reply, router }
})

describe("an ask whose mailbox copy a reply dropped, the reply then lost before the deadline", () => {
  it.effect("the replier back before the deadline is asked it again (its edge is open again)", () =>
    Effect.gen(function*() {
      const { ask, connect, messagesOf } = yield* replyLostBeforeDeadline()
      const back = connect(5, "b", custodyFeatures, "b-1")
      assert.deepStrictEqual(messagesOf(back), [ask.id], "the ask was not asked again though its edge is open")
    }))

  it.effect("put back after longer than the mailbox's retention since its copy was first queued: it waits a retention anew, and the replier back is asked it", () =>
    Effect.gen(function*() {
      const { ask, clock, connect, framesOf, messagesOf, router } = yield* replyLostBeforeDeadline(false, { retentionMs: 10_000, lossAfterMs: 20_000 })
      assert.strictEqual(router.stats().mailbox, 2, "setup: the question was not put back in the mailbox (beside c's message)")
      clock.now += 5_000
      // d, back, takes c's message, queued just before the question was put back; b's registration then prunes
      // the mailbox first: a question put back with its first queue time would be the oldest there, and expire.
      const asker = connect(6, "d", custodyFeatures, "d-1")
      assert.strictEqual(router.stats().mailbox, 1, "setup: d did not take c's message")
      const back = connect(5, "b", custodyFeatures, "b-1")
      assert.notInclude(receipts(framesOf(asker)), `expired ${ask.id}`, "the asker was told its open ask expired")
      assert.deepStrictEqual(messagesOf(back), [ask.id], "the question put back expired from the mailbox though its edge is open")
    }))

  it.effect("the replier away, the question put back waits in the mailbox: a retry of it is answered queued, not delivered", () =>
    Effect.gen(function*() {
      const { ask, batch, connect, framesOf, router } = yield* replyLostBeforeDeadline()
      assert.strictEqual(router.stats().mailbox, 2, "setup: the question was not put back in the mailbox (beside c's message)")
      const asker = connect(6, "d", custodyFeatures, "d-1")
      batch(asker, [{ type: "send", to: "b", message: ask }])
      const answer = framesOf(asker).findLast((frame) => frame.type === "delivered" && frame.messageId === ask.id)
      assert.strictEqual(answer?.delivery, "queued", "the question waiting in the mailbox was recorded as delivered")
    }))

  it.effect("the replier away, the reopened edge expires: the asker, back, gets the ask's expired receipt", () =>
    Effect.gen(function*() {
      const { ask, batch, c, clock, connect, framesOf, router } = yield* replyLostBeforeDeadline()
      clock.now += ASK_TIMEOUT_MS
      // A send prunes the edges (Send.prune): the reopened edge expires.
      batch(c, [{ type: "send", to: "c", message: message("tick") }])
      const back = connect(6, "d", custodyFeatures, "d-1")
      assert.strictEqual(router.stats().asks, 0, "setup: the reopened edge did not expire")
      assert.include(receipts(framesOf(back)), `expired ${ask.id}`, "the ask expired unanswered and its asker was never told")
    }))

  it.effect("withdrawn by its asker after the reply, before the deadline: nobody is asked it again, and its asker is told nothing", () =>
    Effect.gen(function*() {
      const { ask, batch, c, clock, connect, framesOf, messagesOf } = yield* replyLostBeforeDeadline(true)
      const back = connect(5, "b", custodyFeatures, "b-1")
      assert.notInclude(messagesOf(back), ask.id, "the withdrawn ask was asked again")
      clock.now += ASK_TIMEOUT_MS
      batch(c, [{ type: "send", to: "c", message: message("tick") }])
      const asker = connect(6, "d", custodyFeatures, "d-1")
      assert.notInclude(receipts(framesOf(asker)), `expired ${ask.id}`, "the asker was told its withdrawn ask expired")
    }))
})
