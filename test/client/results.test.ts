/**
 * The result archive through `IntercomClient` (`results-v1`, C-WKR-11…14):
 * store, list and read against a real broker over Unix sockets; local checks
 * that refuse a bad ref, offset or limit before anything is sent; a report
 * too large for one frame cut to fit and marked truncated; and the
 * "unavailable" error against a base broker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { fitBody } from "../../src/client/ClientResults.ts"
import { MAX_FRAME_BYTES } from "../../src/protocol/constants.ts"
import { message, withBroker } from "../support/broker.ts"
import { brokerClientOptions, fakeBroker, fakeClientOptions, makeClient } from "./support.ts"

const A_ID = "aaaaaaaa-3333-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-3333-4000-8000-00000000000b"

describe("IntercomClient results (real broker)", () => {
  it.live("storeResult returns a durable receipt (the broker's default); results lists it for the group; result pages it by UTF-16 offsets", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client: a } = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
      const { client: b } = yield* makeClient(brokerClientOptions(broker, B_ID, "bravo"))
      const receipt = yield* a.storeResult({ body: "x😀yz", title: "done", run: "run-1", child: "alpha" })
      assert.deepInclude(receipt, { durable: true, truncated: false, total: 5, originalLength: 5 })
      const listed = yield* b.results()
      assert.deepStrictEqual(listed.results.map((r) => [r.ref, r.from.id, r.title]), [[receipt.ref, A_ID, "done"]])
      assert.strictEqual(listed.durable, true)
      const first = yield* b.result({ ref: receipt.ref, limit: 2 })
      assert.deepInclude(first, { offset: 0, text: "x", nextOffset: 1 })
      const rest = yield* b.result({ ref: receipt.ref, offset: 1 })
      assert.strictEqual(rest.text, "😀yz")
      assert.isUndefined(rest.nextOffset)
    }))

  it.live("a bad ref, offset or limit fails locally with the rule; a missing report fails with the broker's reason", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client } = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
      const run = yield* Effect.flip(client.result({ ref: "run-3" }))
      assert.include(run.message, "\"run-3\" is not a stored result's address")
      const limit = yield* Effect.flip(client.result({ ref: "result:00000000-0000-4000-8000-000000000000", limit: 0 }))
      assert.include(limit.message, "limit must be a whole number from 2 to 100000, got 0")
      const listLimit = yield* Effect.flip(client.results({ limit: 51 }))
      assert.include(listLimit.message, "limit must be a whole number from 1 to 50, got 51")
      const missing = yield* Effect.flip(client.result({ ref: "result:00000000-0000-4000-8000-000000000000" }))
      assert.strictEqual(missing._tag, "ResultRefused")
      assert.include(missing.message, "No stored result result:00000000-0000-4000-8000-000000000000 is visible")
    }))

  it.live("a report too large for one frame is cut to fit, never inside a surrogate pair, and its receipt says truncated (C-WKR-12)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null })
      const { client } = yield* makeClient(brokerClientOptions(broker, A_ID, "alpha"))
      const body = "😀".repeat(400_000) // 800,000 units, 1.6 MB as UTF-8
      const receipt = yield* client.storeResult({ body })
      assert.strictEqual(receipt.truncated, true)
      assert.strictEqual(receipt.originalLength, body.length)
      assert.isBelow(receipt.total, body.length)
      assert.strictEqual(receipt.total % 2, 0)
      const last = yield* client.result({ ref: receipt.ref, offset: receipt.total - 4, limit: 100 })
      assert.strictEqual(last.text, "😀😀")
      assert.isTrue(last.result.truncated)
    }))
})

describe("fitBody", () => {
  it("keeps a body that fits, and cuts one that does not to the longest prefix whose JSON fits", () => {
    assert.strictEqual(fitBody("short"), "short")
    const cut = fitBody("é".repeat(10), 12) // JSON: quotes + 2 bytes per é
    assert.strictEqual(cut, "é".repeat(5))
    assert.strictEqual(fitBody("a😀", 5), "a") // "a😀" is 7 bytes of JSON; "a\ud83d" would split the pair
    assert.isAtMost(Buffer.byteLength(JSON.stringify(fitBody("x".repeat(MAX_FRAME_BYTES)))), MAX_FRAME_BYTES)
  })
})

describe("IntercomClient results against a base broker", () => {
  it.live("result operations fail as unavailable without sending anything; messaging works", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"] })
      const { client } = yield* makeClient(fakeClientOptions(fake, A_ID))
      const operations: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
        client.storeResult({ body: "report" }),
        client.results(),
        client.result({ ref: "result:00000000-0000-4000-8000-000000000000" })
      ]
      for (const operation of operations) {
        const exit = yield* Effect.exit(operation)
        assert.isTrue(Exit.isFailure(exit))
        assert.include(JSON.stringify(exit), "ResultsUnavailable")
      }
      const sent = message("still fine")
      assert.strictEqual((yield* client.send({ to: "anyone", message: sent })).messageId, sent.id)
      assert.deepStrictEqual(fake.frames.filter((f) => f.frame["type"]?.toString().startsWith("result_") === true), [])
    }))
})
