/**
 * superseded-mailbox-copy-durable.test.ts's copy across a restart: c's m0,
 * taken by P49's other holder b-1 of c's identity and given back
 * unconfirmed when b-1 dropped, waits in the mailbox for c, stored, when the
 * durable broker crashes. The copy survives the restart; the mark of b-1's
 * read (memory only, WithdrawnCopies.ts) and m0's route do not. Neither is
 * needed: after the restart no copy can wait in the mailbox while a holder
 * of c's identity other than its sender is live, as the first such to
 * register takes it (P49) — here b-1, whose write of it is a new route to
 * b-1; a copy whose sender holds that identity too may stay (docs/protocol.md,
 * "Receipts and control"), which d here does not — so d's supersede of m0 at b
 * reaches b-1 behind m0 and m1, and c's return is given no m0. This pins
 * that shape; it does not test MailDelivery.superseded (it passes without
 * it). Nothing waits on time but the store's lazy flush, advanced on the
 * TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { B_1, copyLeftDurable, holder } from "../support/durableCopyLeft.ts"
import { advance } from "../support/memory.ts"

describe("a durable broker restarted while a copy of a message waits in the mailbox for its session", () => {
  it.effect("b-1, registering first, takes the stored copy; the supersede reaches it, and c's return is given no m0", () =>
    Effect.gen(function*() {
      const { world, disk, broker: first, m0 } = yield* copyLeftDurable
      yield* advance(LAZY_FLUSH)
      const stored = () => [...disk.mail.values()].filter((row) => row.recordKey.endsWith(m0.id)).length
      assert.strictEqual(stored(), 1, "m0 is not stored for c: the test sets up nothing")

      yield* first.crash
      yield* durableBroker(world, disk)
      const d2 = yield* world.session({ sessionId: "d", name: "d" })
      const b1Back = yield* world.session(holder("b", B_1))
      yield* messageFor(b1Back.client, m0.id)
      yield* world.session(holder("e"))
      const m1 = message("m1", { supersedes: m0.id })
      assertDelivered(yield* send(d2.client, "b", m1))
      const control = yield* b1Back.client.next("message_control", (frame) => frame.control.messageId === m0.id)
      assert.strictEqual(control.control.action, "supersede", "b-1 was not told of the supersede")
      yield* messageFor(b1Back.client, m1.id)

      const cBack = yield* world.session(holder("c"))
      yield* settled([d2.client], [cBack.client])
      yield* cBack.client.expectNothing("message")
    }))
})
