/**
 * The set-up of the tests of messages staged under one reused id (cancel-reused-id-two-staged,
 * cancel-again-reused-id-older-staged, cancel-ask-staged-under-later-plain): a Router driven by hand with a `replace`
 * window and a replay bound of one record, b and z registered (z gone away when asked) and a `delivery-v1` sender d;
 * d's first message under m0 staged for b, a send between (pushing m0's record out, so the next send under m0 is a
 * new message, not a reuse refused), then a second under m0. The clock is in the test's hands; nothing sleeps.
 */
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "./broker.ts"
import { recordedSessions } from "./controlWorld.ts"
import { handRouter } from "./handRouter.ts"

/** The clock's reading at the start. */
export const START = 1_000_000

/** The `replace` window. */
export const WINDOW_MS = 1_000

/** A send's fields that stage it in `replace` mode, in one thread. */
export const REPLACE = { delivery: "queue", queueMode: "replace", threadId: "t" }

/** What a send under m0 carries over m0 itself, and whether it is staged. */
export interface UnderM0 {
  readonly to: string
  readonly text: string
  readonly expectsReply?: boolean
  readonly staged: boolean
}

/**
 * The world: b, z (away when `zAway`), d, m0; `stageTwo` sends the two messages under m0 with a send to `between`
 * between them; `closeWindow` moves the clock past the window and hands over what is due.
 */
export const stagedUnderOneId = (zAway = false) =>
  Effect.gen(function*() {
    const clock = { now: START }
    const hand = yield* handRouter({ replaceWindow: WINDOW_MS, replayRecords: 1 }, () => clock.now)
    const { connect, framesOf } = recordedSessions(hand)
    const b = connect(1, "b", [])
    const z = connect(2, "z", [])
    if (zAway) hand.close(z)
    const d = connect(3, "d", [DELIVERY_V1])
    const m0 = message("m0")
    const sendUnderM0 = (send: UnderM0) =>
      hand.batch(d, [{
        type: "send",
        to: send.to,
        message: { ...m0, content: { text: send.text }, ...(send.expectsReply === true ? { expectsReply: true } : {}) },
        ...(send.staged ? REPLACE : {})
      }])
    /** The first under m0, a plain send to `between`, a millisecond, then the second under m0. */
    const stageTwo = (first: UnderM0, second: UnderM0, between = "z") => {
      sendUnderM0(first)
      hand.batch(d, [{ type: "send", to: between, message: message("other") }])
      clock.now += 1
      sendUnderM0(second)
    }
    /** d's answers under m0 since frame `from` of d's, as `type delivery` ("delivery_queued ", "delivered queued"). */
    const answersUnderM0 = (from = 0) =>
      framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => `${f.type} ${f.delivery ?? ""}`)
    /** d's cancel of m0 (`cancel_message`, or `cancel_ask`); the types of d's answers to it under m0. */
    const cancelM0 = (type: "cancel_message" | "cancel_ask" = "cancel_message") => {
      const from = framesOf(d).length
      hand.batch(d, [{ type, messageId: m0.id }])
      return framesOf(d).slice(from).filter((f) => f.messageId === m0.id).map((f) => f.type)
    }
    /** The messages under m0 `peer` was given. */
    const givenM0 = (peer: Peer) => framesOf(peer).filter((f) => f.type === "message" && f.message?.id === m0.id).length
    const closeWindow = () => {
      clock.now += WINDOW_MS
      hand.router.staging.flushDue(clock.now)
    }
    return { clock, hand, framesOf, b, z, d, m0, stageTwo, answersUnderM0, cancelM0, givenM0, closeWindow }
  })
