/**
 * The durable world of the superseded-mailbox-copy tests (superseded-mailbox-copy-durable,
 * superseded-mailbox-copy-restart): on the in-memory network with a memory store playing the disk, d's m0 to c is
 * taken by b-1, P49's other holder of c's identity (name B in /tmp), e registers as a third holder, and b-1 drops
 * without confirming it — so m0 waits in the mailbox, stored, for c. No time passes.
 */
import { Effect } from "effect"
import { RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "./assertions.ts"
import { settled } from "./barrier.ts"
import { message, messageFor, send } from "./broker.ts"
import { durableBroker } from "./durable.ts"
import { memoryNetwork } from "./memory.ts"

/** A session of c's identity (name B in /tmp): `sessionId`, with `frame`'s fields. */
export const holder = (sessionId: string, frame: Readonly<Record<string, unknown>> = {}) => ({
  sessionId,
  name: "B",
  cwd: "/tmp",
  frame
})

/** b's client: confirms what it reads (never here, as it drops first), and rejoins as instance b-1. */
export const B_1 = { features: [RECEIVED_V1, REJOIN_V1], instanceId: "b-1" }

/** The world above: the network, the disk, the first broker, d and m0. */
export const copyLeftDurable = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const broker = yield* durableBroker(world, disk)
  const d = yield* world.session({ sessionId: "d", name: "d" })
  const c = yield* world.session(holder("c"))
  yield* c.client.destroy
  const b1 = yield* world.session(holder("b", B_1))
  const m0 = message("m0")
  assertDelivered(yield* send(d.client, "c", m0))
  yield* messageFor(b1.client, m0.id)
  yield* world.session(holder("e"))
  yield* b1.client.destroy
  yield* settled([d.client])
  return { world, disk, broker, d, m0 }
})
