/**
 * After a failed commit, the refusal of a queued send under a reused id (MailDelivery.refuseUnstored) rewrites only
 * that message's replay record (`rewrite`'s owner, the mail's fingerprint), not the one found by sender and id. d
 * sends m0 ("for z") to z, away: queued; the replay bound pushes its record out, so d's next send under m0 ("for
 * b", to b, live, a base client) is a new message, written to b at once. Both acknowledgements wait for the
 * commit, which fails. Only "for z" is refused: "for b"'s held acknowledgement is not taken for a retry of it
 * (JournalAcks.refuseHeld's refused set names the session: task byid; review rrmk probe 2, part a) and goes once a
 * commit succeeds; and "for b"'s record is not marked refused and retryable, so d's retry of it is answered from
 * its record and not written to b a second time (review rrmk probe 2, part b). A hand-driven Router with a
 * hand-driven StoreJournal (as failed-commit-one-id-two-sessions.test.ts); the clock is a plain number; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { frameLine, journalRouter, sendTwiceUnderOneId } from "../support/journalRouter.ts"

const world = Effect.gen(function*() {
  const w = yield* journalRouter({ replayRecords: 1 })
  const { batch, journal } = w
  const written = (peer: Peer): Array<string> => w.router.output.writes.takeForWrite(peer).frames.map((frame) => frameLine(frame, true))
  w.away("z")
  w.connect("s")
  const b = w.connect("b")
  const d = w.connect("d", [RECEIVED_V1])
  written(d)
  written(b)
  const m0 = message("m0")
  sendTwiceUnderOneId(w, d, m0, "z", "s", "b")
  assert.deepStrictEqual(written(b).filter((line) => line.endsWith(m0.id)), [`message ${m0.id}`], "b was not written \"for b\": the probe sets up nothing")
  assert.deepStrictEqual(written(d).filter((line) => line.includes(m0.id)), [], "d was acknowledged before the commit: the probe sets up nothing")
  const taken = journal.take(1_000_000)
  assert.isDefined(taken, "nothing to commit: the probe sets up nothing")
  if (taken !== undefined) journal.failed(taken, "disk full")
  return { journal, batch, written, b, d, m0 }
})

describe("a failed commit with a queued send and a live one under one reused id", () => {
  it.effect("d is told only the queued send failed; the one written to b is acknowledged once a commit succeeds", () =>
    Effect.gen(function*() {
      const { d, journal, m0, written } = yield* world
      assert.deepStrictEqual(written(d).filter((line) => line.includes(m0.id)), [`delivery_failed ${m0.id} failed`],
        "d was told both sends under m0 failed, though \"for b\" was written to b")
      const next = journal.take(1_000_000)
      if (next !== undefined) journal.committed(next)
      assert.deepStrictEqual(written(d).filter((line) => line.includes(m0.id)), [`delivered ${m0.id} socket_delivered`],
        "the acknowledgement of \"for b\" was not released by the next commit")
    }))

  it.effect("a retry of the send written to b is not written to b again", () =>
    Effect.gen(function*() {
      const { b, batch, d, journal, m0, written } = yield* world
      // The disk is back: a commit succeeds, and d retries the send it was told failed.
      const commit = (): void => {
        const next = journal.take(1_000_000)
        if (next !== undefined) journal.committed(next)
      }
      commit()
      written(d)
      batch(d, [{ type: "send", to: "b", message: { ...m0, content: { text: "for b" } } }])
      commit()
      assert.deepStrictEqual(written(b).filter((line) => line.endsWith(m0.id)), [], "d's retry of \"for b\" was written to b a second time")
    }))
})
