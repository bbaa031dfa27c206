/**
 * An acknowledgement held until its message is read (durable mode, `received-v1` on both ends: StoreJournal's
 * `holdAckUntilRead`) is released by that message's read only, not by the read of another message under its id for
 * another session (task byid item 1): S sends m0 to A, then (m0's replay record pushed out) another m0 to B; B's
 * confirmed read acknowledges B's m0 once, and A's stays held — A never read it, and nothing is stored yet, so a
 * "delivered" for it would promise a message a crash loses. Then A's read releases A's. A probe that found no
 * failure on this code (each such acknowledgement waits on its own row, which StoreJournal.mailGone drops by its
 * session); kept as a regression test: with mailGone dropping every row under the id, it fails. A hand-driven Router with a hand-driven StoreJournal; the clock is a plain
 * number; no commit is taken; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { journalRouter, lineRecording, sendTwiceUnderOneId } from "../support/journalRouter.ts"

describe("acknowledgements held until read under a reused id for two sessions", () => {
  it.effect("B's read of its m0 releases one acknowledgement of m0, and A's read the other", () =>
    Effect.gen(function*() {
      const w = yield* journalRouter({ replayRecords: 1 })
      const { batch, journal } = w
      // Every frame written to each connection, as `<type> <message id>`; `written` takes those not taken yet.
      const frames = new Map<Peer, Array<string>>()
      const written = (peer: Peer): Array<string> => (frames.get(peer) ?? []).splice(0)
      const live = (sessionId: string): Peer => {
        const seen: Array<string> = []
        const peer = w.attach(lineRecording(w.nextConnection(), seen))
        frames.set(peer, seen)
        batch(peer, [registerFrame({ sessionId, frame: { features: [RECEIVED_V1] } })])
        return peer
      }
      const a = live("a")
      const b = live("b")
      live("c")
      const s = live("s")
      written(s)
      const m0 = message("m0")
      sendTwiceUnderOneId(w, s, m0, "a", "c", "b")
      assert.deepStrictEqual(written(s).filter((line) => line.endsWith(m0.id)), [], "s was acknowledged m0 before a read: the test sets up nothing")
      assert.strictEqual(journal.mailHeld, 3, "not three rows pending: the test sets up nothing")
      // B reads its m0 (its client confirms every frame written to it).
      batch(b, [{ type: "received", frames: b.framesWritten }])
      assert.deepStrictEqual(written(s).filter((line) => line.endsWith(m0.id)), [`delivered ${m0.id}`],
        "B's read of its m0 did not release exactly one acknowledgement of m0 (A's m0 is unread)")
      assert.strictEqual(journal.mailHeld, 2, "B's read dropped another row than its own")
      batch(a, [{ type: "received", frames: a.framesWritten }])
      assert.deepStrictEqual(written(s).filter((line) => line.endsWith(m0.id)), [`delivered ${m0.id}`],
        "A's read of its m0 did not release its acknowledgement")
    }))
})
