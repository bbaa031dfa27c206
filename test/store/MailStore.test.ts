/**
 * `MailStore`: the SQLite store and the memory store load back exactly what
 * was committed (fast-check over random batches), a rewritten replay record
 * loads as its last state, the prune drops whole replay blocks and never a
 * key's later write while keeping an earlier one, migrations
 * 0005, 0006 and 0007 keep stored records and mail (0006 in its order, keyed
 * by seq; 0007 each key's last row), a row or block that does not decode
 * fails the load naming it, and a commit the disk cannot take
 * stores nothing; a batch that deletes a seq and puts a row under it again
 * keeps the row (deletes go before puts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as fc from "fast-check"
import * as path from "node:path"
import type { AskEdge } from "../../src/broker/AskEdges.ts"
import * as Database from "../../src/store/Database.ts"
import {
  type MailCommit,
  MailStore,
  type MailStoreService,
  makeMemory,
  makeMemoryMailState,
  makeSqlite,
  ROWS_PER_INSERT,
  type StoredMail
} from "../../src/store/MailStore.ts"
import { encodeFingerprint, encodeMail, encodeOutcome, type StoredRecord } from "../../src/store/mailCodec.ts"
import { migration as mail0001 } from "../../src/store/migrations/0001_mail.ts"
import { migration as replayLog0005 } from "../../src/store/migrations/0005_replay_log.ts"
import { migration as mailBySeq0006 } from "../../src/store/migrations/0006_mail_by_seq.ts"
import { migration as replayBlocks0007 } from "../../src/store/migrations/0007_replay_blocks.ts"
import { migration as owedNotices0008 } from "../../src/store/migrations/0008_owed_notices.ts"
import { migration as withdrawnAsks0009 } from "../../src/store/migrations/0009_withdrawn_asks.ts"
import { migration as stateEpoch0010 } from "../../src/store/migrations/0010_state_epoch.ts"
import { migration as silencedAsks0012 } from "../../src/store/migrations/0012_silenced_asks.ts"
import { migration as stampHigh0013 } from "../../src/store/migrations/0013_stamp_high.ts"
import * as SqliteClient from "../../src/store/SqliteClient.ts"
import { tempDir } from "./support.ts"

const sqliteStore = Layer.provideMerge(MailStore.sqlite, Database.layerMemory)
/** An in-memory database with no migrations applied (a test applies the ones it needs). */
const bareSqlite = SqliteClient.layer({ filename: ":memory:" })

const mailOf = (key: string, seq: number, text: string): StoredMail => ({
  seq,
  mail: {
    recordKey: key,
    senderKey: "scope\u0000alice",
    senderId: "alice",
    senderIdentity: undefined,
    fromJson: JSON.stringify({ id: "alice", name: "alice" }),
    message: { id: key, timestamp: 1, content: { text }, ...(seq % 2 === 0 ? { expectsReply: true } : {}) },
    brokerReceivedAt: 10 + seq,
    spaceKey: "scope",
    targetKey: "scope\u0000bob",
    targetId: "bob",
    targetIdentity: seq % 3 === 0 ? "bob@/tmp" : undefined,
    queuedAt: 10 + seq,
    askTimeoutMs: seq % 2 === 0 ? 60_000 : undefined,
    ...(seq % 5 === 0 ? { delivery: { delivery: "queue" as const, queueMode: "replace" as const, threadId: "t" } } : {})
  }
})

const recordOf = (key: string, at: number, ok: boolean): StoredRecord => ({
  key,
  sender: "scope\u0000alice",
  fingerprint: {
    targetId: "bob",
    textLength: 3,
    textHash: 12345,
    attachmentsLength: 0,
    attachmentsHash: 0,
    replyTo: at % 2 === 0 ? "ask-1" : undefined,
    expectsReply: undefined,
    supersedes: undefined,
    retryOf: undefined,
    replyErrorLength: -1,
    replyErrorHash: 0
  },
  outcome: ok
    ? { ok: true, delivery: "queued" }
    : { ok: false, code: "E_DELIVERY_EXPIRED", reason: "expired", retryable: false },
  at
})

