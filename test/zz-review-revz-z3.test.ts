/**
 * review revz Z3 probe: StaleAsks' `silencedByKey` (review revx X2) keeps an
 * answered ask's copy by ask key with no time expiry (only the 16,384
 * bound), and nothing takes it out when its reply is read. Past the replay
 * window the asker's id is free again (a send with it is a new ask); when
 * that new ask's reply is lost, `replyLost` finds the OLD ask by key and
 * puts it back: the replier is written the old question (its old text) under
 * the new ask's id. Expected: nothing of the old ask is asked again.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "./support/broker.ts"
import { controlWorld as world, custodyFeatures } from "./support/controlWorld.ts"

const ASK_TIMEOUT_MS = 60_000
const AHEAD = 64
/** DeliveryRecords keeps a record up to an hour while there is room (its header). */
const RETENTION_MS = 3_600_000

describe("revz Z3: an ask remembered by key outlives its answer", () => {
  it.effect("a later ask with the same id, its reply lost, does not bring the old question back", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const w = yield* world(custodyFeatures, { askTimeout: ASK_TIMEOUT_MS }, clock)
      const ask = message("the OLD question", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      for (let i = 0; i < AHEAD; i++) w.batch(w.d, [{ type: "send", to: "b", message: message(`note ${i}`) }])
      w.batch(w.d, [{ type: "send", to: "b", message: ask }])
      assert.strictEqual(w.messagesOf(w.b1).length, AHEAD + 1, "setup: b-1 was not written all")
      w.closeAbandoned(w.d)
      w.batch(w.b1, [{ type: "send", to: "d", message: reply }])
      assert.strictEqual(w.router.stats().asks, 0, "setup: the reply did not close the edge")
      // Given back before its deadline, no reply marked it (64 ahead): remembered by key.
      w.closeAbandoned(w.b1)
      // d comes back and reads the reply: the old ask is answered for good.
      const d2 = w.registerD()
      assert.include(w.messagesOf(d2), reply.id, "setup: d was not written the reply")
      // Past the replay records' retention (an hour), d asks again with the same id: a new ask.
      clock.now += 2 * RETENTION_MS
      const b2 = w.registerB("b-2")
      const again = { ...message("the NEW question", { expectsReply: true }), id: ask.id }
      w.batch(d2, [{ type: "send", to: "b", message: again }])
      assert.strictEqual(w.router.stats().asks, 1, "setup: the new ask was not accepted")
      const before = w.framesOf(b2).filter((f) => f.type === "message" && f.message?.id === ask.id).length
      assert.strictEqual(before, 1, "setup: b-2 was not written the new ask")
      w.closeAbandoned(d2)
      const reply2 = message("sure", { replyTo: ask.id })
      w.batch(b2, [{ type: "send", to: "d", message: reply2 }])
      w.batch(b2, [{ type: "cancel_message", messageId: reply2.id }])
      const texts = w.framesOf(b2).flatMap((f) => f.type === "message" && f.message?.id === ask.id ? [JSON.stringify(f)] : [])
      assert.isFalse(texts.some((t) => t.includes("the OLD question")), `the old question was asked again: ${texts.join(" | ")}`)
    }))
})
