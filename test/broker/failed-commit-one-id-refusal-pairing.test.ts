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
import { journalRouter, twoQueuedUnderOneId } from "../support/journalRouter.ts"

describe("a failed commit with two sends under one id, one written to its returned session", () => {
  it.effect("refuses only the send still queued, and acknowledges the written one after the next commit", () =>
    Effect.gen(function*() {
      const w = yield* journalRouter({ replayRecords: 1 })
      const { journal, recording, router, written } = w
      const { d, m0 } = twoQueuedUnderOneId(w)
      assert.strictEqual(router.heldMail()?.messages, 2, "both messages under m0 are not queued: the test sets up nothing")
      // z comes back and is written its m0 (no longer queued, and its row gone with the write: Custody.written).
      const toZ: Array<string> = []
      recording("z", toZ)
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
