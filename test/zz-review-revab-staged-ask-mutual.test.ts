/**
 * Review revab AB1, AB3 (probes): a `replace`-staged ask (`delivery-v1`) whose
 * window closes after the ask its target made of its sender has passed its
 * deadline, with no send between to sweep that edge. protocol.md says a
 * staged message is checked again "by the rules of a send as of that
 * moment"; a send then would have pruned the expired edge first, so the ask
 * is not mutual. Asks' `asks` stage (`isWaiting`) still counts the expired,
 * unswept edge and refuses the staged ask with E_MUTUAL_ASK — unlike the
 * swept case, where it is delivered. Stalemisc fixed this for replies only.
 * AB3: the same for the per-asker bound — the staged ask is refused
 * E_TOO_MANY_ASKS over its sender's own expired, unswept asks.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../src/broker/Peer.ts"
import { MAX_ASKS_PER_SESSION } from "../src/broker/Asks.ts"
import { DELIVERY_V1 } from "../src/protocol/features.ts"
import { frameText, type OutFrame } from "../src/protocol/framing.ts"
import { message, registerFrame } from "./support/broker.ts"
import { fakeConnection } from "./support/fakeConnection.ts"
import { handRouter } from "./support/handRouter.ts"

const ASK_TIMEOUT_MS = 1_000
const WINDOW_MS = 5_000

/** A frame as far as this probe reads it. */
interface Seen {
  readonly type: string
  readonly messageId?: string
  readonly message?: { readonly id: string }
  readonly receipt?: { readonly messageId: string; readonly status: string; readonly detail?: string }
}

/**
 * d stages an ask of b; b then asks d (its edge expires before d's window
 * closes). `swept`: c's send sweeps the edges before the window closes.
 * Whether b got d's staged ask, and what d was told of it.
 */
const stagedAskPastMutual = (swept: boolean, many = false) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const { attach, batch, router } = yield* handRouter(
      { askTimeout: ASK_TIMEOUT_MS, replaceWindow: WINDOW_MS },
      () => clock.now
    )
    const written = new Map<Peer, Array<Seen>>()
    const connect = (id: number, sessionId: string, features: ReadonlyArray<string>): Peer => {
      const frames: Array<Seen> = []
      const peer = attach({
        ...fakeConnection(id, false),
        write: (out: ReadonlyArray<OutFrame>) => {
          for (const frame of out) frames.push(JSON.parse(frameText(frame)))
          return undefined
        }
      })
      written.set(peer, frames)
      batch(peer, [registerFrame({ sessionId, frame: { features: [...features] } })])
      return peer
    }
    const framesOf = (peer: Peer): ReadonlyArray<Seen> => {
      peer.writer.flush()
      return written.get(peer) ?? []
    }
    const b = connect(1, "b", [])
    const d = connect(2, "d", [DELIVERY_V1])
    const c = connect(3, "c", [])
    const staged = message("shall I go on?", { expectsReply: true })
    batch(d, [{ type: "send", to: "b", message: staged, delivery: "queue", queueMode: "replace", threadId: "q" }])
    assert.isTrue(framesOf(d).some((frame) => frame.type === "delivery_queued"), "setup: d's ask was not staged")
    clock.now += 1
    if (many) {
      // AB3: d's own asks of c fill its per-asker bound, all expiring before its window closes.
      const asks = Array.from({ length: MAX_ASKS_PER_SESSION }, (_, i) => message(`q${i}`, { expectsReply: true }))
      batch(d, asks.map((ask) => ({ type: "send", to: "c", message: ask })))
      assert.strictEqual(router.stats().asks, MAX_ASKS_PER_SESSION, "setup: d's asks of c are not all open")
    } else {
      const bAsks = message("what is the status?", { expectsReply: true })
      batch(b, [{ type: "send", to: "d", message: bAsks }])
      assert.isTrue(
        framesOf(b).some((frame) => frame.type === "delivered" && frame.messageId === bAsks.id),
        "setup: b's ask of d was not delivered"
      )
    }
    // b's ask expires well before d's window closes.
    clock.now += WINDOW_MS
    if (swept) batch(c, [{ type: "send", to: "c", message: message("tick") }])
    router.staging.flushDue(clock.now)
    const got = framesOf(b).flatMap((frame) => frame.type === "message" ? [frame.message?.id] : [])
    const told = framesOf(d).flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt?.messageId === staged.id ? [[frame.receipt.status, frame.receipt.detail]] : []
    )
    return { got: got.includes(staged.id), told }
  })

describe("review revab AB1: a staged ask falling due after its target's own ask of its sender expired, unswept", () => {
  it.effect("is delivered as when a send swept that edge first, not refused as mutual", () =>
    Effect.gen(function*() {
      const sweptFirst = yield* stagedAskPastMutual(true)
      assert.isTrue(sweptFirst.got, "control: with the edge swept the staged ask was not delivered")
      const unswept = yield* stagedAskPastMutual(false)
      assert.deepStrictEqual(unswept.told, sweptFirst.told, "d was told otherwise than when the edge was swept")
      assert.isTrue(unswept.got, "the staged ask was refused as mutual over an ask whose deadline had passed")
    }))

  it.effect("AB3: is not refused over its sender's own expired, unswept asks filling the per-asker bound", () =>
    Effect.gen(function*() {
      const sweptFirst = yield* stagedAskPastMutual(true, true)
      assert.isTrue(sweptFirst.got, "control: with the edges swept the staged ask was not delivered")
      const unswept = yield* stagedAskPastMutual(false, true)
      assert.deepStrictEqual(unswept.told, sweptFirst.told, "d was told otherwise than when the edges were swept")
      assert.isTrue(unswept.got, "the staged ask was refused over asks whose deadlines had passed")
    }))
})
