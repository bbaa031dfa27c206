/**
 * Ids may be reused past the replay retention. A reply read by its asker
 * before the ask's copy went silently as answered leaves no stored debt
 * (review revu U1, stale-answered-read-first.test.ts), so a later reply
 * under the same id, restored after a restart and lost then, tells the
 * asker nothing of the first ask, answered and read long ago (review revu
 * U1b). On memory brokers over a memory store, the clock moved by TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { REPLAY_RETENTION_MS } from "../../src/broker/Router.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, memoryNetwork } from "../support/memory.ts"

const ASK_TIMEOUT_MS = 60_000
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

describe("a reused reply id and an old silenced ask (review revu U1b)", () => {
  it.effect("a reply id reused after the first reply was read carries no debt of the first ask across a restart", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const q1 = message("first question", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", q1))
      yield* messageFor(bob.client, q1.id) // read, never confirmed
      const r1 = message("first answer", { replyTo: q1.id })
      assertDelivered(yield* send(bob.client, "alice", r1))
      yield* messageFor(alice.client, r1.id) // alice read the answer
      yield* advance(ASK_TIMEOUT_MS + 1)
      yield* bob.client.destroy // q1's copy given back past its deadline: silenced as answered
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* settled([alice.client])
      yield* alice.client.expectNothing("message_receipt") // silenced, not expired: the test sets up nothing
      yield* advance(LAZY_FLUSH)

      // Hours later bob, back, answers a new ask of alice's under the id his first answer had.
      yield* advance(2 * REPLAY_RETENTION_MS)
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      const q2 = message("second question", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", q2))
      yield* messageFor(bob2.client, q2.id)
      yield* bob2.client.send({ type: "received", frames: bob2.client.received().length })
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      const r2 = message("second answer", { replyTo: q2.id })
      assertDelivered(yield* send(bob2.client, "alice", { ...r2, id: r1.id }), "queued")
      yield* advance(LAZY_FLUSH)
      yield* first.crash

      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const bob3 = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      yield* bob3.client.send({ type: "cancel_message", messageId: r1.id }) // the second answer, withdrawn
      yield* settled([bob3.client])
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* settled([alice2.client])
      const receipts = alice2.client.received().filter((frame) => frame.type === "message_receipt")
      assert.deepStrictEqual(
        receipts.filter((frame) => frame.type === "message_receipt" && frame.receipt.messageId === q1.id).length,
        0,
        "alice told her first ask, answered and read, expired"
      )
    }))
})
