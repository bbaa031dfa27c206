/**
 * C-WKR-11: a stored report reads back after a broker restart. Two brokers,
 * one after the other, on the same intercom directory and the same database
 * file (`intercom.db`, which `runBroker` opens with durability `sqlite`, the
 * default): the first acknowledges a durable store and stops; the second
 * reads the page.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runBroker } from "../../src/broker/runBroker.ts"
import { RESULTS_V1 } from "../../src/protocol/features.ts"
import { brokerPaths, register, tempDir } from "../support/broker.ts"
import { connect, type WireClient } from "../support/wire.ts"

/** Runs a broker on `root` (durable by default), registers a results-v1 session, and runs `body` with it. */
const withDurableBroker = <A, E>(root: string, body: (client: WireClient) => Effect.Effect<A, E>) => {
  const { intercomDir, socketPath } = brokerPaths(root)
  return Effect.scoped(
    Effect.gen(function*() {
      yield* runBroker({ intercomDir, socketPath, idleExit: null, writePidFile: false })
      const client = yield* connect(socketPath, "reader")
      yield* register(client, { sessionId: "worker-1", name: "worker", frame: { features: [RESULTS_V1] } })
      return yield* body(client)
    })
  )
}

describe("results-v1 across a broker restart", () => {
  it.live("a durable receipt, then after a restart on the same database the page reads back with its metadata", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const body = "line one\nline two 😀 and more"
      const receipt = yield* withDurableBroker(root, (client) =>
        Effect.gen(function*() {
          yield* client.send({ type: "result_store", requestId: "s1", body, title: "before the restart" })
          return yield* client.next("result_stored", (f) => f.requestId === "s1")
        }))
      assert.strictEqual(receipt.durable, true)
      assert.strictEqual(receipt.total, body.length)

      const [page, listed] = yield* withDurableBroker(root, (client) =>
        Effect.gen(function*() {
          yield* client.send({ type: "result_read", requestId: "r1", ref: receipt.ref, offset: 5, limit: 1000 })
          const page = yield* client.next(["result_page", "result_failed"], (f) => f.requestId === "r1")
          yield* client.send({ type: "result_list", requestId: "l1" })
          const listed = yield* client.next("result_listed", (f) => f.requestId === "l1")
          return [page, listed] as const
        }))
      if (page.type !== "result_page") return assert.fail(page.reason)
      assert.strictEqual(page.text, body.slice(5))
      assert.strictEqual(page.durable, true)
      assert.strictEqual(page.result.title, "before the restart")
      assert.strictEqual(page.result.total, body.length)
      assert.isUndefined(page.nextOffset)
      assert.deepStrictEqual(listed.results.map((r) => r.ref), [receipt.ref])
    }))
})
