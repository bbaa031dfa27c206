/**
 * Review revf R1: a message's settled fate kept on its route
 * (`OutboundRecord.withdrawal`, fixsup) belongs to that message, not to its
 * id. A replay record pushed out by the bounds while its route stays lets the
 * sender use the id again for a new message (no record, so no
 * E_MESSAGE_ID_REUSE), and the send is handed the same record object
 * (`claim`): the earlier message's cancel stayed on it, so the new message
 * read as cancelled — its cancel answered `delivered` with no control, its
 * supersede refused, and, given back by a closing connection, it was dropped
 * as withdrawn on its way. `DeliveryRecords.keep` clears it for a new send.
 *
 * On a Router driven by hand that keeps at most 3 replay records.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { baseFeatures, controlWorld } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

interface Seen {
  readonly type: string
  readonly messageId?: string
  readonly reason?: string
  readonly message?: { readonly id: string }
  readonly control?: { readonly action: string; readonly messageId: string }
}

/** A hand-driven Router with broker options `options` and a clock the test moves; `connect` registers a session. */
const hand = (options: { readonly replayRecords?: number }) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const { attach, batch } = yield* handRouter(options, () => clock.now)
    const written = new Map<Peer, Array<Seen>>()
    const connect = (id: number, sessionId: string, features: ReadonlyArray<string> = []): Peer => {
      const frames: Array<Seen> = []
      const peer = attach({
        ...fakeConnection(id, false),
        write: (out: ReadonlyArray<OutFrame>) => {
          for (const frame of out) frames.push(JSON.parse(frameText(frame)))
          return undefined
        }
      })
      written.set(peer, frames)
      batch(peer, [registerFrame({ sessionId, frame: { features: [...features], instanceId: `${sessionId}-${id}` } })])
      return peer
    }
    const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    return {
      clock,
      batch,
      connect,
      controlsOf: (peer: Peer) =>
        framesOf(peer).flatMap((f) => f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []),
      messagesOf: (peer: Peer) => framesOf(peer).flatMap((f) => f.type === "message" ? [f.message?.id] : []),
      /** `from`'s bare answers about `id` (to its sends and cancels), in order. */
      answersOf: (from: Peer, id: string) =>
        framesOf(from).flatMap((f) =>
          (f.type === "delivered" || f.type === "delivery_failed") && f.messageId === id
            ? [f.type === "delivered" ? "delivered" : `failed: ${f.reason}`]
            : []
        )
    }
  })

/** `b` (received-v1) and `d` on a Router keeping at most 3 replay records; `flood` pushes d's oldest out. */
const evicting = Effect.gen(function*() {
  const w = yield* hand({ replayRecords: 3 })
  const b = w.connect(1, "b", [RECEIVED_V1])
  const d = w.connect(2, "d")
  return {
    ...w,
    b,
    d,
    /** d sends b `n` plain messages, so d's oldest replay records go (d holds the most). */
    flood: (n: number) => {
      for (let i = 0; i < n; i++) w.batch(d, [{ type: "send", to: "b", message: message(`filler ${i}`) }])
    }
  }
})

describe("an id used again after its cancelled message's replay record was pushed out", () => {
  it.effect("a cancel of the new message reaches its receiver", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`cancel ${m0.id}`])
      w.flood(4)
      // The same id, another text: no record is kept, so it is a new message (not E_MESSAGE_ID_REUSE).
      const again = { ...message("m0 again"), id: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      assert.deepStrictEqual(w.messagesOf(w.b).filter((id) => id === m0.id).length, 2, "the new message was not delivered: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      assert.deepStrictEqual(w.controlsOf(w.b), [`cancel ${m0.id}`, `cancel ${m0.id}`], "the new message's cancel was answered without reaching its receiver")
    }))

  it.effect("the new message can be superseded", () =>
    Effect.gen(function*() {
      const w = yield* evicting
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      w.flood(4)
      const again = { ...message("m0 again"), id: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      const m1 = message("m1", { supersedes: m0.id })
      w.batch(w.d, [{ type: "send", to: "b", message: m1 }])
      assert.deepStrictEqual(w.answersOf(w.d, m1.id), ["delivered"])
    }))

  it.effect("the new message, given back by the receiver's closing connection, is queued again, not dropped", () =>
    Effect.gen(function*() {
      const w = yield* controlWorld(baseFeatures, { replayRecords: 3 })
      const m0 = message("m0")
      w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
      w.batch(w.d, [{ type: "cancel_message", messageId: m0.id }])
      for (let i = 0; i < 4; i++) w.batch(w.d, [{ type: "send", to: "b", message: message(`filler ${i}`) }])
      // b-1's socket takes no write from now on: the new message is given back at its close.
      w.stick()
      const again = { ...message("m0 again"), id: m0.id }
      w.batch(w.d, [{ type: "send", to: "b", message: again }])
      assert.deepStrictEqual(w.answersOf(m0.id).slice(-1), ["delivered"], "the new message was not accepted: the test sets up nothing")
      w.closeAbandoned(w.b1)
      const b2 = w.registerB("b-1")
      assert.include(w.messagesOf(b2), m0.id, "the new message was dropped as if cancelled on its way: lost")
    }))
})
