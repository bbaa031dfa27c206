/**
 * A control left with a client instance that sent no `instanceId` when
 * another instance takes its session over is not kept: that instance can
 * never register as itself again (a takeover by a client with no
 * `instanceId` is a new instance, and a registration with none continues
 * only the id's last holder, which the taker becomes — Registration's
 * `mayReturn`), so kept it waited for no one and held a memory broker's
 * idle exit for the mailbox's retention (review revba BA1). The new
 * instance is not given it either (it never had the message), nor any
 * later registration.
 *
 * - e-1 a base client (no custody): the cancel of m1 (written to it) in its
 *   outbox behind a stuck write at e-2's takeover — the hand-over's
 *   (OutputEnd's `handOne`) keep. Fails without `keepRefused`'s `mayReturn`.
 * - e-1 a `received-v1` client without `rejoin-v1` (custody, no
 *   `instanceId`): the cancel of m1 (confirmed) unconfirmed in its stuck
 *   write, given back alone at its close while e-2 holds `e`
 *   (MailReturns' `keepAlone`). Fails without `keepAlone`'s `mayReturn`.
 * - The same with e-1 sending an `instanceId` (`rejoin-v1`): kept, holding
 *   the exit, and given to e-1 as it takes `e` back (it may return).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { closePeer } from "../../src/broker/RouterContext.ts"
import { RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import type { Seen } from "../support/controlWorld.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const HOUR = 3_600_000

/** Sender `d`; `register` registers session `e` with `features` (and an `instanceId` if given), its socket stuck once `stick` was called. */
const world = Effect.gen(function*() {
  const { attach, batch, close, router } = yield* handRouter({ mailboxRetention: HOUR }, () => 1_000_000)
  const written = new Map<Peer, Array<Seen>>()
  let stuck = false
  let nextId = 1
  const register = (features: ReadonlyArray<string>, instanceId?: string): Peer => {
    const frames: Array<Seen> = []
    const stuckable = nextId === 2
    const peer = attach({
      ...fakeConnection(nextId++, false),
      unfinishedWrite: () => (stuckable && stuck ? 0 : undefined),
      write: (out: ReadonlyArray<OutFrame>) => {
        if (stuckable && stuck) return Effect.never
        for (const frame of out) frames.push(JSON.parse(frameText(frame)))
        return undefined
      }
    })
    written.set(peer, frames)
    batch(peer, [registerFrame({ sessionId: "e", frame: { features: [...features], ...(instanceId === undefined ? {} : { instanceId }) } })])
    return peer
  }
  const d = attach({ ...fakeConnection(nextId++, false), write: () => undefined })
  batch(d, [registerFrame({ sessionId: "d" })])
  const seenOf = (peer: Peer): ReadonlyArray<string> => {
    peer.writer.flush()
    return (written.get(peer) ?? []).flatMap((f) =>
      f.type === "message" ? [`message ${f.message?.id}`] : f.type === "message_control" ? [`${f.control?.action} ${f.control?.messageId}`] : []
    )
  }
  const closeAbandoned = (peer: Peer): void => {
    closePeer(peer, "destroy")
    router.abandonWrites(peer)
    close(peer)
  }
  return {
    batch,
    router,
    d,
    register,
    seenOf,
    closeAbandoned,
    stick: (): void => {
      stuck = true
    }
  }
})

/**
 * e-1 (`features`, `instanceId`) read m1 — confirmed it, with custody; was written it, without — and d's cancel of it
 * waits unwritten on e-1 (behind a stuck write: in the outbox, or in the write itself) when e-2, a base client,
 * takes `e` over and e-1 closes.
 */
const cancelLeftAtTakeover = (features: ReadonlyArray<string>, instanceId?: string) =>
  Effect.gen(function*() {
    const w = yield* world
    const e1 = w.register(features, instanceId)
    const m1 = message("m1")
    w.batch(w.d, [{ type: "send", to: "e", message: m1 }])
    assert.include(w.seenOf(e1), `message ${m1.id}`, "m1 was not written to e-1: the test sets up nothing")
    if (e1.custody !== undefined) w.batch(e1, [{ type: "received", frames: e1.framesWritten }])
    w.stick()
    if (e1.custody === undefined) w.batch(w.d, [{ type: "send", to: "e", message: message("m0") }])
    w.batch(w.d, [{ type: "cancel_message", messageId: m1.id }])
    assert.notInclude(w.seenOf(e1), `cancel ${m1.id}`, "the cancel reached e-1's socket: the test sets up nothing")
    const e2 = w.register([])
    assert.strictEqual(e2.state, "registered", "e-2 did not take e over: the test sets up nothing")
    w.closeAbandoned(e1)
    assert.notInclude(w.seenOf(e2), `cancel ${m1.id}`, "e-2, which never had m1, got its cancel")
    return { w, m1, e2 }
  })

describe("a cancel left with a client instance that sent no instanceId, at a takeover by another instance", () => {
  it.effect("a base e-1, the cancel in its outbox (the hand-over): not kept, the idle exit not held, no later e given it", () =>
    Effect.gen(function*() {
      const { e2, m1, w } = yield* cancelLeftAtTakeover([])
      assert.strictEqual(w.router.stats().controlsKept, 0, "a cancel for an instance that can never register again was kept")
      w.batch(e2, [{ type: "unregister" }])
      w.closeAbandoned(e2)
      const e3 = w.register([])
      assert.notInclude(w.seenOf(e3), `cancel ${m1.id}`, "e-3, a new instance, got e-1's cancel")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel owed to no registration holds a memory broker's idle exit")
    }))

  it.effect("a received-v1 e-1 without rejoin-v1, the cancel unconfirmed (given back alone at its close): not kept", () =>
    Effect.gen(function*() {
      const { w } = yield* cancelLeftAtTakeover([RECEIVED_V1, TAKEOVER_V1])
      assert.strictEqual(w.router.stats().controlsKept, 0, "a cancel for an instance that can never register again was kept")
      assert.strictEqual(w.router.heldMail()?.controls ?? 0, 0, "a cancel owed to no registration holds a memory broker's idle exit")
    }))

  it.effect("the same e-1 with an instanceId (rejoin-v1): kept, holding the exit, and given to e-1 taking e back", () =>
    Effect.gen(function*() {
      const { m1, w } = yield* cancelLeftAtTakeover([RECEIVED_V1, REJOIN_V1, TAKEOVER_V1], "e-1")
      assert.strictEqual(w.router.heldMail()?.controls, 1, "the cancel kept for e-1 does not hold the idle exit")
      const back = w.register([RECEIVED_V1, REJOIN_V1, TAKEOVER_V1], "e-1")
      assert.deepStrictEqual(w.seenOf(back).filter((c) => c.endsWith(m1.id)), [`cancel ${m1.id}`], "e-1 taking e back was not given the cancel once")
    }))
})
