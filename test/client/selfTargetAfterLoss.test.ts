/**
 * Review revce, item CE1: a `SelfTarget` read after a loss says what the next broker holds, not what the first write
 * was. The broker resolves `to` in tiers (Registry.ts `resolveLive`: exact id, else names, else id prefixes), so a
 * name held by another session wins over the sender's own id prefix: a send to "aaaa" from a session whose id starts
 * "aaaa" reaches the session named "aaaa", and once that session is not (yet) back after a broker restart the
 * identical write is refused `E_SELF_TARGET`. The client classes it `retried` (afterLoss.ts `BY_REFUSAL`): retried
 * through the rejoin grace (the other session may come back), and if it stands, the loss carrying it. Until this fix
 * it was passed on as given ("not delivered") for a delivered message.
 *
 * Part 1, real broker core in memory: the first write is delivered to "aaaa"; after a crash and a new broker the
 * identical write is refused E_SELF_TARGET. Part 2, the client on a fake broker under TestClock (refusedAfterLoss.ts):
 * its first write lost, every later write refused with exactly that answer.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { memoryNetwork } from "../support/memory.ts"
import { REJOIN_GRACE_MS, refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const A_ID = "aaaaaaaa-2222-4000-8000-0000000000ce"

describe("a SelfTarget read after a loss (review revce CE1)", () => {
  it.effect("the broker refuses the re-send of a message delivered by name E_SELF_TARGET; the client retries it through the grace and ends ConnectionLost carrying it", () =>
    Effect.gen(function*() {
      const sent = message("for the session named aaaa")
      // Part 1: what the real broker answers.
      const world = yield* memoryNetwork()
      const first = yield* world.startBroker({ idleExit: null })
      const alpha = yield* world.session({ sessionId: A_ID, name: "alpha" })
      const named = yield* world.session({ sessionId: "bbbbbbbb-2222-4000-8000-0000000000ce", name: "aaaa" })
      assertDelivered(yield* send(alpha.client, "aaaa", sent))
      assert.strictEqual((yield* messageFor(named.client, sent.id)).message.id, sent.id, "setup: not delivered to aaaa")
      yield* first.crash
      yield* world.startBroker({ idleExit: null })
      const alphaBack = yield* world.session({ sessionId: A_ID, name: "alpha" })
      const again = yield* send(alphaBack.client, "aaaa", sent)
      assert.strictEqual(again.type, "delivery_failed", "setup: the re-send was not refused")
      if (again.type !== "delivery_failed") return
      assert.strictEqual(again.code, "E_SELF_TARGET", "setup: the re-send was not refused E_SELF_TARGET")

      // Part 2: the client reading that answer to its re-send after a loss.
      const viaSend: SendVia = (client, m) => client.send({ to: "aaaa", message: m })
      // The refusal exactly as the broker gave it (its code asserted above).
      const ended = yield* refusedAfterLoss(A_ID, sent, { code: "E_SELF_TARGET", reason: again.reason }, viaSend)
      assert.instanceOf(
        ended.failure,
        ConnectionLost,
        `a first write delivered to "aaaa" ended as ${String(ended.failure)} — "not delivered"`
      )
      assert.isAbove(ended.laterWrites, 1, "not written again in the rejoin grace")
      assert.isAtLeast(ended.endedAfterMs ?? 0, REJOIN_GRACE_MS, "ended before the rejoin grace was over")
      assert.strictEqual(ended.failure instanceof ConnectionLost ? ended.failure.refusal?._tag : undefined, "SelfTarget")
    }))
})
