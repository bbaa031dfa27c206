/**
 * The hand-driven worlds of the tests of a cancelled copy leaving the
 * mailbox (MailDelivery.copyLeft and the paths that call it, and the queue
 * path's resend over such a copy): a broker whose connections can be made
 * to never complete a write (`stick`), with sender `d`, and two set-ups —
 * the copy's route naming a reader the cancel TOLD while live, whose write
 * is stuck (`toldReader`, review revbx BX3), or naming the copy's OWN
 * reader, whose write was given back as the copy (`ownReader`).
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "./broker.ts"
import { custodyFeatures, messagesAndControls, readerWorld, type Seen } from "./controlWorld.ts"

/** An hour: the replay record's and the route's age. */
export const HOUR = 3_600_000

/** The world `copyLeftWorld` makes. */
export type CopyLeftWorld = Effect.Success<ReturnType<typeof copyLeftWorld>>

/**
 * controlWorld.ts's `readerWorld` with `options` on `clock` (the test moves
 * it), sender `d` registered, and `reg`, which registers any session with
 * its register frame's fields and a name.
 */
export const copyLeftWorld = (options: BrokerCoreOptions, clock: { now: number } = { now: 1_000_000 }) =>
  Effect.gen(function*() {
    const { batch, closeAbandoned, connect, framesOf, router, stick } = yield* readerWorld(options, clock)
    /**
     * A new connection registers `sessionId` with `frame`'s fields, named `name` in cwd /tmp: every session
     * named B so holds one identity (P49). `stuck`: its writes never complete, from before its registration.
     */
    const reg = (sessionId: string, frame: Readonly<Record<string, unknown>>, name = "B", stuck = false): Peer => {
      const peer = connect()
      if (stuck) stick(peer)
      batch(peer, [registerFrame({ sessionId, name, cwd: "/tmp", frame })])
      return peer
    }
    const d = connect()
    batch(d, [registerFrame({ sessionId: "d" })])
    return {
      router,
      clock,
      d,
      reg,
      framesOf,
      closeAbandoned,
      stick,
      /** Hands `peer`'s connection these client frames, as one read (any frame `send` and `cancel` do not make). */
      batch,
      /** `d` sends `sent` to `to`. */
      send: (to: string, sent: Message): void => {
        batch(d, [{ type: "send", to, message: sent }])
      },
      /** `d` cancels its message `id`. */
      cancel: (id: string): void => {
        batch(d, [{ type: "cancel_message", messageId: id }])
      },
      /** `from`'s client says it gave the message `id` to its agent (a `message_receipt`, `injected`). */
      receipt: (from: Peer, id: string): void => {
        batch(from, [{ type: "message_receipt", receipt: { messageId: id, status: "injected", timestamp: clock.now } }])
      }
    }
  })

/**
 * BX3's set-up on `w`: c's m0, read by b's base client (received-v1, no
 * instanceId) and by f-1 (both P49's other holders of c's identity), each of
 * which dropped; f-1 is back, live but for e, which holds the identity too,
 * and its writes never complete; `d` cancels m0. The cancel told f-1 (handed
 * m0 on to its stuck connection: m0's route names f-1) and kept the rest
 * copy for b's base instance only. Away: c, b.
 */
export const toldReader = (w: CopyLeftWorld): { readonly m0: Message; readonly f1: Peer } => {
  w.closeAbandoned(w.reg("c", {}))
  const x = w.reg("b", { features: [RECEIVED_V1] })
  const m0 = message("m0")
  w.send("c", m0)
  assert.deepStrictEqual(messagesAndControls(w.framesOf(x)), [`message ${m0.id}`], "b's base client did not take m0")
  w.closeAbandoned(x)
  const f1 = w.reg("f", { features: custodyFeatures, instanceId: "f-1" })
  assert.deepStrictEqual(messagesAndControls(w.framesOf(f1)), [`message ${m0.id}`], "f-1 did not take m0")
  // e holds the identity (registered while f-1 is live: it takes nothing), so f-1's return takes nothing from
  // the mailbox; f-1's writes then never complete.
  w.reg("e", {})
  w.closeAbandoned(f1)
  const f1b = w.reg("f", { features: custodyFeatures, instanceId: "f-1" })
  assert.deepStrictEqual(messagesAndControls(w.framesOf(f1b)), [], "f-1's return took m0: the test sets up nothing")
  w.stick(f1b)
  w.cancel(m0.id)
  assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "no copy kept for b's base reader: the test sets up nothing")
  return { m0, f1: f1b }
}

/**
 * A copy kept for its own reader on `w`: b's base client (received-v1, no
 * instanceId) is written b's m0 and drops unconfirmed, m0 goes back to the
 * mailbox (its route naming b's base instance, the write given back as the
 * copy), and `d` cancels it there: the copy is kept for b's base instance.
 * Away: b.
 */
export const ownReader = (w: CopyLeftWorld): { readonly m0: Message } => {
  const x = w.reg("b", { features: [RECEIVED_V1] })
  const m0 = message("m0")
  w.send("b", m0)
  assert.deepStrictEqual(messagesAndControls(w.framesOf(x)), [`message ${m0.id}`], "b's base client did not take m0")
  w.closeAbandoned(x)
  w.cancel(m0.id)
  assert.strictEqual(w.router.stats().withdrawnCopiesHeld, 1, "no copy kept for b's base reader: the test sets up nothing")
  return { m0 }
}

/**
 * d's m0, delivered to b-1 (custody features); `others` more sends to b then push its replay record out
 * (`replayRecords: others`) while its route to b-1 stays (reviews revdd DD1, task route). Returns m0 and b-1.
 */
export const deliveredThenPushedOut = (w: CopyLeftWorld, others: number): { readonly m0: Message; readonly b1: Peer } => {
  const b1 = w.reg("b", { features: custodyFeatures, instanceId: "b-1" })
  const m0 = message("m0")
  w.send("b", m0)
  assert.deepStrictEqual(messagesAndControls(w.framesOf(b1)), [`message ${m0.id}`], "b-1 did not take m0")
  for (let n = 1; n <= others; n++) w.send("b", message(`other ${n}`))
  return { m0, b1 }
}

/** d's answers (`delivered` / `delivery_failed`) about `id` from its frame `from` on, each as JSON. */
export const answersFrom = (w: CopyLeftWorld, from: number, id: string): ReadonlyArray<string> =>
  w.framesOf(w.d).slice(from).flatMap((frame) =>
    (frame.type === "delivered" || frame.type === "delivery_failed") && frame.messageId === id ? [JSON.stringify(frame)] : []
  )

/** The statuses of the receipts for `id` among `frames`, in order. */
export const receiptsOf = (frames: ReadonlyArray<Seen>, id: string): ReadonlyArray<string> =>
  frames.flatMap((frame) => (frame.type === "message_receipt" && frame.receipt?.messageId === id ? [frame.receipt.status] : []))

/**
 * The texts of the messages `id` among `frames`, in order ("?" for one with no text): the frame's message read by
 * narrowing (`in`, `typeof`), as `Seen` does not declare its content.
 */
export const textsOf = (frames: ReadonlyArray<Seen>, id: string): ReadonlyArray<string> =>
  frames.flatMap((frame) => {
    if (frame.type !== "message" || frame.message?.id !== id) return []
    const found: unknown = frame.message
    const content = typeof found === "object" && found !== null && "content" in found ? found.content : undefined
    return typeof content === "object" && content !== null && "text" in content && typeof content.text === "string"
      ? [content.text]
      : ["?"]
  })
