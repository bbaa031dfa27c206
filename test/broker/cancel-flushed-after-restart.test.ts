/**
 * A durable broker restarts while d's message waits in the mailbox for away
 * z; z comes back and the flush hands it the message (Receipts.addRoute on
 * the record restored as `queued`, rewritten `socket_delivered`). A cancel
 * of it then goes along that route as it would without the restart, and its
 * verdict is the record's: a retry of the message is answered
 * E_DELIVERY_CANCELLED — with the receiver granted received-v1 or not, and
 * after a second restart that came right after the cancel's answer. A retry
 * before the cancel is answered from the record as the flush left it
 * (`socket_delivered`), and z is not given the message again.
 *
 * The cancel's own answer is a bare `delivered` under the message's id
 * (P71): each test reads it before the retry, so the retry's answer is not
 * mistaken for it (review revdi's probe read the cancel's answer as the
 * retry's). Nothing waits on time but the store's lazy flush before the
 * first crash, advanced on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send, type Session } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

/** The receiver z, one client instance throughout, granted `features`. */
const zAs = (features: ReadonlyArray<string>) => ({
  sessionId: "z",
  name: "z",
  cwd: "/tmp",
  frame: { features, instanceId: "z-1" }
})

/**
 * A durable broker over a memory disk: d's m0 queued for away z and
 * committed, then a crash and a restart; d registers again, and so does z
 * (granted `features`), which the flush hands m0.
 */
const flushedAfterRestart = (features: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const first = yield* durableBroker(world, disk)
    const d = yield* world.session({ sessionId: "d", name: "d" })
    const z = yield* world.session(zAs(features))
    yield* z.client.destroy
    const m0 = message("m0")
    assertDelivered(yield* send(d.client, "z", m0), "queued")
    yield* settled([d.client])
    yield* advance(LAZY_FLUSH)
    yield* first.crash
    const second = yield* durableBroker(world, disk)
    const d2 = yield* world.session({ sessionId: "d", name: "d" })
    const zBack = yield* world.session(zAs(features))
    yield* messageFor(zBack.client, m0.id)
    return { world, disk, second, d2, zBack, m0 }
  })

/** `sender` cancels `messageId`: answered with the bare `delivered` (P71), and `receiver` is sent the cancel control. */
const cancelTold = (sender: Session, receiver: Session, messageId: string) =>
  Effect.gen(function*() {
    yield* sender.client.send({ type: "cancel_message", messageId })
    assert.deepStrictEqual({ ...(yield* ackFor(sender.client, messageId)) }, { type: "delivered", messageId })
    const control = yield* receiver.client.next("message_control", (frame) => frame.control.messageId === messageId)
    assert.strictEqual(control.control.action, "cancel")
  })

describe("a durable broker restarted: a cancel of mail the flush handed to its returning receiver", () => {
  it.effect("is answered delivered, z is told, and a retry of the message is answered E_DELIVERY_CANCELLED", () =>
    Effect.gen(function*() {
      const { d2, zBack, m0 } = yield* flushedAfterRestart([RECEIVED_V1, REJOIN_V1])
      yield* cancelTold(d2, zBack, m0.id)
      assertFailed(yield* send(d2.client, "z", m0), "E_DELIVERY_CANCELLED", "Sender cancelled the delivery")
    }))

  it.effect("to a receiver without received-v1: z is told, and a retry is answered E_DELIVERY_CANCELLED", () =>
    Effect.gen(function*() {
      const { d2, zBack, m0 } = yield* flushedAfterRestart([REJOIN_V1])
      yield* cancelTold(d2, zBack, m0.id)
      assertFailed(yield* send(d2.client, "z", m0), "E_DELIVERY_CANCELLED", "Sender cancelled the delivery")
    }))

  it.effect("then a second crash right after the cancel's answer: a retry to the new broker is answered E_DELIVERY_CANCELLED", () =>
    Effect.gen(function*() {
      const { world, disk, second, d2, zBack, m0 } = yield* flushedAfterRestart([RECEIVED_V1, REJOIN_V1])
      yield* cancelTold(d2, zBack, m0.id)
      // No flush advanced: the cancel's answer waited for its commit (StoreJournal), so the store has its verdict.
      yield* second.crash
      yield* durableBroker(world, disk)
      const d3 = yield* world.session({ sessionId: "d", name: "d" })
      assertFailed(yield* send(d3.client, "z", m0), "E_DELIVERY_CANCELLED", "Sender cancelled the delivery")
    }))

  it.effect("a retry before the cancel is answered socket_delivered and z is not given the message again", () =>
    Effect.gen(function*() {
      const { d2, zBack, m0 } = yield* flushedAfterRestart([RECEIVED_V1, REJOIN_V1])
      assertDelivered(yield* send(d2.client, "z", m0))
      yield* settled([d2.client], [zBack.client])
      yield* zBack.client.expectNothing("message", (frame) => frame.message.id === m0.id)
    }))
})
