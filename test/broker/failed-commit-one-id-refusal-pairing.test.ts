/**
 * After a failed commit, a held `queued` acknowledgement is refused, and its mail dropped, only for its own send:
 * the one for the session its send's mail is for (JournalAcks.refuseHeld by `HeldAck.targetKey`), not the first
 * pending row under the id (task byid item 2). Two sends under one id queued for two sessions away (the first's
 * replay record pushed out between them, so the second is a new message); the first one's session comes back and
 * is written its mail before the commit fails. Paired by the first pending row under the id, the first send's
 * refusal dropped the second's mail, and the second send was refused as a retry of the first: the sender was told
 * both failed as never sent while the first had been written to its session.
 * A hand-driven Router with a hand-driven StoreJournal (as failed-commit-one-id-two-sessions.test.ts); the clock is
 * a plain number; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { frameText } from "../../src/protocol/framing.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

describe("a failed commit with two sends under one id, one written to its returned session", () => {
  it.effect("refuses only the send still queued, and acknowledges the written one after the next commit", () =>
    Effect.gen(function*() {
      const refs: { router?: Router } = {}
      const journal = new StoreJournal(
        () => {},
        3_600_000,
        () => {},
        (ready) => {
          for (const held of ready) refs.router?.output.forceEnqueue(held.peer, held.frame())
        },
        (held, reason, dropFor) => refs.router?.refuseUnstored(held.peer, held.senderKey, held.id, reason, dropFor) ?? false
      )
      const { attach, batch, close, router } = yield* handRouter({ replayRecords: 1 }, () => 1_000_000, {}, false, journal)
      refs.router = router
      const written = (peer: Peer): Array<string> =>
        router.output.writes.takeForWrite(peer).frames.map((frame) => {
          const parsed: { type: string; messageId?: string; message?: { id: string } } = JSON.parse(frameText(frame))
          return `${parsed.type} ${parsed.messageId ?? parsed.message?.id ?? ""}`
        })
      let id = 0
      const away = (sessionId: string): void => {
        const peer = attach(fakeConnection(++id, false))
        batch(peer, [registerFrame({ sessionId })])
        close(peer)
      }
      away("z")
      away("b")
      const s = attach(fakeConnection(++id, false))
      batch(s, [registerFrame({ sessionId: "s" })])
      const d = attach(fakeConnection(++id, false))
      batch(d, [registerFrame({ sessionId: "d", frame: { features: [RECEIVED_V1] } })])
      written(d)
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "z", message: { ...m0, content: { text: "for z" } } }])
      // The replay bound (one record) pushes m0's record out: the next send under m0's id is a new message.
      batch(d, [{ type: "send", to: "s", message: message("other") }])
      batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } } }])
      assert.strictEqual(router.heldMail()?.messages, 2, "both messages under m0 are not queued: the test sets up nothing")
      // z comes back and is written its m0 (no longer queued, and its row gone with the write: Custody.written).
      const toZ: Array<string> = []
      const z = attach({
        ...fakeConnection(++id, false),
        write: (frames) => {
          for (const frame of frames) toZ.push(frameText(frame))
          return undefined
        }
      })
      batch(z, [registerFrame({ sessionId: "z" })])
      assert.isTrue(toZ.some((text) => text.includes("for z")), "z was not written its m0: the test sets up nothing")
      assert.strictEqual(router.heldMail()?.messages, 1, "b's m0 is not the one message queued: the test sets up nothing")
      assert.deepStrictEqual(written(d).filter((line) => line.endsWith(m0.id)), [], "d was acknowledged before the commit: the test sets up nothing")
      const taken = journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) journal.failed(taken, "disk full")
      // Only b's send was never sent: z's was written to z, and its acknowledgement waits for the next commit.
      assert.deepStrictEqual(written(d).filter((line) => line.endsWith(m0.id)), [`delivery_failed ${m0.id}`],
        "d was not told exactly one send under m0 failed (z's, written to z, refused as never sent too)")
      assert.strictEqual(router.heldMail()?.messages ?? 0, 0, "b's m0, refused as never sent, is still queued")
      const next = journal.take(1_000_000)
      if (next !== undefined) journal.committed(next)
      assert.deepStrictEqual(written(d).filter((line) => line.endsWith(m0.id)), [`delivered ${m0.id}`],
        "d was not acknowledged z's m0 once the next commit was stored")
    }))
})
