/**
 * An ask answered while the copy of it that later comes back was not yet
 * written, or not all written, to the connection holding it: in a write in
 * progress on the old connection of a takeover by another client instance
 * (the new instance answers: its agent read the question through the old
 * one), or in the outbox or write in progress of the replier's own
 * connection, given back to it at a rejoin (its client read the question on
 * the connection it left) and not written yet when it replies. Given back
 * past the deadline, such a copy was answered, not expired: its asker, who
 * has the reply, is told nothing.
 *
 * On a Router driven by hand (handRouter), its clock moved by the test.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { DELIVERY_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { custodyFeatures, type Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 60_000

/** The receipts `frames` hold, as `status id`. */
const receipts = (frames: ReadonlyArray<Seen>) =>
  frames.flatMap((frame) => frame.type === "message_receipt" ? [`${frame.receipt?.status} ${frame.receipt?.messageId}`] : [])

/**
 * A hand-driven broker whose connections' writes can be made to stick
 * (`stick`: from then on their writer stays busy; `taken` says whether the
 * socket had taken all of a stuck write or none of it when the write is abandoned).
 */
const world = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const { attach, batch, close, closeAbandoning, router } = yield* handRouter({ askTimeout: ASK_TIMEOUT_MS }, () => clock.now)
  const written = new Map<Peer, Array<Seen>>()
  const stuck = new Map<Peer, boolean>()
  const connect = (id: number, options: { readonly stuck?: boolean; readonly taken?: boolean } = {}): Peer => {
    const frames: Array<Seen> = []
    let self: Peer | undefined
    const peer = attach({
      ...fakeConnection(id, false),
      unfinishedWrite: () => (options.taken === true ? undefined : 0),
      write: (out: ReadonlyArray<OutFrame>) => {
        if (self !== undefined && stuck.get(self) === true) return Effect.never
        if (self === undefined && options.stuck === true) return Effect.never
        for (const frame of out) frames.push(JSON.parse(frameText(frame)))
        return undefined
      }
    })
    self = peer
    if (options.stuck === true) stuck.set(peer, true)
    written.set(peer, frames)
    return peer
  }
  const register = (peer: Peer, sessionId: string, instanceId?: string, features: ReadonlyArray<string> = [...custodyFeatures, DELIVERY_V1]) =>
    batch(peer, [registerFrame({ sessionId, frame: { features: [...features], ...(instanceId === undefined ? {} : { instanceId }) } })])
  const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
    if (stuck.get(peer) !== true) peer.writer.flush()
    return written.get(peer) ?? []
  }
  const messagesOf = (peer: Peer) => framesOf(peer).flatMap((frame) => frame.type === "message" ? [frame.message?.id ?? "?"] : [])
  const stick = (peer: Peer) => stuck.set(peer, true)
  return { batch, clock, close, closeAbandoning, connect, framesOf, messagesOf, register, router, stick }
})

describe("an ask answered while its copy is in a write in progress on a takeover's old connection", () => {
  it.effect("given back past its deadline at the old close: its asker gets no expired receipt", () =>
    Effect.gen(function*() {
      const w = yield* world
      const b1 = w.connect(1, { taken: true })
      w.register(b1, "b", "b-1")
      const d = w.connect(2)
      w.register(d, "d", undefined, [])
      w.stick(b1)
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(d, [{ type: "send", to: "b", message: ask }])
      assert.isDefined(b1.writer.inFlight, "b-1's write is not in progress: the test sets up nothing")
      const b2 = w.connect(3)
      w.register(b2, "b", "b-2")
      assert.deepStrictEqual(w.messagesOf(b2), [], "the ask reached b-2 before the old close: the test sets up nothing")
      w.batch(b2, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(d), reply.id, "the reply did not reach d: the test sets up nothing")
      w.clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoning(b1)
      assert.deepStrictEqual(w.messagesOf(b2), [], "the answered ask was asked again on b-2")
      assert.deepStrictEqual(receipts(w.framesOf(d)), [])
    }))
})

describe("an ask answered while its copy is in the outbox of the instance that took the session over", () => {
  it.effect("given back past its deadline at that connection's close: its asker gets no expired receipt", () =>
    Effect.gen(function*() {
      const w = yield* world
      const b1 = w.connect(1)
      w.register(b1, "b", "b-1")
      const d = w.connect(2)
      w.register(d, "d", undefined, [])
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      // b-2 takes b over; its writes never complete, so what comes back to it waits in its outbox.
      const b2 = w.connect(3, { stuck: true })
      w.register(b2, "b", "b-2")
      w.closeAbandoning(b1)
      assert.isTrue(b2.outbox.some((item) => typeof item === "object" && "mail" in item && item.mail.message.id === ask.id),
        "the ask is not in b-2's outbox: the test sets up nothing")
      // Its agent read the question through b-1.
      w.batch(b2, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(d), reply.id, "the reply did not reach d: the test sets up nothing")
      w.clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoning(b2)
      assert.deepStrictEqual(receipts(w.framesOf(d)), [])
    }))
})

