/**
 * Review revt, T2 (probe; fails on main at 4c832ea5). A take-back attempt
 * (`reclaim`, ClientTakeover.ts) in flight when `disconnect` runs is neither
 * joined nor stopped: `disconnect` returns at once (the client's `current` is
 * the failed takeover Deferred, so there is nothing for it to join), and the
 * attempt then registers the id on the broker after the client was closed —
 * peers see it join and leave again — and calls `takenBack()`, clearing
 * `status.takenOver` of a closed client that never got its id back. For a
 * reconnect's attempt in flight, `disconnect` joins it and then unregisters
 * it (C-BRK-30); the take-back's is left out.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { Dialer } from "../src/client/Dialer.ts"
import { RECLAIM_INTERVAL_MS } from "../src/client/IntercomClient.ts"
import { RECLAIM_V1, TAKEOVER_V1 } from "../src/protocol/features.ts"
import { advance, settle, step } from "./support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker } from "./client/support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e2"
/** No such process (over Linux's pid_max): the taker counts as exited, so the take-back dials (`ifFree`). */
const GONE_PID = 2 ** 30

/** Taken over on its first connection; the take-back's dial (the second) takes 1 s to connect. */
const takenOverWithSlowDial = Effect.gen(function*() {
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
  assert.isTrue(Exit.isSuccess(disconnecting.pollUnsafe() ?? Exit.fail("still running")), "disconnect waited")
  yield* advance("10 seconds")
  return { client, fake }
})

describe("review revt T2", () => {
  it.effect("a take-back attempt in flight at disconnect registers nothing after disconnect returned", () =>
    Effect.gen(function*() {
      const { fake } = yield* takenOverWithSlowDial
      assert.strictEqual(fake.ofType("register").length, 1, "the take-back registered the id after disconnect returned")
    }))

  it.effect("a take-back attempt in flight at disconnect leaves status.takenOver as it was (the id was not taken back)", () =>
    Effect.gen(function*() {
      const { client } = yield* takenOverWithSlowDial
      assert.deepInclude(yield* client.status, { connected: false, takenOver: { sessionId: ID, pid: GONE_PID } })
    }))
})
