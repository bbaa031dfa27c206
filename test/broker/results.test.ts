/**
 * The result archive (`results-v1`, C-WKR-11…14) in the broker, over real
 * Unix sockets: receipts, pages, listings newest first, who may read a
 * report (its group, the storing child's supervisor), clear refusals, the
 * bound on requests waiting for the archive, and a base client that never
 * sees any of it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { BASE_FEATURES, GROUPS_V1, RESULTS_V1, SUPERVISOR_V1 } from "../../src/protocol/features.ts"
import { MAX_IN_FLIGHT_PER_CONNECTION, ResultText } from "../../src/broker/Results.ts"
import { ResultArchive, ResultArchiveFailed, type ResultArchiveService } from "../../src/store/ResultArchive.ts"
import { withBroker } from "../support/broker.ts"
import type { WireClient } from "../support/wire.ts"

const FEATURES = [RESULTS_V1, GROUPS_V1, SUPERVISOR_V1]
const archival = (group?: string, extra: Record<string, unknown> = {}) => ({
  frame: { features: FEATURES, ...(group === undefined ? {} : { group }), ...extra }
})

let counter = 0
const rid = () => `r-${++counter}`

const store = (client: WireClient, body: string, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "result_store", requestId, body, ...extra })
    return yield* client.next(["result_stored", "result_failed"], (f) => f.requestId === requestId)
  })

const read = (client: WireClient, ref: string, page: { offset?: number; limit?: number } = {}) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "result_read", requestId, ref, ...page })
    return yield* client.next(["result_page", "result_failed"], (f) => f.requestId === requestId)
  })

const listing = (client: WireClient, page: { offset?: number; limit?: number } = {}) =>
  Effect.gen(function*() {
    const requestId = rid()
    yield* client.send({ type: "result_list", requestId, ...page })
    return yield* client.next(["result_listed", "result_failed"], (f) => f.requestId === requestId)
  })

const stored = (client: WireClient, body: string, extra: Record<string, unknown> = {}) =>
  Effect.flatMap(store(client, body, extra), (answer) =>
    answer.type === "result_stored" ? Effect.succeed(answer) : Effect.die(new Error(answer.reason)))

describe("results-v1 in the broker", () => {
  it.live("a stored report is acknowledged memory-only without a database, read back by pages, listed newest first (C-WKR-11, 12, 13)", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ durability: "memory" })
      const worker = yield* broker.session({ sessionId: "worker-1", name: "worker", ...archival() })
      const receipt = yield* stored(worker.client, "ab😀cdef", { title: "Parser fix", run: "run-3", child: "worker" })
      assert.match(receipt.ref, /^result:[0-9a-f-]{36}$/)
      assert.strictEqual(receipt.durable, false)
      assert.strictEqual(receipt.truncated, false)
      assert.strictEqual(receipt.total, 8)
      const first = yield* read(worker.client, receipt.ref, { offset: 0, limit: 3 })
      if (first.type !== "result_page") return assert.fail(first.reason)
      assert.strictEqual(first.text, "ab")
      assert.strictEqual(first.nextOffset, 2)
      assert.strictEqual(first.durable, false)
      assert.deepStrictEqual(first.result.from, { id: "worker-1", name: "worker" })
      assert.strictEqual(first.result.title, "Parser fix")
      const rest = yield* read(worker.client, receipt.ref, { offset: 2, limit: 100 })
      if (rest.type !== "result_page") return assert.fail(rest.reason)
      assert.strictEqual(rest.text, "😀cdef")
      assert.isUndefined(rest.nextOffset)

      const second = yield* stored(worker.client, "second")
      const listed = yield* listing(worker.client)
      if (listed.type !== "result_listed") return assert.fail(listed.reason)
      assert.deepStrictEqual(listed.results.map((r) => r.ref), [second.ref, receipt.ref])
      assert.strictEqual(listed.total, 2)
      assert.isUndefined(listed.nextOffset)
    }))

  it.live("a report is read by its group and by the storing child's supervisor, and not found in another group", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const supervisor = yield* broker.session({ sessionId: "sup-1", name: "boss", ...archival(undefined, { ownerToken: "token-1" }) })
      const requestId = rid()
      yield* supervisor.client.send({ type: "authorize_supervisor", requestId, childName: "kid" })
      const granted = yield* supervisor.client.next("supervisor_authorized", (f) => f.requestId === requestId)
      const child = yield* broker.session({
        sessionId: "kid-1",
        name: "kid",
        ...archival("run-1", { capability: granted.capability, supervisorSessionId: "sup-1" })
      })
      const sibling = yield* broker.session({ sessionId: "kid-2", name: "sibling", ...archival("run-1") })
      const stranger = yield* broker.session({ sessionId: "other", name: "other", ...archival("run-2") })
      const receipt = yield* stored(child.client, "the child's report")

      const bySupervisor = yield* read(supervisor.client, receipt.ref)
      assert.strictEqual(bySupervisor.type === "result_page" ? bySupervisor.text : bySupervisor.reason, "the child's report")
      const bySibling = yield* read(sibling.client, receipt.ref)
      assert.strictEqual(bySibling.type === "result_page" ? bySibling.text : bySibling.reason, "the child's report")
      const byStranger = yield* read(stranger.client, receipt.ref)
      assert.strictEqual(byStranger.type, "result_failed")
      if (byStranger.type === "result_failed") assert.include(byStranger.reason, `No stored result ${receipt.ref} is visible`)
      const supervisorList = yield* listing(supervisor.client)
      assert.strictEqual(supervisorList.type === "result_listed" ? supervisorList.total : -1, 1)
      const strangerList = yield* listing(stranger.client)
      assert.strictEqual(strangerList.type === "result_listed" ? strangerList.total : -1, 0)
    }))

  it.live("a bad ref, offset or limit is refused with result_failed naming what was wrong, and the connection stays", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const s = yield* broker.session({ ...archival() })
      const { ref } = yield* stored(s.client, "text")
      const runHandle = yield* read(s.client, "run-3")
      assert.include(runHandle.type === "result_failed" ? runHandle.reason : "", "\"run-3\" is not a stored result's address")
      const limit = yield* read(s.client, ref, { limit: 1 })
      assert.include(limit.type === "result_failed" ? limit.reason : "", "limit must be a whole number from 2 to 100000, got 1")
      const offset = yield* read(s.client, ref, { offset: 5 })
      assert.include(offset.type === "result_failed" ? offset.reason : "", "offset 5 is past the end")
      const requestId = rid()
      yield* s.client.send({ type: "result_read", requestId, ref: 42 })
      const shape = yield* s.client.next("result_failed", (f) => f.requestId === requestId)
      assert.include(shape.reason, "Invalid \"result_read\" frame at field \"ref\"")
      yield* s.client.roundTrip
      assert.isFalse(s.client.isClosed())
    }))

  it.live("a base client is granted no results-v1, and a result frame without it is a protocol error", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const base = yield* broker.session({})
      assert.deepStrictEqual(base.registered.features, BASE_FEATURES)
      yield* base.client.send({ type: "result_list", requestId: "x" })
      yield* base.client.waitClosed()
      assert.strictEqual(base.client.count("result_failed"), 0)
      assert.strictEqual(base.client.count("result_listed"), 0)
    }))

  it.live("requests waiting for the archive are bounded per connection: past the bound they are refused at once", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const inner = ResultArchive.makeMemory()
      const slow: ResultArchiveService = { ...inner, store: (input) => Effect.andThen(Deferred.await(gate), inner.store(input)) }
      const broker = yield* withBroker().pipe(Effect.provideService(ResultArchive, slow))
      const s = yield* broker.session({ ...archival() })
      const ids = Array.from({ length: MAX_IN_FLIGHT_PER_CONNECTION + 1 }, () => rid())
      for (const requestId of ids) yield* s.client.send({ type: "result_store", requestId, body: requestId })
      const refused = yield* s.client.next("result_failed", (f) => f.requestId === ids.at(-1))
      assert.strictEqual(refused.reason, ResultText.busy(MAX_IN_FLIGHT_PER_CONNECTION))
      yield* Deferred.succeed(gate, undefined)
      for (const requestId of ids.slice(0, -1)) yield* s.client.next("result_stored", (f) => f.requestId === requestId)
      const listed = yield* listing(s.client)
      assert.strictEqual(listed.type === "result_listed" ? listed.total : -1, MAX_IN_FLIGHT_PER_CONNECTION)
    }))

  it.live("a store the archive could not write is answered result_failed, never a receipt", () =>
    Effect.gen(function*() {
      const inner = ResultArchive.makeMemory()
      const broken: ResultArchiveService = {
        ...inner,
        store: () => Effect.fail(new ResultArchiveFailed({ detail: "storing a result: disk I/O error" }))
      }
      const broker = yield* withBroker().pipe(Effect.provideService(ResultArchive, broken))
      const s = yield* broker.session({ ...archival() })
      const answer = yield* store(s.client, "lost?")
      assert.strictEqual(answer.type, "result_failed")
      if (answer.type === "result_failed") {
        assert.strictEqual(
          answer.reason,
          "The result archive failed: storing a result: disk I/O error. Nothing was stored; check the broker's log and its database file"
        )
      }
      assert.strictEqual(s.client.count("result_stored"), 0)
      const listed = yield* listing(s.client)
      assert.strictEqual(listed.type === "result_listed" ? listed.total : -1, 0)
    }))
})
