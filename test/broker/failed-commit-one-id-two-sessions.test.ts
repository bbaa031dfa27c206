/**
 * After a failed commit, each held `queued` acknowledgement refused drops its own message (JournalAcks.refuseHeld,
 * MailDelivery.refuseUnstored by the session its pending row is for): two sends under one id in one failed commit,
 * for two sessions away (the first's replay record pushed out between them, so the second is a new message), are
 * both refused as never sent and neither stays queued or is stored by the next commit (review revmailkey2 probe 5).
 * A hand-driven Router with a hand-driven StoreJournal (as given-back-failed-commit.test.ts); the clock is a plain
 * number; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { journalRouter, twoQueuedUnderOneId } from "../support/journalRouter.ts"

describe("a failed commit with two sends under one id queued for two sessions", () => {
  it.effect("neither message refused as never sent is stored by the next commit or left queued", () =>
    Effect.gen(function*() {
      const w = yield* journalRouter({ replayRecords: 1 })
      const { journal, router, written } = w
      const { d, m0 } = twoQueuedUnderOneId(w)
      assert.strictEqual(router.heldMail()?.messages, 2, "both messages under m0 are not queued: the test sets up nothing")
      assert.deepStrictEqual(written(d).filter((line) => line.endsWith(m0.id)), [], "d was acknowledged before the commit: the test sets up nothing")
      const taken = journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) journal.failed(taken, "disk full")
      const toD = written(d)
      assert.deepStrictEqual(toD.filter((line) => line.endsWith(m0.id)), [`delivery_failed ${m0.id}`, `delivery_failed ${m0.id}`],
        "d was not told both sends under m0 failed: the test sets up nothing")
      // Both sends were refused as never sent (retryable): neither message may still wait for its session.
      // The disk is back: what the next commit stores under m0 (a row to deliver it from).
      const next = journal.take(1_000_000)
      const stored = (next?.batch.mailPuts ?? []).filter((put) => put.mail.message.id === m0.id).map((put) => put.mail.message.content.text)
      if (next !== undefined) journal.committed(next)
      assert.deepStrictEqual(stored, [], "a message under m0 whose send d was told failed as never sent is stored to be delivered")
      assert.strictEqual(router.heldMail()?.messages ?? 0, 0, "a message whose send was refused as never sent is still queued")
    }))
})
