/**
 * After a failed commit, a retry answered from its replay record (SendReplays.replayed) is refused, and mail
 * dropped for it, only as its own message's send: its held acknowledgement names the session its record's message
 * is for (`HeldAck.targetKey`), as a send's first answer does (review rvbf probes 1 and 2). Under one id, m0 for z
 * and m0' for b, both away (b's record kept, z's pushed out by a send between them); the sender retries m0' to b
 * unchanged and is answered `queued` from its record, held for the commit; b comes back and is written m0'.
 * (1) The sender's connection grants `received-v1` from the start, so z's own send is held and refused: keyed by
 * sender and id alone, the retry was refused with it, though b had been written its message. (2) The first two sends
 * came on a base connection (their answers not held), closed before the retry: the retry took the first pending
 * row under the id, z's, so z's m0, whose own send no refusal answered, was dropped and never reached z. (This
 * hand-driven test reads the frames queued for the base connection directly; a real writer would hold them until
 * the commit.) (3) A send refused by the failed commit, its mail dropped, takes with it the retries answered from
 * its record meanwhile, a plain one and an exact one (its session away: refused with its id, answered from the
 * record): named by their session, they are refused as retries of it, never acknowledged for mail that is gone.
 * (4) An acknowledgement that names no session (a retry whose `to` resolves to no session now,
 * SendReplays.replayedUnresolved) drops no row under the id and is not refused for another send's refusal under it:
 * a StoreJournal driven directly, its refusals recorded. A hand-driven Router with a hand-driven StoreJournal (as
 * failed-commit-one-id-refusal-pairing.test.ts); the clock is a plain number; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Mail } from "../../src/broker/Peer.ts"
import { StoreJournal } from "../../src/broker/StoreJournal.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"
import { journalRouter, sendFor } from "../support/journalRouter.ts"

/** A hand-driven router over a hand-driven journal, with the helpers both tests use. */
const world = journalRouter({ replayRecords: 1 })

const m0 = message("m0")
const forZ = sendFor(m0, "z")
const forB = sendFor(m0, "b")

describe("a failed commit and a retry answered from its record under a reused id", () => {
  it.effect("refuses z's send alone, not the retry of b's message written to b, and acknowledges the retry after the next commit", () =>
    Effect.gen(function*() {
      const w = yield* world
      w.away("z")
      w.away("b")
      w.connect("s", [])
      const d = w.connect("d", [RECEIVED_V1])
      w.written(d)
      w.batch(d, [forZ])
      w.batch(d, [{ type: "send", to: "s", message: message("other") }])
      w.batch(d, [forB])
      // The unchanged retry: answered from b's message's record (queued), its acknowledgement held.
      w.batch(d, [forB])
      assert.strictEqual(w.router.heldMail()?.messages, 2, "both messages under m0 are not queued: the test sets up nothing")
      const toB: Array<string> = []
      w.recording("b", toB)
      assert.isTrue(toB.some((text) => text.includes("for b")), "b was not written its m0': the test sets up nothing")
      assert.strictEqual(w.router.heldMail()?.messages, 1, "z's m0 is not the one message queued: the test sets up nothing")
      assert.deepStrictEqual(w.written(d).filter((line) => line.endsWith(m0.id)), [], "d was acknowledged before the commit: the test sets up nothing")
      const taken = w.journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) w.journal.failed(taken, "disk full")
      assert.deepStrictEqual(w.written(d).filter((line) => line.endsWith(m0.id)), [`delivery_failed ${m0.id}`],
        "d was not told exactly one send under m0 failed (the retry of b's message, written to b, refused as never sent too)")
      const next = w.journal.take(1_000_000)
      if (next !== undefined) w.journal.committed(next)
      assert.deepStrictEqual(w.written(d).filter((line) => line.endsWith(m0.id)), [`delivered ${m0.id}`, `delivered ${m0.id}`],
        "d was not acknowledged b's send and its retry once the next commit was stored")
    }))

  it.effect("drops no other session's message for the retry: z is given its m0, and the retry is acknowledged after the next commit", () =>
    Effect.gen(function*() {
      const w = yield* world
      w.away("z")
      w.away("b")
      w.connect("s", [])
      const d1 = w.connect("d", [])
      w.batch(d1, [forZ])
      w.batch(d1, [{ type: "send", to: "s", message: message("other") }])
      w.batch(d1, [forB])
      assert.deepStrictEqual(w.written(d1).filter((line) => line.endsWith(m0.id)), [`delivered ${m0.id}`, `delivered ${m0.id}`],
        "d's base connection was not answered both sends: the test sets up nothing")
      w.close(d1)
      const d2 = w.connect("d", [RECEIVED_V1])
      w.written(d2)
      w.batch(d2, [forB])
      assert.strictEqual(w.router.heldMail()?.messages, 2, "both messages under m0 are not queued: the test sets up nothing")
      assert.deepStrictEqual(w.written(d2).filter((line) => line.endsWith(m0.id)), [], "the retry was answered before the commit: the test sets up nothing")
      const toB: Array<string> = []
      w.recording("b", toB)
      assert.isTrue(toB.some((text) => text.includes("for b")), "b was not written its m0': the test sets up nothing")
      assert.strictEqual(w.router.heldMail()?.messages, 1, "z's m0 is not the one message queued: the test sets up nothing")
      const taken = w.journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) w.journal.failed(taken, "disk full")
      assert.deepStrictEqual(w.written(d2).filter((line) => line.endsWith(m0.id)), [],
        "d was told its retry of b's message failed though b was written it")
      const toZ: Array<string> = []
      w.recording("z", toZ)
      assert.isTrue(toZ.some((text) => text.includes("for z")), "z was not given its m0: it was dropped for the refusal of the retry of b's message")
      const next = w.journal.take(1_000_000)
      if (next !== undefined) w.journal.committed(next)
      assert.deepStrictEqual(w.written(d2).filter((line) => line.endsWith(m0.id)), [`delivered ${m0.id}`],
        "d was not acknowledged its retry once the next commit was stored")
    }))
})

