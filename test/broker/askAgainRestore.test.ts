/**
 * An ask put back after its reply was lost (MailDelivery.askAgain) is stored again under the seq its row had
 * (StoreJournal.putAgain), its acceptance's, marked given back where it was put back — so after a durable restart
 * it keeps its place in the acceptance order (RestoreOrder.acceptInSeqOrder) and a mailbox cancel under its reused
 * id withdraws what it withdraws on a broker that did not restart (review rvmk2 probe 1: it was stored under a new
 * seq, placed after a later send, and the cancelled message was delivered).
 * World: constant clock (every stamp ties), one replay record, d's mailbox bytes hold the reply or s's big note, not
 * both. d asks b m0 ("for b", written to b); the fill pushes m0's record out; d sends m0 again to away z ("for z");
 * d leaves. b replies to d (queued) and closes unconfirmed: "for b" goes back and is dropped as answered. s's big
 * note to d pushes the reply out: the reply is lost, the ask's edge opens again and "for b" is put back in the
 * mailbox. d's cancel of m0 withdraws "for z" (accepted last) on the broker that did not restart, and on one
 * restarted from the store. Run twice: with every change in one commit, and with a commit right after m0 was
 * stored, so that its old row's delete and its put again go in one batch (a commit deletes before it puts).
 * Routers driven by hand, the journal committed to a memory store; nothing waits on time.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { makeMemory, makeMemoryMailState, type MailStoreService } from "../../src/store/MailStore.ts"
import { registerFrame } from "../support/broker.ts"
import { features, noting } from "../support/custodyHold.ts"
import { handRouter } from "../support/handRouter.ts"
import { flushedTo, register } from "../support/handSessions.ts"

const HOUR = 3_600_000
const T0 = 1_000_000
const options = { replayRecords: 1, mailboxBytesPerTarget: 19_000 }
const m0 = { id: "m0", timestamp: 1, content: { text: "for b" }, expectsReply: true }

/** Commits what `journal` holds to `store`, if anything. */
const commit = (journal: StoreJournal, store: MailStoreService) =>
  Effect.gen(function*() {
    const taken = journal.take(T0)
    if (taken === undefined) return
    yield* store.commit(taken.batch)
    journal.committed(taken)
  })

const scenario = (commitAfterAsk: boolean) =>
  Effect.gen(function*() {
    const store = makeMemory(makeMemoryMailState())
    const journal = new StoreJournal(() => {}, 24 * HOUR)
    const first = yield* handRouter(options, () => T0, {}, false, journal)
    const writtenB: Array<string> = []
    const b = first.attach(noting(1, writtenB))
    first.batch(b, [registerFrame({ sessionId: "b", frame: { features, instanceId: "b-1" } })])
    const s = register(first, 2, "s")
    first.close(register(first, 3, "z"))
    const d = register(first, 4, "d")
    first.batch(d, [{ type: "send", to: "b", message: m0 }])
    assert.deepStrictEqual(writtenB, ["for b"], "setup: b was not written m0")
    if (commitAfterAsk) yield* commit(journal, store)
    first.batch(d, [{ type: "send", to: "s", message: { id: "fill", timestamp: 1, content: { text: "fill" } } }])
    first.batch(d, [{ type: "send", to: "z", message: { id: "m0", timestamp: 1, content: { text: "for z" } } }])
    first.close(d)
    first.batch(b, [{ type: "send", to: "d", message: { id: "r", timestamp: 1, content: { text: "yes" }, replyTo: "m0" } }])
    first.closeAbandoning(b)
    const heldBefore = first.router.heldMail()?.messages
    first.batch(s, [{ type: "send", to: "d", message: { id: "big", timestamp: 1, content: { text: "x".repeat(9_000) } } }])
    yield* commit(journal, store)
    const loaded = yield* store.load(T0 - 24 * HOUR)
    const rows = loaded.mail.map((row) => `${row.seq}:${row.mail.message.content.text.slice(0, 5)}:${row.givenBack ?? "-"}`)
    // "for b" under its own seq, 1, marked put back (`givenBack`) at the next seq then: 5, big's, which big's mailbox
    // put (whose eviction of the reply put "for b" back) numbers only after it (Send.ts queues, then stores).
    assert.deepStrictEqual(rows, ["1:for b:5", "2:fill:-", "3:for z:-", "5:xxxxx:-"], "\"for b\" was not stored again under its seq")
    assert.strictEqual(heldBefore, 2, "setup: \"for z\" and the reply were not queued")

    const second = yield* handRouter(options, () => T0, {}, false, new StoreJournal(() => {}, 24 * HOUR))
    second.router.restore(loaded)
    second.batch(register(second, 20, "d"), [{ type: "cancel_message", messageId: "m0" }])
    const afterRestart = { z: flushedTo(second, 21, "z"), b: flushedTo(second, 22, "b") }

    first.batch(register(first, 6, "d"), [{ type: "cancel_message", messageId: "m0" }])
    const withoutRestart = { z: flushedTo(first, 10, "z"), b: flushedTo(first, 11, "b") }
    assert.deepStrictEqual(withoutRestart.z, [], "setup: without a restart the cancel did not withdraw \"for z\"")
    assert.deepStrictEqual(afterRestart, withoutRestart, "after the restart d's cancel withdrew another message than without it")
  })

describe("an ask put back (askAgain) keeps its acceptance place across a durable restart", () => {
  it.effect("stored again under its seq, d's cancel of m0 withdraws \"for z\" after the restart as without it", () =>
    scenario(false))

  it.effect("its old row's delete in the same commit as its put again: the row stays, and the cancel matches", () =>
    scenario(true))
})
