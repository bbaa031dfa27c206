/**
 * Review revy, probe Y2 (replyack): the reply to an ask is routed to another
 * client instance of the asker's session, a base client (no custody, so a
 * takeover takes no hold) whose socket has not taken the write yet. The
 * asking instance takes the session back: the registration hook tells it
 * `ask_answered_elsewhere` (the route names the other instance) — and then
 * the old connection's close gives the unwritten reply back to it
 * (control-instance.test.ts shows that give-back). A false "elsewhere": the
 * reply was still on its way to this instance.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../src/broker/Peer.ts"
import { closePeer } from "../src/broker/RouterContext.ts"
import { ASK_TIMEOUT_V1, REJOIN_V1, REPLY_ELSEWHERE_V1, TAKEOVER_V1 } from "../src/protocol/features.ts"
import { frameText, type OutFrame } from "../src/protocol/framing.ts"
import { message, registerFrame } from "./support/broker.ts"
import { fakeConnection } from "./support/fakeConnection.ts"
import { handRouter } from "./support/handRouter.ts"

const ASKER = [REJOIN_V1, TAKEOVER_V1, ASK_TIMEOUT_V1, REPLY_ELSEWHERE_V1]
const BASE_OTHER = [REJOIN_V1, TAKEOVER_V1]

interface Seen {
  readonly type: string
  readonly messageId?: string
  readonly message?: { readonly id: string }
}

describe("review revy Y2: the reply in another instance's unfinished base write at the asker's return", () => {
  it.effect("the returning asker is not told answered elsewhere when the reply is then given back to it", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { attach, batch, close, router } = yield* handRouter({}, () => clock.now)
      const written = new Map<Peer, Array<Seen>>()
      let stuck = false
      const connect = (id: number, stuckable = false): Peer => {
        const frames: Array<Seen> = []
        const peer = attach({
          ...fakeConnection(id, false),
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
      const closeAbandoned = (peer: Peer): void => {
        closePeer(peer, "destroy")
        router.abandonWrites(peer)
        close(peer)
      }
      const messagesOf = (peer: Peer) => framesOf(peer).flatMap((f) => f.type === "message" ? [f.message?.id] : [])

      const asker = connect(1)
      batch(asker, [registerFrame({ sessionId: "b", frame: { features: ASKER, instanceId: "b-A" } })])
      const d = connect(2)
      batch(d, [registerFrame({ sessionId: "d" })])
      const ask = message("well?", { expectsReply: true })
      batch(asker, [{ type: "send", to: "d", message: ask, askTimeoutMs: 600_000 }])
      assert.include(messagesOf(d), ask.id, "setup: d was not asked")
      closeAbandoned(asker)

      // Another instance, a base client, holds b; its socket takes nothing from now on.
      const other = connect(3, true)
      batch(other, [registerFrame({ sessionId: "b", frame: { features: BASE_OTHER, instanceId: "b-R" } })])
      framesOf(other)
      stuck = true
      const reply = message("the answer", { replyTo: ask.id })
      batch(d, [{ type: "send", to: "b", message: reply }])
      assert.deepStrictEqual(messagesOf(other), [], "setup: the reply was written to the other instance")

      // The asking instance takes b back: no hold (the other is a base client).
      const back = connect(4)
      batch(back, [registerFrame({ sessionId: "b", frame: { features: ASKER, instanceId: "b-A" } })])
      assert.strictEqual(back.custodyHolds, 0, "setup: a hold was taken")
      const toldAtRegistration = framesOf(back).flatMap((f) => f.type === "ask_answered_elsewhere" ? [f.messageId] : [])
      // The old connection closes; its socket never took the write: the reply comes back, to the asker.
      closeAbandoned(other)
      assert.include(messagesOf(back), reply.id, "setup: the reply was not given back to the returning asker")
      assert.deepStrictEqual(toldAtRegistration, [], "told answered elsewhere, then given the reply")
    }))
})
