/**
 * Review reve R1, R2: a registration of a departed id by another client is
 * never taken for the id's first holder since the broker started (the
 * holder registered with nothing known of the id).
 *
 * R1: the holder left and its id was pushed out of ClientInstances by churn
 * of other ids (its bound of ids); another client registering the id then was, like
 * the holder, "nothing known" — the unknown instance its route named — and
 * was sent the cancel of m0, a message it never got, while the sender was
 * answered `delivered`. Now every registration is a new instance unless it
 * continues a known one, so no route made here names another's.
 *
 * R2: the holder was a base client (no `instanceId`); a client that gives
 * an `instanceId` cannot be it, yet it was taken for it and sent the cancel.
 *
 * Helper rrec: the same, with m0's receipt route pushed out by the routes'
 * bound (MAX_ROUTES newer routes) as well: its replay record, made in this
 * run, says delivered, but only a record restored at startup may be
 * followed to a live session without a route (Receipts.recordedRoute), so
 * the new client is not sent the cancel.
 *
 * And the table's bound counts departed holders' ids only: live sessions
 * of other ids, however many, do not push out a departed holder's, so its
 * own return still continues its instance.
 *
 * On a Router driven by hand: writes complete at once, and the frames of
 * the connections that keep them are recorded. ClientInstances' bound is the
 * broker option `clientInstanceIds`, IDS here: crossing it takes IDS
 * registrations, not the default's 65,536 (7–12 s a test on the shared
 * 2-core machine; the default's value is checked by ClientInstances.test.ts
 * and options.test.ts), and a test that needs it crossed first checks that
 * the new client was taken for one that may be from before the start (the
 * holder's id forgotten). The routes' bound is still the constant
 * MAX_ROUTES: 65,536 sends, 1–4 s.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_ROUTES } from "../../src/broker/Receipts.ts"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import type { Peer } from "../../src/broker/Peer.ts"
import { Reason } from "../../src/protocol/delivery.ts"
import { EPHEMERAL_V1, RECEIVED_V1, REJOIN_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const custody = [RECEIVED_V1, REJOIN_V1, TAKEOVER_V1]
/** ClientInstances' bound in these worlds (`clientInstanceIds`): ids of departed holders kept at most. */
const IDS = 64
const cannotCancel = `failed: ${Reason.cannotCancel}`

interface Seen {
  readonly type: string
  readonly messageId?: string
  readonly reason?: string
  readonly control?: { readonly action: string; readonly messageId: string }
}

/**
 * A hand-driven router keeping IDS departed ids' instances, whose first holder of `b` registers with
 * `holderInstanceId` and confirms d's m0, then unregisters.
 */
const world = (holderInstanceId: string | undefined, options: BrokerCoreOptions = {}) =>
  Effect.gen(function*() {
    const { attach, batch } = yield* handRouter({ clientInstanceIds: IDS, ...options })
    const written = new Map<Peer, Array<Seen>>()
    let next = 1
    const connect = (keep: boolean): Peer => {
      const frames: Array<Seen> = []
      const peer = attach({
        ...fakeConnection(next++, false),
        write: (out: ReadonlyArray<OutFrame>) => {
          if (keep) for (const frame of out) frames.push(JSON.parse(frameText(frame)))
          return undefined
        }
      })
      written.set(peer, frames)
      return peer
    }
    const framesOf = (peer: Peer) => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    const holder = connect(true)
    batch(holder, [registerFrame({
      sessionId: "b",
      frame: { features: custody, ...(holderInstanceId === undefined ? {} : { instanceId: holderInstanceId }) }
    })])
    const d = connect(true)
    batch(d, [registerFrame({ sessionId: "d" })])
    const m0 = message("m0")
    batch(d, [{ type: "send", to: "b", message: m0 }])
    const read = framesOf(holder).length
    batch(holder, [{ type: "received", frames: read }])
    assert.strictEqual(holder.custody?.size, 0, "the holder did not confirm m0: the test sets up nothing")
    batch(holder, [{ type: "unregister" }])
    return {
      batch,
      connect,
      d,
      m0,
      registerB: (instanceId: string): Peer => {
        const peer = connect(true)
        batch(peer, [registerFrame({ sessionId: "b", frame: { features: custody, instanceId } })])
        assert.strictEqual(peer.session?.id, "b", "b did not register: the test sets up nothing")
        return peer
      },
      controlsOf: (peer: Peer) =>
        framesOf(peer).flatMap((frame) =>
          frame.type === "message_control" ? [`${frame.control?.action} ${frame.control?.messageId}`] : []
        ),
      answersOf: (messageId: string) =>
        framesOf(d).flatMap((frame) =>
          (frame.type === "delivered" || frame.type === "delivery_failed") && frame.messageId === messageId
            ? [frame.type === "delivered" ? "delivered" : `failed: ${frame.reason}`]
            : []
        )
    }
  })