const edgeOf = (key: string, deadline: number): AskEdge => ({
  messageKey: key,
  messageId: key,
  askerKey: "scope\u0000alice",
  targetKey: "scope\u0000bob",
  deadline
})

const key = fc.constantFrom("k1", "k2", "k3", "k4", "k5")
/** A record keeps the time it was first recorded when it is rewritten (Router.ts), so `at` is the key's. */
const recordedAt: Record<string, number> = { k1: 5, k2: 20, k3: 35, k4: 50, k5: 80 }
/** A commit as generated: mail by record key; `asCommits` numbers it as the journal would. */
interface DraftCommit extends Omit<MailCommit, "mailPuts" | "mailDeletes"> {
  readonly mailPuts: ReadonlyArray<readonly [key: string, text: string]>
  readonly mailDeletes: ReadonlyArray<string>
}

const draftArb: fc.Arbitrary<DraftCommit> = fc.record({
  records: fc.array(fc.tuple(key, fc.boolean()).map(([k, ok]) => recordOf(k, recordedAt[k] ?? 0, ok)), {
    maxLength: 3
  }),
  mailPuts: fc.array(fc.tuple(key, fc.string()), { maxLength: 3 }),
  mailDeletes: fc.array(key, { maxLength: 2 }),
  edgePuts: fc.array(fc.tuple(key, fc.integer({ min: 0, max: 100 })).map(([k, d]) => edgeOf(k, d)), { maxLength: 2 }),
  edgeDeletes: fc.array(key, { maxLength: 2 }),
  prune: fc.option(fc.record({ recordsBefore: fc.integer({ min: 0, max: 60 }), edgesUntil: fc.integer({ min: 0, max: 60 }) }), {
    nil: undefined
  })
})

/**
 * The commits the journal (StoreJournal.ts) would make of `drafts`: within a
 * batch a key is put or deleted, not both (the puts are kept); each put gets
 * the next `seq`, and a key put again while stored has its old row deleted;
 * a delete names the `seq` its key is stored under (keys not stored are skipped).
 */
const asCommits = (drafts: ReadonlyArray<DraftCommit>): ReadonlyArray<MailCommit> => {
  const stored = new Map<string, number>()
  let nextSeq = 1
  return drafts.map((draft) => {
    const uniq = <A>(items: ReadonlyArray<A>, keyOf: (a: A) => string) => [...new Map(items.map((a) => [keyOf(a), a])).values()]
    const mailDeletes: Array<number> = []
    const putKeys = new Set<string>()
    const mailPuts = uniq(draft.mailPuts, ([k]) => k).map(([k, text]) => {
      putKeys.add(k)
      const previous = stored.get(k)
      if (previous !== undefined) mailDeletes.push(previous)
      const seq = nextSeq++
      stored.set(k, seq)
      return mailOf(k, seq, text)
    })
    for (const k of new Set(draft.mailDeletes)) {
      const seq = stored.get(k)
      if (seq === undefined || putKeys.has(k)) continue
      stored.delete(k)
      mailDeletes.push(seq)
    }
    const edgePuts = uniq(draft.edgePuts, (e) => e.messageKey)
    return {
      ...draft,
      records: uniq(draft.records, (r) => r.key),
      mailPuts,
      mailDeletes,
      edgePuts,
      edgeDeletes: [...new Set(draft.edgeDeletes)].filter((k) => !edgePuts.some((e) => e.messageKey === k))
    }
  })
}

const loadAll = (store: MailStoreService, since = 0) =>
  Effect.map(store.load(since), (r) => ({
    records: [...r.records].sort((a, b) => a.key.localeCompare(b.key)),
    seqs: r.mail.map((m) => m.seq),
    mailBodies: [...r.mail].sort((a, b) => a.mail.recordKey.localeCompare(b.mail.recordKey)),
    edges: [...r.edges].sort((a, b) => a.messageKey.localeCompare(b.messageKey)),
    nextSeq: r.nextSeq
  }))

