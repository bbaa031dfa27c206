/**
 * The store keeps the mailbox's queue order for mail given back at a takeover
 * hold's end (review mailbox S1's fix): `d`'s m0 and m1, written to b's old
 * connection and never confirmed, come back when that connection closes,
 * after b's new connection left and `d`'s m2 went to the mailbox. The mailbox
 * queues m2 behind them (MailDelivery.queueBehind), and so must the store —
 * which restores mail in its rows' `seq` order: the given-back rows are stored
 * again at their return (StoreJournal.mailRequeued), so m2's row is too, or a
 * restart would flush m2 first, out of d's order. On a Router driven by hand
 * with a durable broker's journal, whose batches the test applies to a map of
 * rows by `seq`, as the store does.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { setUp } from "../support/custodyHold.ts"

describe("mail given back at a takeover hold's end, in the store", () => {
  it.effect("is stored ahead of the mail its sender sent while the session was away, as the mailbox queues it", () =>
    Effect.gen(function*() {
      const journal = new StoreJournal(() => {}, 3_600_000)
      const rows = new Map<number, string>()
      const apply = () => {
        const taken = journal.take(1_000_000)
        if (taken === undefined) return
        for (const seq of taken.batch.mailDeletes) rows.delete(seq)
        for (const put of taken.batch.mailPuts) rows.set(put.seq, put.mail.message.content.text)
        journal.committed(taken)
      }
      const { closeOld, router, send, sender, takeOver, close } = yield* setUp({ journal })
      apply()
      close(takeOver())
      assert.isFalse(send(sender, "m2"), "m2 did not go to the mailbox: the test sets up nothing")
      apply()
      closeOld()
      apply()
      assert.strictEqual(router.heldMail()?.messages, 3, "m0, m1 and m2 are not all queued: the test sets up nothing")
      const stored = [...rows.entries()].sort(([a], [b]) => a - b).map(([, text]) => text)
      assert.deepStrictEqual(stored, ["m0", "m1", "m2"])
    }))
})
