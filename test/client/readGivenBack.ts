/**
 * The broker half of the after-loss tests whose refusal is the first write's own record (evictedAfterLoss,
 * expiredAfterLoss): on an in-memory broker, alice's message is delivered to bob, who reads it without confirming
 * (`received-v1`) and drops, so it goes back to the mailbox unconfirmed — read, yet what its record will say
 * (evicted, expired) is "not delivered". No time passes here.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { type MemoryBrokerOptions, withMemoryBroker } from "../support/memory.ts"

/** bob's client: confirms what it reads (`received-v1`), here never, as it drops first. */
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/** The world above on a broker made with `options`: alice's session and the message bob read. */
export const readThenGivenBack = (options: MemoryBrokerOptions) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker(options)
    const alice = yield* broker.session({ sessionId: "alice", name: "alice" })
    const bob = yield* broker.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
    const read = message("delivered and read, never confirmed")
    assertDelivered(yield* send(alice.client, "bob", read))
    assert.strictEqual((yield* messageFor(bob.client, read.id)).message.id, read.id, "setup: bob did not read it")
    yield* bob.client.destroy
    yield* settled([alice.client])
    return { alice, read }
  })
