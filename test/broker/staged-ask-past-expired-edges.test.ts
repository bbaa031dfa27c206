/**
 * A `replace`-staged ask (`delivery-v1`) whose window closes after ask edges
 * it would be checked against have passed their deadlines, with no send
 * between to sweep them. Send.deliverStaged sweeps first, as a send does
 * (Send.prune), so the ask is checked by the rules of a send as of that
 * moment: an expired reverse edge does not make it mutual, and its sender's
 * expired asks do not count against the per-asker bound (review revab AB1,
 * AB3). The sweep's notices go first: the target granted `ask-expiry-v1`
 * reads that its own ask expired before the staged ask.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { MAX_ASKS_PER_SESSION } from "../../src/broker/AskAdmission.ts"
import { ASK_EXPIRY_V1, DELIVERY_V1 } from "../../src/protocol/features.ts"
import { message } from "../support/broker.ts"
import { recordedSessions } from "../support/controlWorld.ts"
import { handRouter } from "../support/handRouter.ts"

const ASK_TIMEOUT_MS = 1_000
const WINDOW_MS = 5_000

/** What stands in the way of d's staged ask of b when its window closes: b's ask of d, or d's full bound of asks of c. */
type Obstacle = "mutual" | "bound"

/**
 * d stages an ask of b; then the `obstacle` is set up, all its edges
 * expiring before d's window closes. `swept`: c's send sweeps the edges
 * before the window closes. What b read (message ids and ask_expired
 * notices, in order), and what d was told of its staged ask.
 */
const stagedAskPastExpired = (obstacle: Obstacle, swept: boolean) =>
  Effect.gen(function*() {
    const clock = { now: 1_000_000 }
    const hand = yield* handRouter(
      { askTimeout: ASK_TIMEOUT_MS, replaceWindow: WINDOW_MS },
      () => clock.now
    )
    const { batch, router } = hand
    const { connect, framesOf } = recordedSessions(hand)
    const b = connect(1, "b", [ASK_EXPIRY_V1])
    const d = connect(2, "d", [DELIVERY_V1])
    const c = connect(3, "c", [])
    const staged = message("shall I go on?", { expectsReply: true })
    batch(d, [{ type: "send", to: "b", message: staged, delivery: "queue", queueMode: "replace", threadId: "q" }])
    assert.isTrue(framesOf(d).some((frame) => frame.type === "delivery_queued"), "setup: d's ask was not staged")
    clock.now += 1
    const bAsks = message("what is the status?", { expectsReply: true })
    if (obstacle === "bound") {
      const asks = Array.from({ length: MAX_ASKS_PER_SESSION }, (_, i) => message(`q${i}`, { expectsReply: true }))
      batch(d, asks.map((ask) => ({ type: "send", to: "c", message: ask })))
      assert.strictEqual(router.stats().asks, MAX_ASKS_PER_SESSION, "setup: d's asks of c are not all open")
    } else {
      batch(b, [{ type: "send", to: "d", message: bAsks }])
      assert.isTrue(
        framesOf(b).some((frame) => frame.type === "delivered" && frame.messageId === bAsks.id),
        "setup: b's ask of d was not delivered"
      )
    }
    clock.now += WINDOW_MS
    if (swept) batch(c, [{ type: "send", to: "c", message: message("tick") }])
    router.staging.flushDue(clock.now)
    const read = framesOf(b).flatMap((frame) =>
      frame.type === "message" ? [`message ${frame.message?.id}`] : frame.type === "ask_expired" ? [`ask_expired ${frame.messageId}`] : []
    )
    const told = framesOf(d).flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt?.messageId === staged.id ? [[frame.receipt.status, frame.receipt.detail]] : []
    )
    return { read, told, staged: `message ${staged.id}`, bExpired: `ask_expired ${bAsks.id}`, asks: router.stats().asks }
  })

describe("a staged ask falling due over ask edges past their deadlines, unswept", () => {
  it.effect("over its target's expired ask of its sender: delivered, not refused E_MUTUAL_ASK, behind that ask's ask_expired", () =>
    Effect.gen(function*() {
      const { bExpired, read, staged, told } = yield* stagedAskPastExpired("mutual", false)
      assert.deepStrictEqual(told, [], "d was told its staged ask failed")
      assert.deepStrictEqual(read, [bExpired, staged], "b did not read its own ask's expiry, then d's ask")
      // As when a send had swept b's edge before the window closed.
      const sweptFirst = yield* stagedAskPastExpired("mutual", true)
      assert.deepStrictEqual([sweptFirst.read, sweptFirst.told], [[sweptFirst.bExpired, sweptFirst.staged], told])
    }))

  it.effect("over its sender's expired asks filling the per-asker bound: delivered, not refused E_TOO_MANY_ASKS", () =>
    Effect.gen(function*() {
      const { asks, read, staged, told } = yield* stagedAskPastExpired("bound", false)
      assert.deepStrictEqual(told, [], "d was told its staged ask failed")
      assert.deepStrictEqual(read, [staged], "b did not get d's staged ask")
      assert.strictEqual(asks, 1, "the expired edges were not swept, or the staged ask opened none")
      const sweptFirst = yield* stagedAskPastExpired("bound", true)
      assert.deepStrictEqual([sweptFirst.read, sweptFirst.told, sweptFirst.asks], [[sweptFirst.staged], told, asks])
    }))
})
