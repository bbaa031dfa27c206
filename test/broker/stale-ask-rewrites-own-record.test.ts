/**
 * An ask dropped as answered (StaleAsks.drop: `queued` back to delivered) and an ask put back after its reply was
 * lost (MailDelivery's `askAgain`: `queued` again) rewrite the replay record found by sender and id only when it is
 * that ask's own, not a later send's under the id (task rwown; P46/P47): its asker sent a plain message under the
 * ask's id once the ask's record was pushed out (replayRecords: 3). Waiting queued, that later message's retry is
 * answered `queued`, not `delivered`; refused retryable (E_TARGET_REBOUND), its retry reaches its target, not
 * answered `queued` from the ask's outcome. On a Router driven by hand; the clock never moves; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { custodyFeatures, recordedSessions, type Seen } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

/** The answers (`delivered` and `delivery_failed`) among `frames` for the message `id`, as `<type> <code or delivery>`. */
const answersFor = (frames: ReadonlyArray<Seen>, id: string): ReadonlyArray<string> =>
  frames.flatMap((f) => f.messageId === id && (f.type === "delivered" || f.type === "delivery_failed") ? [`${f.type} ${f.code ?? f.delivery ?? ""}`] : [])

/** The ids of the messages among `frames`. */
const messageIds = (frames: ReadonlyArray<Seen>): ReadonlyArray<string> =>
  frames.flatMap((f) => f.type === "message" ? [f.message?.id ?? "?"] : [])

/**
 * d asks b (b-1 reads it with custody and never confirms it), then sends three notes to t, which push the ask's
 * record out, so that a later send under the ask's id makes a record of its own.
 */
const askWithRecordPushedOut = Effect.gen(function*() {
  const hand = yield* handRouter({ askTimeout: 60_000, replayRecords: 3, mailboxBytesPerTarget: 20_000 })
  const { connect, framesOf } = recordedSessions(hand)
  const d = connect(1, "d", custodyFeatures, "d-1")
  const b1 = connect(2, "b", custodyFeatures, "b-1")
  const t = connect(3, "t", custodyFeatures, "t-1")
  const ask = message("still need this?", { expectsReply: true })
  hand.batch(d, [{ type: "send", to: "b", message: ask }])
  assert.deepStrictEqual(messageIds(framesOf(b1)), [ask.id], "setup: the ask was not written to b-1")
  for (let n = 1; n <= 3; n++) hand.batch(d, [{ type: "send", to: "t", message: message(`push ${n}`) }])
  /** `peer` sends `sent` to `to` (with `extra` fields on the send). */
  const send = (peer: Peer, to: string, sent: Message, extra: Readonly<Record<string, unknown>> = {}): void => {
    hand.batch(peer, [{ type: "send", to, message: sent, ...extra }])
  }
  return { ask, b1, connect, d, framesOf, hand, send, t }
})

describe("an answered ask dropped or put back rewrites only its own replay record", () => {
  it.effect("an answered ask copy dropped after a later m under its id was queued for z: m's retry is answered queued", () =>
    Effect.gen(function*() {
      const { ask, b1, connect, d, framesOf, hand, send } = yield* askWithRecordPushedOut
      hand.closeAbandoning(connect(4, "z", custodyFeatures, "z-1"))
      // b-1 answers the ask before confirming it: the edge closes.
      send(b1, "d", message("yes", { replyTo: ask.id }))
      assert.strictEqual(hand.router.stats().asks, 0, "setup: the reply did not close the edge")
      const later: Message = { ...message("for z"), id: ask.id }
      send(d, "z", later)
      // b-1's connection drops: the ask's copy comes back answered, and is dropped.
      hand.closeAbandoning(b1)
      assert.strictEqual(hand.router.stats().mailbox, 1, "setup: the ask's copy was not dropped (only the later m waits)")
      send(d, "z", later)
      assert.deepStrictEqual(answersFor(framesOf(d), ask.id), ["delivered socket_delivered", "delivered queued", "delivered queued"])
    }))

  it.effect("an ask put back after its reply was lost, when a later m under its id was refused E_TARGET_REBOUND: m's retry is given to t", () =>
    Effect.gen(function*() {
      const { ask, b1, connect, d, framesOf, hand, send, t } = yield* askWithRecordPushedOut
      const later: Message = { ...message("for t"), id: ask.id }
      send(d, "t", later, { targetId: "t", targetEpoch: "not-t's-epoch" })
      hand.closeAbandoning(d)
      // b-1 answers while d is away: the reply waits in the mailbox, the edge closed.
      send(b1, "d", message("yes", { replyTo: ask.id }))
      // b-1's connection drops: the ask's copy comes back answered, and is dropped.
      hand.closeAbandoning(b1)
      // c's big message to d pushes the reply out (d's byte bound): the ask's edge opens again, b away.
      const c = connect(5, "c", [], "c-1")
      send(c, "d", message("x".repeat(9_500)))
      assert.strictEqual(hand.router.stats().asks, 1, "setup: the ask's edge did not open again")
      const back = connect(6, "d", custodyFeatures, "d-1")
      send(back, "t", later)
      assert.deepStrictEqual(answersFor(framesOf(d), ask.id), ["delivered socket_delivered", "delivery_failed E_TARGET_REBOUND"], "setup: the sends were not answered as planned")
      assert.deepStrictEqual(answersFor(framesOf(back), ask.id), ["delivered socket_delivered"])
      assert.include(messageIds(framesOf(t)), ask.id, "m's retry was answered, and t was never given m")
    }))
})
