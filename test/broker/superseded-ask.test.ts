/**
 * Review revd D5 (helper fixsup): an ask its asker superseded is withdrawn,
 * as a cancelled one is, and its ask edge closes where the supersede is
 * carried out (Receipts.supersedes). Before, only the asker's later cancel
 * closed it, and since ctlsup that cancel is answered from the record
 * ("cannot be cancelled") without reaching the edge: the receiver, told the
 * ask is superseded, was refused `E_MUTUAL_ASK` asking the asker back, and
 * a reply to the superseded ask was still taken.
 *
 * On a Router driven by hand (control-instance.test.ts's world): writes
 * complete at once, and each connection's frames are recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { controlWorld as world, custodyFeatures } from "../support/controlWorld.ts"

/** d's ask to b, read and confirmed by b-1, then superseded by a plain message. */
const supersededAsk = Effect.gen(function*() {
  const w = yield* world(custodyFeatures)
  const ask = message("which branch?", { expectsReply: true })
  w.batch(w.d, [{ type: "send", to: "b", message: ask }])
  w.batch(w.b1, [{ type: "received", frames: w.b1.framesWritten }])
  const newer = message("never mind, found it", { supersedes: ask.id })
  w.batch(w.d, [{ type: "send", to: "b", message: newer }])
  assert.deepStrictEqual(w.controlsOf(w.b1), [`supersede ${ask.id}`], "the ask was not superseded: the test sets up nothing")
  /** `peer`'s bare answers about `id`. */
  const answersOn = (peer: Peer, id: string): ReadonlyArray<string> =>
    w.framesOf(peer).flatMap((f) =>
      (f.type === "delivered" || f.type === "delivery_failed") && f.messageId === id
        ? [f.type === "delivered" ? "delivered" : `failed: ${f.reason}`]
        : []
    )
  return { ...w, ask, answersOn }
})

describe("an ask its asker superseded", () => {
  it.effect("has its edge closed: the receiver may ask the asker back", () =>
    Effect.gen(function*() {
      const w = yield* supersededAsk
      const back = message("anything else?", { expectsReply: true })
      w.batch(w.b1, [{ type: "send", to: "d", message: back }])
      assert.deepStrictEqual(w.answersOn(w.b1, back.id), ["delivered"])
    }))

  it.effect("has its edge closed after a cancel of it too (answered cannot be cancelled): the receiver may ask back", () =>
    Effect.gen(function*() {
      const w = yield* supersededAsk
      w.batch(w.d, [{ type: "cancel_message", messageId: w.ask.id }])
      assert.deepStrictEqual(w.answersOf(w.ask.id), ["delivered", `failed: ${Reason.cannotCancel}`])
      const back = message("anything else?", { expectsReply: true })
      w.batch(w.b1, [{ type: "send", to: "d", message: back }])
      assert.deepStrictEqual(w.answersOn(w.b1, back.id), ["delivered"])
    }))

  it.effect("takes no reply", () =>
    Effect.gen(function*() {
      const w = yield* supersededAsk
      const reply = message("main", { replyTo: w.ask.id })
      w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
      assert.deepStrictEqual(w.answersOn(w.b1, reply.id), [`failed: ${Reason.replyNoAsk}`])
    }))
})