describe("MailStore", () => {
  it.effect("SQLite and memory load back the same state after any sequence of commits", () =>
    Effect.gen(function*() {
      const drafts = fc.sample(fc.array(draftArb, { minLength: 1, maxLength: 8 }), { numRuns: 40, seed: 7 })
      for (const draft of drafts) {
        const run = asCommits(draft)
        // The broker loads from its retention cutoff, never older than a prune's: SQLite prunes whole
        // replay blocks, so a record older than the cutoff may still be stored, and is not loaded.
        const since = Math.max(0, ...run.map((batch) => batch.prune?.recordsBefore ?? 0))
        const memory = makeMemory(makeMemoryMailState())
        const viaSqlite = yield* Effect.gen(function*() {
          const sqlite = yield* MailStore
          for (const batch of run) yield* sqlite.commit(batch)
          return yield* loadAll(sqlite, since)
        }).pipe(Effect.provide(sqliteStore))
        for (const batch of run) yield* memory.commit(batch)
        const viaMemory = yield* loadAll(memory, since)
        assert.deepStrictEqual(viaSqlite.records, viaMemory.records)
        assert.deepStrictEqual(viaSqlite.mailBodies, viaMemory.mailBodies)
        for (const loaded of [viaSqlite, viaMemory]) {
          assert.deepStrictEqual(loaded.seqs, [...loaded.seqs].sort((a, b) => a - b), "mail comes back in acceptance order")
        }
        assert.deepStrictEqual(viaSqlite.edges, viaMemory.edges)
      }
    }))

  it.effect("a record rewritten in a later commit loads as its last state, once; pruning drops all its blocks, oldest first", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const sql = yield* SqlClient.SqlClient
      const empty = { mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] }
      yield* store.commit({ ...empty, records: [recordOf("k", 40, true)] })
      yield* store.commit({ ...empty, records: [recordOf("other", 45, true)] })
      yield* store.commit({ ...empty, records: [recordOf("k", 40, false)] })
      const loaded = yield* store.load(0)
      assert.deepStrictEqual(loaded.records, [recordOf("k", 40, false), recordOf("other", 45, true)])
      yield* store.commit({ ...empty, records: [], prune: { recordsBefore: 41, edgesUntil: 0 } })
      // k's first block goes; its rewrite stays while the block before it ("other") is in the window.
      assert.deepStrictEqual((yield* store.load(41)).records, [recordOf("other", 45, true)])
      const rows = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM replay_blocks`
      assert.strictEqual(rows[0]?.n, 2)
      yield* store.commit({ ...empty, records: [], prune: { recordsBefore: 46, edgesUntil: 0 } })
      const after = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM replay_blocks`
      assert.strictEqual(after[0]?.n, 0, "both blocks of the pruned record are gone")
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("a rewrite later in the same commit wins too, and a block outlives the prune while its newest record is in the window", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const empty = { mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] }
      yield* store.commit({ ...empty, records: [recordOf("old", 30, true), recordOf("k", 40, true), recordOf("k", 40, false)] })
      yield* store.commit({ ...empty, records: [recordOf("other", 20, true)] })
      yield* store.commit({ ...empty, records: [], prune: { recordsBefore: 35, edgesUntil: 0 } })
      // "old" (30) is past the cutoff but shares a block with "k" (40), and "other" (20) comes after that
      // block: both stored still, and not loaded from 35.
      assert.deepStrictEqual((yield* store.load(0)).records.map((r) => r.key), ["other", "old", "k"])
      assert.deepStrictEqual((yield* store.load(35)).records, [recordOf("k", 40, false)])
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("the prune never keeps a key's earlier write and drops its later one: a load from any time gets only last writes", () =>
    Effect.gen(function*() {
      const drafts = fc.sample(fc.array(draftArb, { minLength: 1, maxLength: 10 }), { numRuns: 300, seed: 11 })
      for (const draft of drafts) {
        const run = asCommits(draft)
        const last = new Map<string, StoredRecord>()
        for (const batch of run) for (const record of batch.records) last.set(record.key, record)
        const loaded = yield* Effect.gen(function*() {
          const sqlite = yield* MailStore
          for (const batch of run) yield* sqlite.commit(batch)
          // From 0: as a broker whose wall clock was set back between a prune and its restart would.
          return (yield* sqlite.load(0)).records
        }).pipe(Effect.provide(sqliteStore))
        for (const record of loaded) assert.deepStrictEqual(record, last.get(record.key), `the last write of ${record.key}`)
      }
    }))

  it.effect("a block of rewrites older than the block before it is kept while that block is", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const sql = yield* SqlClient.SqlClient
      const empty = { mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] }
      yield* store.commit({ ...empty, records: [recordOf("k", 5, true), recordOf("young", 50, true)] })
      // k rewritten keeps its first time: this block's newest record (5) is older than the first block's (50).
      yield* store.commit({ ...empty, records: [recordOf("k", 5, false)] })
      yield* store.commit({ ...empty, records: [recordOf("later", 70, true)] })
      yield* store.commit({ ...empty, records: [], prune: { recordsBefore: 10, edgesUntil: 0 } })
      const rows = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM replay_blocks`
      assert.strictEqual(rows[0]?.n, 3, "nothing goes while the first block is in the window")
      assert.deepStrictEqual((yield* store.load(0)).records, [recordOf("k", 5, false), recordOf("young", 50, true), recordOf("later", 70, true)])
      yield* store.commit({ ...empty, records: [], prune: { recordsBefore: 60, edgesUntil: 0 } })
      assert.deepStrictEqual((yield* store.load(0)).records, [recordOf("later", 70, true)], "then both go, with the first")
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("records whose strings hold any text (NUL, surrogate pairs, lone surrogates, a key of another shape) load back exactly", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const odd = (key: string, sender: string, targetId: string): StoredRecord => ({
        ...recordOf(key, 7, false),
        sender,
        fingerprint: { ...recordOf(key, 7, false).fingerprint, targetId, replyTo: "\ud800", retryOf: "é\u0000" }
      })
      const records = [
        odd("scope\u0000a\u0001\ud83d\ude00", "scope\u0000a", "\udfff"),
        odd("no separator", "scope\u0000b", "x"),
        odd("scope\u0000c\u0001", "scope\u0000c", "")
      ]
      yield* store.commit({ records, mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] })
      const loaded = (yield* store.load(0)).records
      assert.deepStrictEqual([...loaded].sort((a, b) => a.key.localeCompare(b.key)), [...records].sort((a, b) => a.key.localeCompare(b.key)))
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("commits larger than one insert statement (ROWS_PER_INSERT) load back as the memory store's, last rewrite winning", () =>
    Effect.gen(function*() {
      const keys = Array.from({ length: 2 * ROWS_PER_INSERT + 5 }, (_, i) => `key${i}`)
      const first: MailCommit = {
        records: keys.map((k, i) => recordOf(k, i, true)),
        mailPuts: keys.slice(0, ROWS_PER_INSERT + 3).map((k, i) => mailOf(k, i + 1, `text ${i}`)),
        mailDeletes: [],
        edgePuts: [],
        edgeDeletes: []
      }
      // The same keys again, in another order, rewritten as failures: each key's last row must win.
      const second: MailCommit = { ...first, records: [...keys].reverse().map((k, i) => recordOf(k, keys.indexOf(k), i % 2 === 0)), mailPuts: [], mailDeletes: [2, 3] }
      const memory = makeMemory(makeMemoryMailState())
      for (const batch of [first, second]) yield* memory.commit(batch)
      const sqlite = yield* MailStore
      for (const batch of [first, second]) yield* sqlite.commit(batch)
      const [viaSqlite, viaMemory] = [yield* loadAll(sqlite), yield* loadAll(memory)]
      assert.strictEqual(viaSqlite.records.length, keys.length)
      assert.deepStrictEqual(viaSqlite.records, viaMemory.records)
      assert.deepStrictEqual(viaSqlite.mailBodies, viaMemory.mailBodies)
      assert.deepStrictEqual(viaSqlite.seqs, viaMemory.seqs)
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("migration 0005 moves stored replay records into the log, and they load back unchanged", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* mail0001
      const before = [recordOf("late", 30, true), recordOf("early", 10, false)]
      for (const r of before) {
        yield* sql`INSERT INTO replay_records (record_key, sender_key, fingerprint, outcome, recorded_at)
          VALUES (${r.key}, ${r.sender}, ${encodeFingerprint(r.fingerprint)}, ${encodeOutcome(r.outcome)}, ${r.at})`
      }
      yield* replayLog0005
      const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
      assert.notInclude(tables.map((t) => t.name), "replay_records")
      yield* mailBySeq0006
      yield* replayBlocks0007
      yield* owedNotices0008 // the store loads owed notices too
      yield* withdrawnAsks0009 // and withdrawn asks
      yield* stateEpoch0010 // and the state epoch
      yield* silencedAsks0012 // and the silenced asks
      yield* stampHigh0013 // and the highest stamp
      const store = yield* makeSqlite
      assert.deepStrictEqual((yield* store.load(0)).records, [recordOf("early", 10, false), recordOf("late", 30, true)])
    }).pipe(Effect.provide(bareSqlite)))

  it.effect("migration 0006 keys stored mail by seq, keeps its order, and the store deletes it by seq", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* mail0001
      yield* replayLog0005
      // The old table, keyed by record key, with gaps in its seqs.
      for (const m of [mailOf("zulu", 7, "second"), mailOf("alpha", 12, "third"), mailOf("mike", 3, "first")]) {
        yield* sql`INSERT INTO mail (record_key, seq, body) VALUES (${m.mail.recordKey}, ${m.seq}, ${encodeMail(m.mail)})`
      }
      yield* mailBySeq0006
      yield* replayBlocks0007
      const columns = yield* sql<{ name: string; pk: number }>`SELECT name, pk FROM pragma_table_info('mail')`
      assert.deepStrictEqual(columns.filter((c) => c.pk > 0).map((c) => c.name), ["seq"])
      const indexes = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'mail'`
      assert.deepStrictEqual(indexes, [], "no second b-tree beside the rows")
      yield* owedNotices0008 // the store loads owed notices too
      yield* withdrawnAsks0009 // and withdrawn asks
      yield* stateEpoch0010 // and the state epoch
      yield* silencedAsks0012 // and the silenced asks
      yield* stampHigh0013 // and the highest stamp
      const store = yield* makeSqlite
      const loaded = yield* store.load(0)
      assert.deepStrictEqual(loaded.mail.map((m) => [m.seq, m.mail.recordKey]), [[1, "mike"], [2, "zulu"], [3, "alpha"]])
      assert.strictEqual(loaded.nextSeq, 4)
      yield* store.commit({ records: [], mailPuts: [], mailDeletes: [2], edgePuts: [], edgeDeletes: [] })
      assert.deepStrictEqual((yield* store.load(0)).mail.map((m) => m.mail.recordKey), ["mike", "alpha"])
    }).pipe(Effect.provide(bareSqlite)))

  it.effect("mail round-trips exactly, and comes back in acceptance (seq) order", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const second = mailOf("b", 2, "second")
      const first = mailOf("a", 1, "first")
      const tenth = mailOf("c", 10, "tenth")
      yield* store.commit({ records: [], mailPuts: [second, first, tenth], mailDeletes: [], edgePuts: [], edgeDeletes: [] })
      const loaded = yield* store.load(0)
      assert.deepStrictEqual(loaded.mail, [first, second, tenth])
      assert.strictEqual(loaded.nextSeq, 11)
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("migration 0007 copies the log into blocks in its order, so each key's last row wins; then drops the log", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* mail0001
      yield* replayLog0005
      yield* mailBySeq0006
      // 1,003 rows: a full block of 1,000 and a second one; "k" written first and rewritten in the last row.
      const rows = [
        recordOf("k", 50, true),
        ...Array.from({ length: 1_001 }, (_, i) => recordOf(`r${i}`, 60 + i, i % 3 === 0)),
        recordOf("k", 50, false)
      ]
      for (const r of rows) {
        yield* sql`INSERT INTO replay_log (record_key, sender_key, fingerprint, outcome, recorded_at)
          VALUES (${r.key}, ${r.sender}, ${encodeFingerprint(r.fingerprint)}, ${encodeOutcome(r.outcome)}, ${r.at})`
      }
      yield* replayBlocks0007
      const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
      assert.notInclude(tables.map((t) => t.name), "replay_log")
      const blocks = yield* sql<{ newest_at: number }>`SELECT newest_at FROM replay_blocks ORDER BY n`
      assert.deepStrictEqual(blocks.map((b) => b.newest_at), [60 + 998, 60 + 1_000])
      yield* owedNotices0008 // the store loads owed notices too
      yield* withdrawnAsks0009 // and withdrawn asks
      yield* stateEpoch0010 // and the state epoch
      yield* silencedAsks0012 // and the silenced asks
      yield* stampHigh0013 // and the highest stamp
      const store = yield* makeSqlite
      const loaded = (yield* store.load(0)).records
      assert.strictEqual(loaded.length, 1_002)
      assert.deepStrictEqual(loaded[0], recordOf("k", 50, false))
      assert.deepStrictEqual(loaded.slice(1), rows.slice(1, -1))
    }).pipe(Effect.provide(bareSqlite)))

  it.effect("a log row that does not decode fails migration 0007, naming it, and the log is kept", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* mail0001
      yield* replayLog0005
      yield* mailBySeq0006
      yield* sql`INSERT INTO replay_log (record_key, sender_key, fingerprint, outcome, recorded_at)
        VALUES ('mangled', 'scope', '{"targetId":', '{}', 1)`
      const error = yield* Effect.flip(sql.withTransaction(replayBlocks0007))
      assert.include(String(error), "mangled")
      const tables = yield* sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table'`
      assert.include(tables.map((t) => t.name), "replay_log")
      assert.notInclude(tables.map((t) => t.name), "replay_blocks")
    }).pipe(Effect.provide(bareSqlite)))

  it.effect("a replay block that does not decode fails the load, naming the block (the broker's start error names the file)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "intercom.db")
      yield* Effect.gen(function*() {
        const store = yield* MailStore
        const sql = yield* SqlClient.SqlClient
        yield* store.commit({ records: [recordOf("kept", 5, true)], mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] })
        // A block cut short, as a torn write would leave it: never read as "no records".
        yield* sql`UPDATE replay_blocks SET body = substr(body, 1, length(body) - 3)`
        const error = yield* Effect.flip(store.load(0))
        assert.strictEqual(error.operation, "load")
        assert.notInclude(error.message, file, "named once, by runBroker's error (lifecycle.test.ts)")
        assert.include(error.message, "replay block \"1\"")
        assert.include(error.message, "cannot be read")
      }).pipe(Effect.provide(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))))
    }))

  it.effect("a stored row that does not decode fails the load, naming it; nothing is skipped", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const sql = yield* SqlClient.SqlClient
      yield* store.commit({ records: [], mailPuts: [mailOf("good", 1, "ok")], mailDeletes: [], edgePuts: [], edgeDeletes: [] })
      yield* sql`INSERT INTO mail (seq, record_key, body) VALUES (2, 'broken', '{"recordKey":"broken"')`
      const error = yield* Effect.flip(store.load(0))
      assert.strictEqual(error.operation, "load")
      assert.include(error.message, "broken")
      assert.include(error.message, "cannot be read")
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("a commit the disk cannot take fails with the disk-full text and stores nothing of its batch", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = path.join(dir, "intercom.db")
      yield* Effect.gen(function*() {
        const store = yield* MailStore
        const sql = yield* SqlClient.SqlClient
        yield* store.commit({ records: [recordOf("kept", 5, true)], mailPuts: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] })
        const [pages] = yield* sql<{ page_count: number }>`PRAGMA page_count`
        yield* sql.unsafe(`PRAGMA max_page_count = ${pages?.page_count ?? 0}`)
        const error = yield* Effect.flip(store.commit({
          records: [recordOf("lost", 6, true)],
          mailPuts: [mailOf("big", 1, "x".repeat(256 * 1024))],
          mailDeletes: [],
          edgePuts: [],
          edgeDeletes: []
        }))
        assert.strictEqual(error.operation, "commit")
        assert.include(error.message, "disk is full")
        const loaded = yield* store.load(0)
        assert.deepStrictEqual(loaded.records.map((r) => r.key), ["kept"])
        assert.deepStrictEqual(loaded.mail, [])
      }).pipe(Effect.provide(Layer.provideMerge(MailStore.sqlite, Database.layer({ file }))))
    }))
})

