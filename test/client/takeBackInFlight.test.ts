/**
 * A take-back's try (`reclaim`, ClientTakeover.ts) in flight when
 * `disconnect` runs is joined, as a reconnect's attempt is (C-BRK-30, for at
 * most 2 s): `disconnect` returns once the try is over, and what it
 * registered meanwhile is closed (`unregister`), never adopted. The takeover
 * is cleared only once a connection taken back is adopted on a live client,
 * so a closed one still says it was taken over.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { Dialer } from "../../src/client/Dialer.ts"
import { RECLAIM_INTERVAL_MS } from "../../src/client/IntercomClient.ts"
import { RECLAIM_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import { advance, settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e2"
/** No such process (over Linux's pid_max): the taker counts as exited, so the take-back dials (`ifFree`). */
const GONE_PID = 2 ** 30

/** Taken over on its first connection; the take-back's dial (the second) takes 1 s of TestClock time (the attempt in flight, not a barrier); `disconnect` is called while it is on its way. */
const disconnectDuringTakeBack = Effect.gen(function*() {
  const fake = yield* memoryFakeBroker({ features: ["exact-send-v1", TAKEOVER_V1, RECLAIM_V1], takeOverFirst: GONE_PID })
  let dialed = 0
  const dial: Dialer = (address) =>
    ++dialed === 1 ? fake.dial(address) : Effect.andThen(Effect.sleep("1 second"), fake.dial(address))
  const { client } = yield* makeMemoryClient(memoryClientOptions({ ...fake, dial }, ID))
  yield* settle(client.connect)
  assert.deepInclude(yield* client.status, { connected: false, takenOver: { sessionId: ID, pid: GONE_PID } })
  // The take-back's first try: the taker is gone, so it dials (`ifFree`); the dial is on its way.
  yield* advance(`${RECLAIM_INTERVAL_MS + 500} millis`)
  assert.strictEqual(dialed, 2, "the take-back did not dial")
  assert.strictEqual(fake.ofType("register").length, 1)
  const disconnecting = yield* step(client.disconnect)
  return { client, fake, disconnecting }
})

describe("disconnect while a take-back's try is in flight", () => {
  it.effect("joins it: returns once it registered, its registration unregistered, and nothing registers after", () =>
    Effect.gen(function*() {
      const { disconnecting, fake } = yield* disconnectDuringTakeBack
      assert.isUndefined(disconnecting.pollUnsafe(), "disconnect did not join the take-back's try")
      yield* advance("1 second")
      assert.isTrue(Exit.isSuccess(disconnecting.pollUnsafe() ?? Exit.fail("still running")), "disconnect still runs")
      assert.deepStrictEqual(fake.ofType("register").map((seen) => seen.connection), [1, 2])
      assert.deepStrictEqual(fake.ofType("unregister").map((seen) => seen.connection), [2])
      yield* advance("10 seconds")
      assert.strictEqual(fake.ofType("register").length, 2, "a take-back registered the id after disconnect returned")
    }))

  it.effect("leaves status.takenOver as it was: the id was not taken back", () =>
    Effect.gen(function*() {
      const { client, disconnecting } = yield* disconnectDuringTakeBack
      yield* advance("1 second")
      assert.isDefined(disconnecting.pollUnsafe(), "disconnect still runs")
      assert.deepInclude(yield* client.status, { connected: false, takenOver: { sessionId: ID, pid: GONE_PID } })
    }))
})
