/**
 * The asker's settling round trip (`settleRoundTrip`, SettleRoundTrip.ts)
 * when the broker holds its answer on purpose (src/broker/ParkedReplies.ts:
 * a reply to the asker parked elsewhere) while it answers the same
 * connection's other `list`s: against a scripted broker on a real socket.
 * Unanswered for the liveness timeout, the client probes that connection;
 * answered, it keeps the connection and waits on for the same settle, until
 * the rejoin grace runs out. (A broker that answers the probe neither is
 * dropped: test/client/askSettle.test.ts.) Every wait is on a frame or a
 * round trip, never on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { ASK_EXPIRY_V1, EXACT_SEND_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { fakeBroker, fakeClientOptions, makeClient } from "./support.ts"

const FEATURES = [EXACT_SEND_V1, LIST_PAGE_V1, ASK_EXPIRY_V1]
const TIMINGS = { reconnectBaseMs: 10, livenessTimeoutMs: 500, livenessIntervalMs: 600_000 }

describe("a settling round trip the broker holds while it answers the connection's other requests", () => {
  it.live("keeps that connection: it is probed at each liveness timeout, and the probes are answered", () =>
    Effect.gen(function*() {
      // Held for good on this connection; every other list answered at once.
      const fake = yield* fakeBroker({ features: FEATURES, ignoreSettle: () => true })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-held-0001", { ...TIMINGS, rejoinGraceMs: 60_000 }))
      yield* client.connect
      const settling = yield* Effect.forkChild(client.settleRoundTrip, { startImmediately: true })
      const settleAt = () => fake.frames.findIndex((f) => f.frame.type === "list" && f.frame.settle === true)
      /** Lists connection 1 sent after its settle (the client's probes), each answered at once by the fake. */
      const probesAfter = () =>
        fake.frames.filter((f, i) =>
          settleAt() >= 0 && i > settleAt() && f.connection === 1 && f.frame.type === "list" && f.frame.settle !== true
        ).length
      // Two probes: two liveness timeouts passed with the settle held; or a second connection (a drop).
      yield* fake.until("two probes after the settle, or a drop", () => probesAfter() >= 2 || fake.connections() >= 2, "20 seconds")
      const status = yield* client.status
      assert.strictEqual(fake.connections(), 1, `the connection was dropped for a held settle (lastError: ${status.lastError})`)
      assert.isUndefined(fake.ended().find((n) => n === 1), "connection 1 ended")
      assert.isUndefined(settling.pollUnsafe(), "the settle ended while its answer was held within the grace")
      yield* Fiber.interrupt(settling)
    }))

  it.live("held past the rejoin grace answers false on the same connection, having dropped none", () =>
    Effect.gen(function*() {
      // Held on every connection, as ParkedReplies holds it again on each new one while the reply stays parked.
      const fake = yield* fakeBroker({ features: FEATURES, ignoreSettle: () => true })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-held-0002", { ...TIMINGS, rejoinGraceMs: 1_200 }))
      yield* client.connect
      const settled = yield* client.settleRoundTrip
      assert.isFalse(settled)
      assert.strictEqual(fake.connections(), 1, `a held settle dropped ${fake.connections() - 1} connections`)
      const settles = fake.frames.filter((f) => f.frame.type === "list" && f.frame.settle === true)
      assert.strictEqual(settles.length, 1, "the settle was written again")
    }))

  it.live("answered after the broker held it past two liveness timeouts, it answers true on the same connection", () =>
    Effect.gen(function*() {
      // The answer goes right after the second probe's: the broker released it while the client still waited.
      const fake = yield* fakeBroker({ features: FEATURES, settleAnsweredAfterLists: 2 })
      const { client } = yield* makeClient(fakeClientOptions(fake, "asker-held-0003", { ...TIMINGS, rejoinGraceMs: 10_000 }))
      yield* client.connect
      assert.isTrue(yield* client.settleRoundTrip)
      assert.strictEqual(fake.connections(), 1)
      const lists = fake.ofType("list").map((f) => [f.connection, f.frame.settle === true])
      assert.deepStrictEqual(lists, [[1, true], [1, false], [1, false]], "the settle's own answer was not the one waited for")
    }))
})
