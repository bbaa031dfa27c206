/**
 * A short-lived (`ephemeral-v1`) asker that ends by `unregister` with the
 * reply unconfirmed on its connection: the reply is handed back and fails
 * (MailDelivery.lostToEnded → lost → StaleAsks.replyLost). The ask's copy the
 * replier's dropped connection gave back, remembered as answered before its
 * deadline, is not written to the replier again, and the ask's edge stays
 * closed: nobody waits for that answer (review revx X3).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { custodyFeatures, type Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 60_000

describe("a reply lost as its short-lived asker ends by unregister", () => {
  it.effect("does not reopen the ask nor ask the replier again", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { batch, attach, close, router } = yield* handRouter({ askTimeout: ASK_TIMEOUT_MS }, () => clock.now)
      const written = new Map<Peer, Array<Seen>>()
      const connect = (id: number, sessionId: string, frame: Readonly<Record<string, unknown>>): Peer => {
        const frames: Array<Seen> = []
        const peer = attach({
          ...fakeConnection(id, false),
          write: (out: ReadonlyArray<OutFrame>) => {
            for (const f of out) frames.push(JSON.parse(frameText(f)))
            return undefined
          }
        })
        written.set(peer, frames)
        batch(peer, [registerFrame({ sessionId, frame })])
        return peer
      }
      const messagesOf = (peer: Peer) => {
        peer.writer.flush()
        return (written.get(peer) ?? []).flatMap((f) => f.type === "message" ? [f.message?.id ?? "?"] : [])
      }
      const b1 = connect(1, "b", { features: custodyFeatures, instanceId: "b-1" })
      const d = connect(2, "d", { features: [...custodyFeatures, EPHEMERAL_V1], instanceId: "d-1", ephemeral: true })
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      batch(d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(messagesOf(b1), [ask.id], "setup: the ask was not written to b-1")
      // b-1 answers before confirming the ask; the reply reaches d, which does not confirm it.
      batch(b1, [{ type: "send", to: "d", message: reply }])
      assert.deepStrictEqual(messagesOf(d), [reply.id], "setup: the reply was not written to d")
      // b-1's connection drops before the deadline: the answered copy is dropped, remembered.
      closePeer(b1, "destroy")
      router.abandonWrites(b1)
      close(b1)
      const b2 = connect(3, "b", { features: custodyFeatures, instanceId: "b-2" })
      assert.deepStrictEqual(messagesOf(b2), [], "setup: b-2 was written something at its registration")
      // d, short-lived, ends by unregister: its unconfirmed reply is handed back and fails.
      batch(d, [{ type: "unregister" }])
      assert.notInclude(messagesOf(b2), ask.id, "the replier was asked again the question of an asker that ended")
      assert.strictEqual(router.stats().asks, 0, "the ended asker's ask was opened again")
    }))
})