describe("MailStore given-back rows", () => {
  it.effect("a row written again (mailUpdates) loads back in its place with the new date, marked given back, from SQLite and memory; a deleted one is not written again", () =>
    Effect.gen(function*() {
      const empty = { records: [], mailDeletes: [], edgePuts: [], edgeDeletes: [] }
      const first = mailOf("k1", 1, "one")
      const second = mailOf("k2", 2, "two")
      const gone = mailOf("k3", 3, "three")
      const commits = [
        { ...empty, mailPuts: [first, second, gone] },
        { ...empty, mailPuts: [], mailDeletes: [3] },
        {
          ...empty,
          mailPuts: [],
          mailUpdates: [
            { seq: 1, mail: { ...first.mail, queuedAt: 500 }, givenBack: 4 },
            { seq: 3, mail: { ...gone.mail, queuedAt: 500 }, givenBack: 4 }
          ]
        }
      ]
      const loadMail = (store: MailStoreService) =>
        Effect.map(store.load(0), (r) => r.mail.map((m) => [m.seq, m.mail.message.content.text, m.mail.queuedAt, m.givenBack]))
      const viaSqlite = yield* Effect.gen(function*() {
        const sqlite = yield* MailStore
        for (const batch of commits) yield* sqlite.commit(batch)
        return yield* loadMail(sqlite)
      }).pipe(Effect.provide(sqliteStore))
      const memory = makeMemory(makeMemoryMailState())
      for (const batch of commits) yield* memory.commit(batch)
      const expected = [[1, "one", 500, 4], [2, "two", second.mail.queuedAt, undefined]]
      assert.deepStrictEqual(viaSqlite, expected)
      assert.deepStrictEqual(yield* loadMail(memory), expected)
    }))

  it.effect("a batch that deletes a seq and puts a row under it (an ask asked again, StoreJournal.putAgain) keeps the row, from SQLite and memory", () =>
    Effect.gen(function*() {
      const empty = { records: [], mailDeletes: [], edgePuts: [], edgeDeletes: [], mailPuts: [] }
      const asked = mailOf("k1", 1, "one")
      const commits = [
        { ...empty, mailPuts: [asked, mailOf("k2", 2, "two")] },
        { ...empty, mailDeletes: [1], mailPuts: [{ seq: 1, mail: { ...asked.mail, queuedAt: 500 }, givenBack: 3 }] }
      ]
      const loadMail = (store: MailStoreService) =>
        Effect.map(store.load(0), (r) => r.mail.map((m) => [m.seq, m.mail.message.content.text, m.mail.queuedAt, m.givenBack]))
      const viaSqlite = yield* Effect.gen(function*() {
        const sqlite = yield* MailStore
        for (const batch of commits) yield* sqlite.commit(batch)
        return yield* loadMail(sqlite)
      }).pipe(Effect.provide(sqliteStore))
      const memory = makeMemory(makeMemoryMailState())
      for (const batch of commits) yield* memory.commit(batch)
      const expected = [[1, "one", 500, 3], [2, "two", 12, undefined]]
      assert.deepStrictEqual(viaSqlite, expected)
      assert.deepStrictEqual(yield* loadMail(memory), expected)
    }))
})
