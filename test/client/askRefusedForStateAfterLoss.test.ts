/**
 * An ask lost with its connection on the way whose re-send the next broker refuses for its state now — the target
 * already waiting on the asker (`E_MUTUAL_ASK`), or the name now matching two live sessions (`E_AMBIGUOUS_TARGET`) —
 * ends `ConnectionLost` (outcome unknown), not with the refusal, a "not delivered" (IntercomSession: `NotDelivered`):
 * the first write may have been delivered by the broker that went away. A restarted broker refuses so when, say, the
 * asked session, which had the question from the old broker, asks the asker back before the asker's re-send comes, or
 * a second session of that name registered meanwhile. Review revca probe 2 (test/zz-review-ca-2 on branch revca) found
 * both failing at once with the refusal after task askver; task afterloss2's table (src/client/afterLoss.ts
 * `BY_REFUSAL`: `MutualAsk` the loss at once, `AmbiguousTarget` retried through the grace) closed it, and this is that
 * probe kept. test/client/refusalClassesAfterLoss.test.ts checks the same classes for a plain message.
 *
 * Over the fake broker of test/client/refusedAfterLoss.ts (its first connection ends as the ask is written,
 * unanswered; every later write of it is refused as given), under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionLost } from "../../src/client/errors.ts"
import { DeliveryCode, Reason } from "../../src/protocol/delivery.ts"
import { message } from "../support/broker.ts"
import { refusedAfterLoss, type SendVia } from "./refusedAfterLoss.ts"

const viaSend: SendVia = (client, sent) => client.send({ to: "beta", message: sent })

describe("an ask lost on the way, its re-send refused for the next broker's state", () => {
  it.effect("refused E_MUTUAL_ASK: ends ConnectionLost (maybe delivered), not MutualAsk", () =>
    Effect.gen(function*() {
      const ended = yield* refusedAfterLoss(
        "asker-ast-0001",
        message("which branch?", { expectsReply: true }),
        { code: DeliveryCode.MutualAsk, reason: Reason.mutualAsk },
        viaSend
      )
      assert.isDefined(ended.endedAfterMs, "setup: the ask had not ended a second after the rejoin grace")
      assert.isAtLeast(ended.laterWrites, 1, "setup: the ask was not written again after the loss")
      assert.instanceOf(ended.failure, ConnectionLost, `the ask lost on the way got ${String(ended.failure)}`)
    }))

  it.effect("refused E_AMBIGUOUS_TARGET: ends ConnectionLost (maybe delivered), not AmbiguousTarget", () =>
    Effect.gen(function*() {
      const ended = yield* refusedAfterLoss(
        "asker-ast-0002",
        message("which branch?", { expectsReply: true }),
        { code: DeliveryCode.AmbiguousTarget, reason: Reason.ambiguousLive("beta") },
        viaSend
      )
      assert.isDefined(ended.endedAfterMs, "setup: the ask had not ended a second after the rejoin grace")
      assert.isAtLeast(ended.laterWrites, 1, "setup: the ask was not written again after the loss")
      assert.instanceOf(ended.failure, ConnectionLost, `the ask lost on the way got ${String(ended.failure)}`)
    }))
})
