/**
 * The set-up of the cancel-under-a-reused-id tests (cancel-again-reused-id, cancel-newest-under-reused-id,
 * mailbox-cancel-reused-id-delivered-record): on a broker over the in-memory network whose replay bound is one record,
 * d and b registered, b away; d's message under m0 for b queued, then (its record pushed out by a send between) a new
 * message under m0 for z; d's cancel of m0; and what a returning session is flushed under m0.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import type { Message } from "../../src/protocol/index.ts"
import { assertDelivered } from "./assertions.ts"
import { ackFor, message, messageFor, type RegisterOptions, send, type Session } from "./broker.ts"
import type { MemoryNetwork } from "./memory.ts"
import type { WireClient } from "./wire.ts"

/** d registered on `world`, and b registered and gone away; d's session. */
export const dWithBAway = (world: MemoryNetwork) =>
  Effect.gen(function*() {
    const d = yield* world.session({ sessionId: "d", name: "d" })
    const bAway = yield* world.session({ sessionId: "b", name: "B" })
    yield* bAway.client.destroy
    return d
  })

/** `dWithBAway`, then z registered (`zAs`); d's and z's sessions. */
export const dWithBAwayAndZ = (world: MemoryNetwork, zAs: RegisterOptions = { sessionId: "z", name: "Z" }) =>
  Effect.gen(function*() {
    const d = yield* dWithBAway(world)
    const z = yield* world.session(zAs)
    return { d, z }
  })

/**
 * d's `m0` "for b" to away b (queued), a send to z between (pushing m0's record out), then a new message under m0,
 * "for z", delivered to z and read by z's client.
 */
export const forBThenForZ = (d: WireClient, z: WireClient, m0: Message) =>
  Effect.gen(function*() {
    assertDelivered(yield* send(d, "b", { ...m0, content: { text: "for b" } }), "queued")
    assertDelivered(yield* send(d, "z", message("other")))
    assertDelivered(yield* send(d, "z", { ...m0, content: { text: "for z" } }))
    yield* messageFor(z, m0.id)
  })

/** `d` cancels `m0`, answered a bare `delivered` (checked). */
export const cancelAnsweredDelivered = (d: WireClient, m0: Message) =>
  Effect.gen(function*() {
    yield* d.send({ type: "cancel_message", messageId: m0.id })
    assert.deepStrictEqual({ ...(yield* ackFor(d, m0.id)) }, { type: "delivered", messageId: m0.id })
  })

/**
 * `as` returns to `world` and is flushed what waits for it, a probe from `d` queued for it last: the texts of the
 * messages under `m0` among them, and the returned session.
 */
export const textsOnReturn = (world: MemoryNetwork, d: WireClient, m0: Message, as: RegisterOptions & { readonly sessionId: string }) =>
  Effect.gen(function*() {
    const probe = message("probe")
    assertDelivered(yield* send(d, as.sessionId, probe), "queued")
    const back: Session = yield* world.session(as)
    yield* messageFor(back.client, probe.id)
    const texts = back.client.received().flatMap((frame) =>
      frame.type === "message" && frame.message.id === m0.id ? [frame.message.content.text] : []
    )
    return { texts, back }
  })
