/**
 * `reply-elsewhere-v1` while a taken-over base client's write is in progress
 * (AnsweredAsks.tookOver): b-A asks d and leaves; another instance, b-R, a
 * base client (no custody: a takeover takes no hold), holds b, and d's
 * reply is in b-R's write, which its socket never takes. b-A takes b back:
 * until b-R's close, that write may come back to b-A — and it does. So b-A
 * is not told `ask_answered_elsewhere`: not at its registration, not for a
 * resend before that close — also when a third instance took b from b-R
 * in between (the taker inherits what may come back). Driven by hand: each write completes at once
 * but b-R's stuck one, and each close is the test's.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { ASK_TIMEOUT_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const ASKER = [REJOIN_V1, TAKEOVER_V1, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1]
const BASE_OTHER = [REJOIN_V1, TAKEOVER_V1]

interface Seen {
  readonly type: string
  readonly messageId?: string
  readonly message?: { readonly id: string }
}

/**
 * b-A asks d and leaves; b-R (base) holds b, d's reply stuck in its write;
 * b-A takes b back (`through`: after another base instance, b-X, took it from b-R).
 */
const tookBackDuringWrite = (through = false) => Effect.gen(function*() {
  const { attach, batch, close, router } = yield* handRouter({}, () => 1_000_000)
  const written = new Map<Peer, Array<Seen>>()
  let stuck = false
  const connect = (id: number, stuckable = false): Peer => {
    const frames: Array<Seen> = []
    const peer = attach({
      ...fakeConnection(id, false),
      // A stuck write's socket took none of it: the close gives it back.
      unfinishedWrite: () => (stuckable && stuck ? 0 : undefined),
      write: (out: ReadonlyArray<OutFrame>) => {
        if (stuckable && stuck) return Effect.never
        for (const frame of out) frames.push(JSON.parse(frameText(frame)))
        return undefined
      }
    })
    written.set(peer, frames)
    return peer
  }
  const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
    peer.writer.flush()
    return written.get(peer) ?? []
  }
  const messagesOf = (peer: Peer) => framesOf(peer).flatMap((f) => f.type === "message" ? [f.message?.id] : [])
  const elsewhereOf = (peer: Peer) => framesOf(peer).flatMap((f) => f.type === "ask_answered_elsewhere" ? [f.messageId] : [])
  /** Closes `peer` as `finish` does once its writing is abandoned. */
  const closeAbandoned = (peer: Peer): void => {
    closePeer(peer, "destroy")
    router.abandonWrites(peer)
    close(peer)
  }

  const asker = connect(1)
  batch(asker, [registerFrame({ sessionId: "b", frame: { features: ASKER, instanceId: "b-A" } })])
  const d = connect(2)
  batch(d, [registerFrame({ sessionId: "d" })])
  const ask = message("well?", { expectsReply: true })
  batch(asker, [{ type: "send", to: "d", message: ask, askTimeoutMs: 600_000 }])
  assert.include(messagesOf(d), ask.id, "setup: d was not asked")
  closeAbandoned(asker)
  const other = connect(3, true)
  batch(other, [registerFrame({ sessionId: "b", frame: { features: BASE_OTHER, instanceId: "b-R" } })])
  framesOf(other)
  stuck = true
  const reply = message("the answer", { replyTo: ask.id })
  batch(d, [{ type: "send", to: "b", message: reply }])
  assert.deepStrictEqual(messagesOf(other), [], "setup: the reply was written to b-R")
  if (through) batch(connect(5), [registerFrame({ sessionId: "b", frame: { features: BASE_OTHER, instanceId: "b-X" } })])
  const back = connect(4)
  batch(back, [registerFrame({ sessionId: "b", frame: { features: ASKER, instanceId: "b-A" } })])
  assert.strictEqual(back.custodyHolds, 0, "setup: a hold was taken")
  return { ask, back, batch, closeAbandoned, elsewhereOf, messagesOf, other, reply }
})

describe("reply-elsewhere-v1: a reply in a taken-over base client's unfinished write may still come back", () => {
  it.effect("the asker taking the session back is not told at its registration, and the close gives it the reply", () =>
    Effect.gen(function*() {
      const { back, closeAbandoned, elsewhereOf, messagesOf, other, reply } = yield* tookBackDuringWrite()
      const toldAtRegistration = elsewhereOf(back)
      closeAbandoned(other)
      assert.include(messagesOf(back), reply.id, "setup: the reply was not given back to the returning asker")
      assert.deepStrictEqual(toldAtRegistration, [], "told answered elsewhere, then given the reply")
    }))

  it.effect("taking the session back from a third instance, the asker is not told while b-R's write may come back", () =>
    Effect.gen(function*() {
      const { back, closeAbandoned, elsewhereOf, messagesOf, other, reply } = yield* tookBackDuringWrite(true)
      const toldAtRegistration = elsewhereOf(back)
      closeAbandoned(other)
      assert.include(messagesOf(back), reply.id, "setup: the reply was not given back to the returning asker")
      assert.deepStrictEqual(toldAtRegistration, [], "told answered elsewhere, then given the reply")
    }))

  it.effect("the asker resending its ask before that close is told nothing answered elsewhere", () =>
    Effect.gen(function*() {
      const { ask, back, batch, closeAbandoned, elsewhereOf, messagesOf, other, reply } = yield* tookBackDuringWrite()
      batch(back, [{ type: "send", to: "d", message: ask, askTimeoutMs: 600_000 }])
      const toldForResend = elsewhereOf(back)
      closeAbandoned(other)
      assert.include(messagesOf(back), reply.id, "setup: the reply was not given back to the returning asker")
      assert.deepStrictEqual(toldForResend, [], "told answered elsewhere for a resend, then given the reply")
    }))
})