describe("a failed commit and retries of a send it refuses", () => {
  it.effect("refuses a plain and an exact retry answered from the refused send's record, and acknowledges neither later", () =>
    Effect.gen(function*() {
      const w = yield* world
      w.away("b")
      w.connect("s", [])
      const d = w.connect("d", [RECEIVED_V1])
      w.written(d)
      w.batch(d, [forB])
      // Both answered `queued` from b's message's record, held: the exact one though b is away (refused, with its id).
      w.batch(d, [forB])
      w.batch(d, [{ ...forB, targetId: "b", targetEpoch: "b's-epoch" }])
      assert.strictEqual(w.router.heldMail()?.messages, 1, "b's m0' is not queued: the test sets up nothing")
      assert.deepStrictEqual(w.written(d).filter((line) => line.endsWith(m0.id)), [], "d was answered before the commit: the test sets up nothing")
      const taken = w.journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) w.journal.failed(taken, "disk full")
      assert.strictEqual(w.router.heldMail()?.messages ?? 0, 0, "b's m0', refused as never sent, is still queued: the test sets up nothing")
      assert.deepStrictEqual(w.written(d).filter((line) => line.endsWith(m0.id)), Array(3).fill(`delivery_failed ${m0.id}`),
        "d was not told the send and both its retries failed")
      w.batch(d, [{ type: "send", to: "s", message: message("other") }])
      const next = w.journal.take(1_000_000)
      assert.isDefined(next, "nothing to commit after the failure: the test sets up nothing")
      if (next !== undefined) w.journal.committed(next)
      assert.deepStrictEqual(w.written(d).filter((line) => line.endsWith(m0.id)), [],
        "d was acknowledged a retry of m0' after the next commit, though m0' was dropped")
    }))
})

describe("a failed commit and an acknowledgement that names no session", () => {
  it.effect("drops no row under the id for it and does not refuse it for another session's refused send", () =>
    Effect.gen(function*() {
      const { attach, batch } = yield* handRouter({})
      const d = attach(fakeConnection(1, false))
      batch(d, [registerFrame({ sessionId: "d" })])
      const senderKey = d.session?.key ?? assert.fail("d is not registered: the test sets up nothing")
      const refusals: Array<string> = []
      const journal = new StoreJournal(() => {}, 3_600_000, () => {}, () => {}, (held, _reason, dropFor) => {
        refusals.push(`${held.id} ${held.targetKey ?? "-"} drop ${dropFor ?? "-"}`)
        return true
      })
      const mailFor = (targetKey: string): Mail => ({
        recordKey: `${senderKey}\u0001m0`,
        senderKey,
        senderId: "d",
        senderIdentity: undefined,
        fromJson: "{}",
        message: { id: "m0", timestamp: 1, content: { text: `for ${targetKey}` } },
        brokerReceivedAt: 1,
        spaceKey: "scope",
        targetKey,
        targetId: targetKey,
        targetIdentity: undefined,
        queuedAt: 1,
        askTimeoutMs: undefined
      })
      journal.putMail(mailFor("z"))
      journal.putMail(mailFor("b"))
      journal.holdAck(d, "m0", "queued", undefined, "z")
      journal.holdAck(d, "m0", "queued")
      const taken = journal.take(1_000_000)
      assert.isDefined(taken, "nothing to commit: the test sets up nothing")
      if (taken !== undefined) journal.failed(taken, "disk full")
      assert.deepStrictEqual(refusals, ["m0 z drop z"],
        "the acknowledgement naming no session was refused, or b's row dropped for it")
    }))
})
