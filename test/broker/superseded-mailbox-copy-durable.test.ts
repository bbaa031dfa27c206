/**
 * superseded-mailbox-copy.test.ts on a durable broker over the in-memory
 * network (a memory store playing the disk; review cpback, defect 2): c's
 * m0, taken by P49's other holder b-1 of c's identity and given back
 * unconfirmed when b-1 dropped, waits in the mailbox for c, stored, while
 * b-1 is live again (e holds the identity too, so b-1's return takes
 * nothing). d's m1 to b with `supersedes: m0` tells b-1, and the copy for c
 * goes with it — the copy b-1 read, by the mark on it
 * (MailDelivery.superseded): from the store (the record's rewrite to
 * superseded dropped the stored row before this fix too) and from the
 * mailbox in memory, so c's return is given no m0 (without the fix it was).
 * Nothing waits on time but the store's lazy flush, advanced on the
 * TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { B_1, copyLeftDurable, holder } from "../support/durableCopyLeft.ts"
import { advance } from "../support/memory.ts"

describe("a durable broker: a message superseded while a copy of it waits in the mailbox for its session", () => {
  it.effect("b-1 gets the supersede; the copy leaves the store, and c's return is given no m0", () =>
    Effect.gen(function*() {
      const { world, disk, d, m0 } = yield* copyLeftDurable
      const b1Back = yield* world.session(holder("b", B_1))
      yield* settled([d.client], [b1Back.client])
      yield* b1Back.client.expectNothing("message")
      yield* advance(LAZY_FLUSH)
      const stored = () => [...disk.mail.values()].map((row) => row.recordKey.slice(row.recordKey.indexOf("\u0001") + 1))
      assert.deepStrictEqual(stored(), [m0.id], "m0 is not stored for c: the test sets up nothing")

      const m1 = message("m1", { supersedes: m0.id })
      assertDelivered(yield* send(d.client, "b", m1))
      const control = yield* b1Back.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      assert.strictEqual(control.control.action, "supersede")
      yield* messageFor(b1Back.client, m1.id)
      yield* advance(LAZY_FLUSH)
      // m1 stays stored until b-1 confirms reading it.
      assert.deepStrictEqual(stored(), [m1.id], "the superseded copy is still stored")

      const cBack = yield* world.session(holder("c"))
      yield* settled([d.client], [cBack.client])
      yield* cBack.client.expectNothing("message")
    }))
})