describe("an ask answered while a takeover's carried hold keeps its copy (given back by an old close, another awaited)", () => {
  it.effect("given back past its deadline when the hold ends: its asker gets no expired receipt", () =>
    Effect.gen(function*() {
      const w = yield* world
      const b1 = w.connect(1)
      w.register(b1, "b", "b-1")
      const d = w.connect(2)
      w.register(d, "d", undefined, [])
      const e = w.connect(3)
      w.register(e, "e", undefined, [])
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const other = message("fyi")
      w.batch(d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      // b-2 takes b over (a hold for d's mail, waiting for b-1's close), and is written e's message, unconfirmed.
      const b2 = w.connect(4)
      w.register(b2, "b", "b-2")
      w.batch(e, [{ type: "send", to: "b", message: other }])
      assert.deepStrictEqual(w.messagesOf(b2), [other.id], "e's message was not written to b-2: the test sets up nothing")
      // b-3 takes b over: the hold is carried over, and waits for b-2's close too.
      const b3 = w.connect(5)
      w.register(b3, "b", "b-3")
      w.closeAbandoning(b1)
      const kept = w.router.output.holds.keptFor(b3.session?.key ?? "?") ?? []
      assert.isTrue(kept.some((item) => typeof item === "object" && "mail" in item && item.mail.message.id === ask.id),
        "the hold does not keep the ask: the test sets up nothing")
      // Its agent read the question through b-1.
      w.batch(b3, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(d), reply.id, "the reply did not reach d: the test sets up nothing")
      w.clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoning(b2)
      assert.notInclude(w.messagesOf(b3), ask.id, "the answered ask was asked again on b-3")
      assert.deepStrictEqual(receipts(w.framesOf(d)), [])
    }))
})

describe("an ask answered while its copy is in the untaken rest of a takeover's old connection, whose close has begun", () => {
  it.effect("given back past its deadline when that close ends: its asker gets no expired receipt", () =>
    Effect.gen(function*() {
      const w = yield* world
      const b0 = w.connect(1)
      w.register(b0, "b", "b-1")
      const d = w.connect(2)
      w.register(d, "d", undefined, [])
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(b0), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      // b-1 rejoins on a connection whose socket takes nothing: the ask, given back, stays in its write in progress.
      const b1 = w.connect(3, { stuck: true })
      w.register(b1, "b", "b-1")
      const b2 = w.connect(4)
      w.register(b2, "b", "b-2")
      // b-1's close begins: the write is abandoned, its untaken rest kept until the close ends.
      closePeer(b1, "destroy")
      w.router.abandonWrites(b1)
      assert.isTrue((b1.untakenRest ?? []).some((item) => "mail" in item && item.mail.message.id === ask.id),
        "the ask is not in b-1's untaken rest: the test sets up nothing")
      // Its agent read the question through b-1's first connection.
      w.batch(b2, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(d), reply.id, "the reply did not reach d: the test sets up nothing")
      w.clock.now += ASK_TIMEOUT_MS + 1
      w.close(b1)
      assert.notInclude(w.messagesOf(b2), ask.id, "the answered ask was asked again on b-2")
      assert.deepStrictEqual(receipts(w.framesOf(d)), [])
    }))
})

describe("an ask given back to its replier's new connection at a rejoin, answered there before it is written", () => {
  it.effect("in that connection's write in progress, given back past its deadline at its close: no expired receipt", () =>
    Effect.gen(function*() {
      const w = yield* world
      const b1 = w.connect(1)
      w.register(b1, "b", "b-1")
      const d = w.connect(2)
      w.register(d, "d", undefined, [])
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      w.batch(d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.messagesOf(b1), [ask.id], "the ask was not written to b-1: the test sets up nothing")
      const again = w.connect(3, { stuck: true })
      w.register(again, "b", "b-1")
      assert.isDefined(again.writer.inFlight, "the rejoin's write is not in progress: the test sets up nothing")
      w.batch(again, [{ type: "send", to: "d", message: reply }])
      assert.include(w.messagesOf(d), reply.id, "the reply did not reach d: the test sets up nothing")
      w.clock.now += ASK_TIMEOUT_MS + 1
      w.closeAbandoning(again)
      assert.deepStrictEqual(receipts(w.framesOf(d)), [])
    }))
})