/** IDS short-lived sessions with fresh ids come and go on one connection (no frames kept: not read): ClientInstances forgets the holder's id. */
const churnIds = (w: Effect.Success<ReturnType<typeof world>>): void => {
  const churn = w.connect(false)
  for (let i = 0; i < IDS; i++) {
    w.batch(churn, [
      registerFrame({ sessionId: `e-${i}`, frame: { features: [EPHEMERAL_V1], ephemeral: true } }),
      { type: "unregister" }
    ])
  }
}

describe("the first holder's id pushed out of ClientInstances by churn of other ids (review reve R1)", () => {
  it.effect("another client registering the id is not sent the cancel of the holder's message, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const w = yield* world("b-1")
      churnIds(w)
      const b3 = w.registerB("b-3")
      assert.isTrue(b3.session?.mayBeBeforeStart, "the holder's id was still known after the churn: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: w.m0.id }])
      assert.deepStrictEqual(w.controlsOf(b3), [], "the new client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(w.m0.id), ["delivered", cannotCancel])
    }))
})

/** MAX_ROUTES newer routes, from another sender to a sink (neither's frames kept: not read): m0's route goes, its record stays. */
const pushRoutesOut = (w: Effect.Success<ReturnType<typeof world>>): void => {
  const sender = w.connect(false)
  w.batch(sender, [registerFrame({ sessionId: "s" })])
  const sink = w.connect(false)
  w.batch(sink, [registerFrame({ sessionId: "sink" })])
  for (let i = 0; i < MAX_ROUTES; i += 256) {
    const sends: Array<Record<string, unknown>> = []
    for (let j = i; j < i + 256; j++) sends.push({ type: "send", to: "sink", message: message(`r${j}`) })
    w.batch(sender, sends)
    sink.writer.flush()
    sender.writer.flush()
  }
}

describe("m0's route pushed out by the routes' bound and the holder's id by churn (helper rrec)", () => {
  it.effect("another client registering the id is not sent the cancel of m0, whose record was made in this run, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const w = yield* world("b-1")
      churnIds(w)
      pushRoutesOut(w)
      const b3 = w.registerB("b-3")
      assert.isTrue(b3.session?.mayBeBeforeStart, "the holder's id was still known after the churn: the test sets up nothing")
      w.batch(w.d, [{ type: "cancel_message", messageId: w.m0.id }])
      assert.deepStrictEqual(w.controlsOf(b3), [], "the new client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(w.m0.id), ["delivered", cannotCancel])
    }), 120_000)
})

describe("the first holder since the start was a base client, no instanceId (review reve R2)", () => {
  it.effect("a client that gives an instanceId is not sent the cancel of the holder's message, and the sender is told it cannot be cancelled", () =>
    Effect.gen(function*() {
      const w = yield* world(undefined)
      const b2 = w.registerB("b-2")
      w.batch(w.d, [{ type: "cancel_message", messageId: w.m0.id }])
      assert.deepStrictEqual(w.controlsOf(b2), [], "the new client was sent a cancel of a message it never got")
      assert.deepStrictEqual(w.answersOf(w.m0.id), ["delivered", cannotCancel])
    }))
})

describe("ClientInstances' bound counts departed holders' ids, not live sessions'", () => {
  it.effect(`the holder returns after ${IDS} sessions of other ids, as many as the bound, registered and stayed: the cancel goes to it, answered delivered`, () =>
    Effect.gen(function*() {
      const w = yield* world("b-1")
      // Each on its own connection (no frames kept: not read), and live to the end.
      for (let i = 0; i < IDS; i++) w.batch(w.connect(false), [registerFrame({ sessionId: `live-${i}` })])
      const b1 = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: w.m0.id }])
      assert.deepStrictEqual(w.controlsOf(b1), [`cancel ${w.m0.id}`], "the holder's return was not sent the cancel")
      assert.deepStrictEqual(w.answersOf(w.m0.id), ["delivered", "delivered"])
    }))
})

describe("m0's route pushed out by the routes' bound, its holder back (review revg G3)", () => {
  it.effect("the cancel of m0 follows its record, made in this run, to the instance its route named: the holder's return gets it, answered delivered", () =>
    Effect.gen(function*() {
      const w = yield* world("b-1")
      pushRoutesOut(w)
      const again = w.registerB("b-1")
      w.batch(w.d, [{ type: "cancel_message", messageId: w.m0.id }])
      assert.deepStrictEqual(w.controlsOf(again), [`cancel ${w.m0.id}`], "the holder of m0 was not sent its cancel")
      assert.deepStrictEqual(w.answersOf(w.m0.id), ["delivered", "delivered"])
    }), 120_000)
})
