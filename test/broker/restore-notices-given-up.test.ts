/**
 * A durable restore past the mailbox's bound, its sender away: the first
 * MAX_OWED_PER_SENDER eviction notices are owed (and stored); each one past
 * that is given up before it is built, so the journal is never asked to
 * store it (task restfast: it was built, stored and deleted again per
 * eviction). Router driven by hand, a memory store; no clock, no sleep.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_OWED_PER_SENDER } from "../../src/broker/AwayNotices.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const DAY = 24 * 60 * 60 * 1000
const T0 = 1_000_000
const ROWS = MAX_OWED_PER_SENDER + 60
const KEPT = 20

/** A journal that counts the notices it is asked to store. */
class CountingJournal extends StoreJournal {
  noticesPut = 0
  override putNotice(senderKey: string, frame: string, at: number): number {
    this.noticesPut++
    return super.putNotice(senderKey, frame, at)
  }
}

describe("restore past the mailbox's bound, sender away", () => {
  it.effect(`stores only the ${MAX_OWED_PER_SENDER} notices owed, and owes them to the sender`, () =>
    Effect.gen(function*() {
      const store = makeMemory(makeMemoryMailState())
      const journal = new StoreJournal(() => {}, DAY)
      const first = yield* handRouter({ mailboxCapacity: ROWS * 2, mailboxRetention: DAY }, () => T0, {}, false, journal)
      const away = first.attach(fakeConnection(1, false))
      first.batch(away, [registerFrame({ sessionId: "t" })])
      first.close(away)
      const sender = first.attach(fakeConnection(2, false))
      first.batch(sender, [registerFrame({ sessionId: "d" })])
      for (let i = 0; i < ROWS; i++) {
        first.batch(sender, [{ type: "send", to: "t", message: { id: `m${i}`, timestamp: T0, content: { text: "x" } } }])
      }
      const taken = journal.take(T0)
      if (taken !== undefined) {
        yield* store.commit(taken.batch)
        journal.committed(taken)
      }
      const recovered = yield* store.load(T0 - DAY)
      expect(recovered.mail).toHaveLength(ROWS)
      const counting = new CountingJournal(() => {}, DAY)
      const second = yield* handRouter({ mailboxCapacity: KEPT, mailboxRetention: DAY }, () => T0, {}, false, counting)
      second.router.restore(recovered)
      expect(second.router.heldMail()?.messages).toBe(KEPT)
      expect(second.router.heldMail()?.notices).toBe(MAX_OWED_PER_SENDER)
      expect(counting.noticesPut).toBe(MAX_OWED_PER_SENDER)
    }))
})
