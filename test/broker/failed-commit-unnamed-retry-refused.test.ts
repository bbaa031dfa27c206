/**
 * After a failed commit, a held acknowledgement that names no session (a retry answered from its record while its
 * `to` resolves to no session now: SendReplays.replayedUnresolved, or a route's refusal in Send.ts) is refused with
 * the send it retries when that send's mail was dropped and no other row under the id is left — acknowledged by the
 * next commit, it would claim a message nothing holds (review rvlate1 probe 1, of fixbf, which kept every unnamed
 * one). While another session's row under the id is left it is kept (test/broker/failed-commit-retry-names-session
 * .test.ts, review rvbf probe 1). A StoreJournal driven directly; no sleep, no clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Mail } from "../../src/broker/Peer.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

describe("a failed commit refuses an unnamed retry whose message it dropped", () => {
  it.effect("an unnamed retry of a send refused by a failed commit (its mail dropped) is refused too, never acknowledged later", () =>
    Effect.gen(function*() {
      const { attach, batch } = yield* handRouter({})
      const d = attach(fakeConnection(1, false))
      batch(d, [registerFrame({ sessionId: "d" })])
      const senderKey = d.session?.key ?? assert.fail("d is not registered: the test sets up nothing")
      const refusals: Array<string> = []
      const released: Array<string> = []
      const journal = new StoreJournal(() => {}, 3_600_000, () => {}, (ready) => {
        for (const held of ready) released.push(`${held.id} ${held.targetKey ?? "-"}`)
      }, (held, _reason, dropFor) => {
        refusals.push(`${held.id} ${held.targetKey ?? "-"} drop ${dropFor ?? "-"}`)
        return true
      })
      const mail: Mail = {
        recordKey: `${senderKey}\u0001m0`,
        senderKey,
        senderId: "d",
        senderIdentity: undefined,
        fromJson: "{}",
        message: { id: "m0", timestamp: 1, content: { text: "for b" } },
        brokerReceivedAt: 1,
        spaceKey: "scope",
        targetKey: "b",
        targetId: "b",
        targetIdentity: undefined,
        queuedAt: 1,
        askTimeoutMs: undefined
      }
      journal.putMail(mail)
      // The send's first answer names b; its retry, answered from the record with `to` unresolved, names none.
      journal.holdAck(d, "m0", "queued", undefined, "b")
      journal.holdAck(d, "m0", "queued")
      const taken = journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) journal.failed(taken, "disk full")
      assert.deepStrictEqual(refusals.slice(0, 1), ["m0 b drop b"], "b's send was not refused with its mail dropped: the test sets up nothing")
      journal.putMail({ ...mail, recordKey: `${senderKey}\u0001other`, message: { ...mail.message, id: "other" } })
      const next = journal.take(1_000_000)
      if (next !== undefined) journal.committed(next)
      assert.deepStrictEqual(released, [], "the unnamed retry of the refused send (its mail dropped) was acknowledged after the next commit")
      assert.strictEqual(refusals.length, 2, "the unnamed retry of the refused send was not refused")
    }))
})
