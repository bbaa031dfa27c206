/**
 * Review revak probe of the `askto` merge (386d9a7e): `settleUnacknowledged`
 * (src/session/Ask.ts) fails an ask `DeliveryUnknown` ("may or may not have
 * been delivered … it may arrive twice") when its settling round trip is not
 * answered (no connection within the rejoin grace), even when the broker's
 * `ask_expired` for the question was read before the drop: the client then
 * knows the broker accepted the question and closed it unanswered. Over the
 * fake client. FAILS on main as of the merge.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { RequestTimeout } from "../src/client/errors.ts"
import { ASK_EXPIRY_V1, EXACT_SEND_V1 } from "../src/protocol/features.ts"
import { DeliveryUnknown, ReplyTimeout } from "../src/session/errors.ts"
import { withPeers } from "./session/support.ts"

describe("review revak: an unacknowledged ask whose ask_expired was read, the settling round trip unanswered", () => {
  it.effect("AK3: ends ReplyTimeout (the broker said it expired), not DeliveryUnknown", () =>
    Effect.gen(function*() {
      const { client, session } = yield* withPeers()
      client.features = [EXACT_SEND_V1, ASK_EXPIRY_V1]
      client.onSend = () => Effect.fail(new RequestTimeout({ operation: "send", timeoutMs: 3_000 }))
      // The held frames bring the broker's ask_expired; the connection then drops and none comes back in the grace.
      client.onSettle = Effect.suspend(() => {
        const id = client.sends.at(-1)?.message.id
        return id === undefined ? Effect.void : client.expireAsk(id)
      }).pipe(Effect.andThen(client.service.caughtUp), Effect.as(false))
      const exit = yield* Effect.exit(session.ask({ to: "B", message: "q", timeoutMs: 2_000 }))
      const failure = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
      assert.strictEqual(client.settles, 1)
      assert.notInstanceOf(failure, DeliveryUnknown, `told "${String(failure)}" though the broker's ask_expired was read`)
      assert.instanceOf(failure, ReplyTimeout)
    }))
})
