/**
 * A `replace`-staged message over a CLEAN broker stop (helper fixq1, found probing what else the stop's connection
 * closes deleted from the store after review rvw72 probe 1). Real brokers (`runBroker`, file-backed SQLite
 * `intercom.db`) on a Unix socket, one after the other on one directory, with a 10-minute replace window: alice
 * stages a message for bob (`delivery: "queue"`, `queueMode: "replace"`), and the broker is stopped cleanly (its
 * Scope closed) inside the window. A crash leaves the staged row stored and the next start restores it
 * (test/broker/stale-asks.test.ts); before the fix the stop's closes ran `ReplaceStaging`'s leave as for sessions
 * that left: a recipient closed first dropped what was staged for it, an asker closed first its staged ask — the row
 * deleted and alice owed `expired` (`owed_notices`). The stop closes the connections in the order they were adopted
 * (AdoptedConnections.closeAll), so bob registers first for the plain message, and alice first for the ask (either
 * order dropped an ask). No sleeps: round trips only; the rows are read once the broker's Scope is closed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { DatabaseSync } from "node:sqlite"
import { join } from "node:path"
import { runBroker } from "../../src/broker/index.ts"
import { DATABASE_FILE } from "../../src/broker/runBroker.ts"
import { DELIVERY_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { brokerPaths, message, messageFor, register, tempDir } from "../support/broker.ts"
import { connect } from "../support/wire.ts"

const FEATURES = [DELIVERY_V1, RECEIVED_V1]

/** The rows of `table` in a stopped broker's database. */
const rows = (intercomDir: string, table: "mail" | "owed_notices"): number => {
  const db = new DatabaseSync(join(intercomDir, DATABASE_FILE))
  try {
    const row = db.prepare(`SELECT count(*) AS n FROM ${table}`).get()
    return typeof row?.n === "number" ? row.n : -1
  } finally {
    db.close()
  }
}

/**
 * Alice stages an ask (`ask`) or a plain message for bob (who registers first when `bobFirst`), the broker stops
 * cleanly: the stop left the `mail` row and owes no notice (`owed_notices`), checked here; then, on a second broker,
 * the id of what bob, back, gets first under the staged message's id, and that id.
 */
const stageAndStop = (ask: boolean, bobFirst: boolean) =>
  Effect.gen(function*() {
    const root = yield* tempDir()
    const { intercomDir, socketPath } = brokerPaths(root)
    const start = Effect.gen(function*() {
      const scope = yield* Scope.make()
      yield* runBroker({ intercomDir, socketPath, idleExit: null, replaceWindow: "10 minutes" }).pipe(Scope.provide(scope))
      return scope
    })
    const first = yield* start
    const registerAs = (id: string) =>
      Effect.gen(function*() {
        const client = yield* connect(socketPath, id)
        yield* register(client, { sessionId: id, name: id, frame: { features: FEATURES } })
        return client
      })
    if (bobFirst) yield* registerAs("bob")
    const alice = yield* registerAs("alice")
    if (!bobFirst) yield* registerAs("bob")
    const staged = message("staged", ask ? { expectsReply: true } : {})
    yield* alice.send({
      type: "send", to: "bob", message: staged, delivery: "queue", queueMode: "replace", threadId: "t",
      ...(ask ? { askTimeoutMs: 600_000 } : {})
    })
    const ack = yield* alice.next(["delivered", "delivery_failed", "delivery_queued"], (f) => f.messageId === staged.id)
    assert.strictEqual(ack.type, "delivery_queued", "setup: not staged")
    yield* Scope.close(first, Exit.void)
    // Read before the restart: without the fix the row is gone, and bob back would wait for nothing.
    const left = { mail: rows(intercomDir, "mail"), owed: rows(intercomDir, "owed_notices") }
    assert.deepStrictEqual(left, { mail: 1, owed: 0 }, "the clean stop dropped the staged row (its sender owed `expired`)")

    const second = yield* start
    const bob = yield* connect(socketPath, "bob-back")
    yield* register(bob, { sessionId: "bob", name: "bob", frame: { features: FEATURES } })
    const got = yield* messageFor(bob, staged.id)
    yield* Scope.close(second, Exit.void)
    return { got: got.message.id, id: staged.id }
  })

describe("a replace-staged message over a clean broker stop (helper fixq1)", () => {
  it.live("a plain message, its recipient closed first: still stored, no `expired` owed, delivered to the recipient back", () =>
    Effect.gen(function*() {
      const { got, id } = yield* stageAndStop(false, true)
      assert.strictEqual(got, id)
    }))

  it.live("an ask, its asker closed first: still stored, no `expired` owed, asked of the recipient back", () =>
    Effect.gen(function*() {
      const { got, id } = yield* stageAndStop(true, false)
      assert.strictEqual(got, id)
    }))
})
