/**
 * Mail given back to the mailbox after it was stored stays stored across a
 * failed commit (review revmailbox D2): its row is written again with the
 * date it went back (StoreJournal.mailGivenBack, `MailCommit.mailUpdates`),
 * its entry never made pending — a failed commit's `JournalAcks.refuseHeld`
 * reads a pending entry as a send never stored, refused a held `queued`
 * acknowledgement of it and dropped the mail (the `mailbox` branch's
 * re-store did: revmailbox probe 2). So: d's m0, stored and acknowledged,
 * is given back at b's close; d retries m0 (answered `queued` from its
 * replay record, held for the commit); that commit fails; the next one goes
 * through — m0 is still queued, its row still stored and written again
 * marked given back, and d's retry is not refused.
 * On a Router driven by hand with a journal wired as Broker.ts wires it; the
 * test takes and fails the batches itself. No clock is involved.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { journalRouter, lineRecording } from "../support/journalRouter.ts"

describe("a failed commit after stored mail was given back", () => {
  it.effect("neither drops the stored mail nor refuses its sender's retry as never sent, and rewrites its row", () =>
    Effect.gen(function*() {
      const { attach, batch, close, journal, router, written: lines } = yield* journalRouter({})
      const written = (peer: Peer, into: Array<string>): void => {
        into.push(...lines(peer))
      }
      const toB: Array<string> = []
      const b = attach(lineRecording(1, toB))
      batch(b, [registerFrame({ sessionId: "b", frame: { features: [RECEIVED_V1] } })])
      const toD: Array<string> = []
      const d = attach(lineRecording(2, toD))
      batch(d, [registerFrame({ sessionId: "d", frame: { features: [RECEIVED_V1] } })])
      const m0 = message("m0")
      batch(d, [{ type: "send", to: "b", message: m0 }])
      assert.include(toB, `message ${m0.id}`, "m0 was not written to b: the test sets up nothing")
      // Stored: d is acknowledged.
      // The rows the store holds, by seq, as a store applies the batches.
      const rows = new Map<number, string>()
      const first = journal.take(1_000_000)
      assert.isDefined(first)
      if (first !== undefined) {
        for (const put of first.batch.mailPuts) rows.set(put.seq, put.mail.message.id)
        journal.committed(first)
      }
      written(d, toD)
      assert.include(toD, `delivered ${m0.id}`, "d was not acknowledged m0: the test sets up nothing")
      // b's connection closes before its client confirmed m0: m0 goes back to the mailbox.
      close(b)
      assert.strictEqual(router.heldMail()?.messages, 1, "m0 did not go back to the mailbox: the test sets up nothing")
      // d sends m0 again (its acknowledgement lost, say): answered from its replay record, held for the commit.
      batch(d, [{ type: "send", to: "b", message: m0 }])
      const second = journal.take(1_000_000)
      assert.isDefined(second)
      if (second !== undefined) journal.failed(second, "disk full")
      written(d, toD)
      // The disk is back: the next commit goes through.
      const third = journal.take(1_000_000)
      // The rows written again, marked given back, by seq.
      const rewritten: Array<string> = []
      if (third !== undefined) {
        for (const seq of third.batch.mailDeletes) rows.delete(seq)
        for (const put of third.batch.mailPuts) rows.set(put.seq, put.mail.message.id)
        for (const update of third.batch.mailUpdates ?? []) {
          if (rows.get(update.seq) === update.mail.message.id && update.givenBack !== undefined) rewritten.push(update.mail.message.id)
        }
        journal.committed(third)
      }
      // With the re-store (dea94e09): m0 is dropped (0 queued) and d is told `delivery_failed` for it.
      assert.deepStrictEqual(
        {
          refused: toD.includes(`delivery_failed ${m0.id}`),
          queued: router.heldMail()?.messages ?? 0,
          stored: [...rows.values()].includes(m0.id),
          rewritten
        },
        { refused: false, queued: 1, stored: true, rewritten: [m0.id] }
      )
    }))
})
