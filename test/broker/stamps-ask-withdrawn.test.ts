/**
 * An ask's withdrawal is on its mail's scale (review revbq bq3): `cancel_ask` records the withdrawal with the broker's
 * stamp, so `Asks.withdrawnEarly` — withdrawn within [brokerReceivedAt, brokerReceivedAt + askTimeoutMs)? — compares
 * stamps with stamps. An ask withdrawn while the clock reads behind the last stamp, whose copy then comes back
 * unconfirmed past its deadline, is still known withdrawn: its asker is not told `expired` (which would be a false
 * verdict) and a retry still hears `delivered`. As test/broker/stale-closed-ask.test.ts "withdrawn by cancel_ask", with
 * the clock stepped back before the ask. (Was the reviewer's probe test/zz-review-revbq-withdrawn.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import type { Seen } from "../support/controlWorld.ts"
import { steppedWorld } from "../support/steppedClock.ts"

const START = 1_000_000
const ASK_TIMEOUT_MS = 60_000

const receipts = (frames: ReadonlyArray<Seen>, id: string) =>
  frames.flatMap((frame) =>
    frame.type === "message_receipt" && frame.receipt?.messageId === id ? [`${frame.receipt.status} ${id}`] : []
  )

const withdrawnThenGivenBack = (step: number) =>
  Effect.gen(function*() {
    const { clock, w } = yield* steppedWorld(START, START - step, { askTimeout: ASK_TIMEOUT_MS })
    const ask = message("still need this?", { expectsReply: true })
    w.batch(w.d, [{ type: "send", to: "b", message: ask }])
    assert.include(w.messagesOf(w.b1), ask.id, "setup: the ask written to b-1")
    w.batch(w.d, [{ type: "cancel_ask", messageId: ask.id }])
    clock.now = START + ASK_TIMEOUT_MS + 1
    w.closeAbandoned(w.b1)
    return { ask, w }
  })

describe("an ask's withdrawal on the stamps' scale (revbq bq3): an ask withdrawn by cancel_ask, given back unconfirmed past its deadline", () => {
  it.effect("the clock as it is: its asker gets no expired receipt, a retry still hears delivered", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* withdrawnThenGivenBack(0)
      assert.deepStrictEqual(receipts(w.framesOf(w.d), ask.id), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))

  it.effect("the clock stepped back before the ask: its asker gets no expired receipt, a retry still hears delivered", () =>
    Effect.gen(function*() {
      const { ask, w } = yield* withdrawnThenGivenBack(5_000)
      assert.deepStrictEqual(receipts(w.framesOf(w.d), ask.id), [])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.deepStrictEqual(w.answersOf(ask.id), ["delivered", "delivered"])
    }))
})
