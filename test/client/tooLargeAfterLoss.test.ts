/**
 * Review revce, item CE4: a `MessageTooLarge` read after a loss can be the sender's registered info now, not the
 * first write. The broker checks the forwarded frame (broker/Send.ts `pipeline`: `Encode.messageFrame(sender.infoJson,
 * …)`), which carries the sender's info — its status among it, up to 256 characters, changeable and re-registered
 * after a reconnect. So a message that fitted when first written (delivered) may be refused E_MESSAGE_TOO_LARGE by the
 * next broker. The client classes it `unknown` (afterLoss.ts `BY_REFUSAL`): the loss at once, carrying it. Until this
 * fix it was passed on as given ("not delivered").
 *
 * Part 1, real broker core in memory: the largest text a sender with a one-letter status gets delivered is found;
 * after a crash and a new broker, the identical write from the same session, registered with a 256-character status,
 * is refused E_MESSAGE_TOO_LARGE. Part 2, the client on a fake broker under TestClock (refusedAfterLoss.ts): its
 * first write lost, every later write refused with exactly that answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/index.ts"
import { message, send } from "../support/broker.ts"
import { memoryNetwork } from "../support/memory.ts"
import { refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const A_ID = "eeeeeeee-2222-4000-8000-0000000000ce"
const B_ID = "ffffffff-2222-4000-8000-0000000000ce"

describe("a MessageTooLarge read after a loss (review revce CE4)", () => {
  it.effect("the broker refuses the re-send of a delivered message E_MESSAGE_TOO_LARGE once the sender's status grew; the client ends ConnectionLost at once carrying it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker({ idleExit: null })
      const alpha = yield* world.session({ sessionId: A_ID, name: "alpha", status: "s" })
      const beta = yield* world.session({ sessionId: B_ID, name: "beta" })
      // The largest text delivered with the short status (binary search; each try a new id).
      let fits = MAX_FRAME_BYTES - 8192
      let refused = MAX_FRAME_BYTES
      while (refused - fits > 1) {
        const size = Math.floor((fits + refused) / 2)
        const ack = yield* send(alpha.client, "beta", message("x".repeat(size)))
        if (ack.type === "delivered") fits = size
        else refused = size
        beta.client.drain()
      }
      const sent = message("x".repeat(fits))
      assert.strictEqual((yield* send(alpha.client, "beta", sent)).type, "delivered", "setup: the first write not delivered")
      yield* first.crash
      yield* world.startBroker({ idleExit: null })
      yield* world.session({ sessionId: B_ID, name: "beta" })
      const alphaBack = yield* world.session({ sessionId: A_ID, name: "alpha", status: "s".repeat(256) })
      const again = yield* send(alphaBack.client, "beta", sent)
      assert.strictEqual(again.type, "delivery_failed", "setup: the re-send was not refused")
      if (again.type !== "delivery_failed") return
      assert.strictEqual(again.code, "E_MESSAGE_TOO_LARGE", "setup: the re-send was not refused E_MESSAGE_TOO_LARGE")

      const viaSend: SendVia = (client, m) => client.send({ to: "beta", message: m })
      // The refusal exactly as the broker gave it (its code asserted above).
      const ended = yield* refusedAfterLoss(A_ID, sent, { code: "E_MESSAGE_TOO_LARGE", reason: again.reason }, viaSend)
      assert.instanceOf(ended.failure, ConnectionLost, `a first write delivered ended as ${String(ended.failure)} — "not delivered"`)
      assert.strictEqual(ended.laterWrites, 1, "written again")
      assert.strictEqual(ended.failure instanceof ConnectionLost ? ended.failure.refusal?._tag : undefined, "MessageTooLarge")
    }))
})
