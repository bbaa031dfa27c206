/**
 * The broker's self warm-up (WarmUp.ts, `BrokerOptions.warmUp`) over real
 * Unix sockets: it leaves nothing a client can see — no session in `list`,
 * no membership event, nothing in the statistics, no row in the durable
 * store — while it runs the real path; the broker answers its clients while
 * it runs; a shutdown in the middle of it is clean; off, it does not run.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as fs from "node:fs"
import { DatabaseSync } from "node:sqlite"
import { runBroker } from "../../src/broker/index.ts"
import { DATABASE_FILE } from "../../src/broker/runBroker.ts"
import { DEFAULT_WARM_UP, type WarmUpPlan } from "../../src/broker/WarmUp.ts"
import { parseBrokerArgv } from "../../src/cli/argv.ts"
import { STATS_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "../support/assertions.ts"
import {
  brokerPaths,
  list,
  membershipTypes,
  message,
  messageFor,
  send,
  tempDir,
  type TestBroker,
  withBroker
} from "../support/broker.ts"

/** A short plan: two rounds per pair, begun after the test's own session registered (it registers at once). */
const shortPlan: WarmUpPlan = { ...DEFAULT_WARM_UP, rounds: 2, delayMs: 200, cpuBudgetMs: 60_000 }

/** A plan that runs until the broker shuts down. */
const endlessPlan: WarmUpPlan = { ...DEFAULT_WARM_UP, rounds: 1_000_000, delayMs: 0, cpuBudgetMs: 1_000_000 }

/** What a client could see of a finished warm-up, and what a clean one shows: nothing but the watcher itself. */
const NO_TRACE = {
  membershipFrames: 0,
  listed: ["watcher"],
  live: 1,
  routed: { delivered: 0, queued: 0, staged: 0, replayed: 0, refused: 0, refusedByCode: {} },
  asksOpen: 0,
  tables: { sessions: 1, mailbox: 0, asks: 0, adopted: 1 }
}

/**
 * Registers a watcher granted `stats-v1` before the warm-up begins, waits
 * for the warm-up to end, and returns what the watcher can see of it (each
 * part compared at once, so a trace shows in every part it leaves).
 */
const watchWarmUp = (broker: TestBroker) =>
  Effect.gen(function*() {
    const watcher = yield* broker.session({ sessionId: "watcher", frame: { features: [STATS_V1] } })
    const report = yield* broker.handle.warmUp.done
    // It ran its whole plan: every pair's rounds went through its private broker.
    assert.deepStrictEqual(report === undefined ? undefined : { rounds: report.rounds, capped: report.capped }, {
      rounds: shortPlan.pairs * shortPlan.rounds,
      capped: false
    })
    // A round trip on the watcher after the warm-up ended: anything it would have been sent has arrived.
    yield* watcher.client.roundTrip
    const membership: ReadonlyArray<string> = membershipTypes
    const membershipFrames = watcher.client.received().filter((frame) => membership.includes(frame.type)).length
    const listed = (yield* list(watcher.client)).map((session) => session.id)
    yield* watcher.client.send({ type: "stats", requestId: "r1" })
    const stats = (yield* watcher.client.next("stats_result")).stats
    const tables = yield* broker.handle.stats
    return {
      membershipFrames,
      listed,
      live: stats.sessions.live,
      routed: stats.routed,
      asksOpen: stats.asks.open,
      tables: { sessions: tables.sessions, mailbox: tables.mailbox, asks: tables.asks, adopted: tables.adopted }
    }
  })

/** Rows in every table of the database but the migrations' record. */
const storedRows = (file: string): Record<string, number> => {
  const db = new DatabaseSync(file)
  try {
    const counts: Record<string, number> = {}
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all()
    for (const { name } of tables) {
      if (typeof name !== "string" || name === "effect_sql_migrations") continue
      counts[name] = Number(db.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).get()?.["n"])
    }
    return counts
  } finally {
    db.close()
  }
}

describe("self warm-up", () => {
  it.live("memory mode: no session listed, no membership event, nothing counted", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ durability: "memory", idleExit: null, warmUp: shortPlan })
      assert.deepStrictEqual(yield* watchWarmUp(broker), NO_TRACE)
    }))

  it.live("durable mode: the same, and not a row in the broker's database", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const paths = brokerPaths(root)
      const seen = yield* Effect.scoped(Effect.flatMap(withBroker({ idleExit: null, warmUp: shortPlan }, root), watchWarmUp))
      // After shutdown and its last commit: every table empty (its rows counted, so a trace shows) but the
      // store's state epoch, which its first load made (`state-epoch-v1`), not the warm-up.
      const rows = storedRows(`${paths.intercomDir}/${DATABASE_FILE}`)
      assert.isAbove(Object.keys(rows).length, 5)
      assert.deepStrictEqual(
        { ...seen, rows },
        { ...NO_TRACE, rows: Object.fromEntries(Object.keys(rows).map((table) => [table, table === "state_epoch" ? 1 : 0])) }
      )
    }))

  it.live("clients are answered while it runs, and a shutdown in the middle of it is clean", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const paths = brokerPaths(root)
      yield* Effect.scoped(Effect.gen(function*() {
        const broker = yield* withBroker({ durability: "memory", idleExit: null, warmUp: endlessPlan }, root)
        yield* broker.handle.warmUp.started
        const a = yield* broker.session({ sessionId: "a" })
        const b = yield* broker.session({ sessionId: "b" })
        const sent = message("during the warm-up")
        assertDelivered(yield* send(a.client, "b", sent))
        yield* messageFor(b.client, sent.id)
        // Its sessions are registered now, in its private broker only.
        assert.deepStrictEqual((yield* list(a.client)).map((session) => session.id).sort(), ["a", "b"])
        // Still running: this traffic was served beside it.
        assert.isTrue(Option.isNone(yield* Effect.timeoutOption(broker.handle.warmUp.done, 0)))
      }))
      // The scope closed (its warm-up interrupted): the lock is free, no private socket file is left.
      assert.deepStrictEqual(fs.readdirSync(paths.intercomDir).filter((name) => name.startsWith("warm-")), [])
      yield* Effect.scoped(Effect.gen(function*() {
        const again = yield* runBroker({ ...paths, durability: "memory", idleExit: null, warmUp: shortPlan })
        assert.strictEqual((yield* again.warmUp.done)?.rounds, shortPlan.pairs * shortPlan.rounds)
      }))
    }))

  it.live("off: it does not run", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ durability: "memory", idleExit: null, warmUp: false })
      assert.isUndefined(yield* broker.handle.warmUp.done)
    }))

  it("`intercom broker --warm-up on|off` (fast path); anything else goes to the full program", () => {
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--warm-up", "off"]), { dir: undefined, maxSessions: undefined, warmUp: false })
    assert.deepStrictEqual(parseBrokerArgv(["broker", "--warm-up", "on"]), { dir: undefined, maxSessions: undefined, warmUp: true })
    assert.isUndefined(parseBrokerArgv(["broker", "--warm-up", "maybe"]))
    assert.isUndefined(parseBrokerArgv(["broker", "--warm-up", "on", "--warm-up", "off"]))
  })
})
