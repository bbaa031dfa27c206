/**
 * The store's failure notices owed to senders (OwedNotices.ts, migration
 * 0008): SQLite and memory keep the same notices through puts and deletes
 * and load them back in the order they were issued, with their age; a
 * database from before 0008 gets the table and keeps its mail; a stored
 * notice that does not decode fails the load, naming it. An ask expiry
 * notice owed to an away asker (`ask-expiry-v1`) is one that decodes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../../src/store/Database.ts"
import { type MailCommit, MailStore, type MailStoreService, makeMemory, makeMemoryMailState, makeSqlite, type StoredNotice } from "../../src/store/MailStore.ts"
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
import { askExpiredFrame, receiptFrame } from "../../src/broker/encode.ts"
import { CorruptRow } from "../../src/store/mailCodec.ts"
import { checkNotice } from "../../src/store/OwedNotices.ts"

const sqliteStore = Layer.provideMerge(MailStore.sqlite, Database.layerMemory)
const bareSqlite = SqliteClient.layer({ filename: ":memory:" })

const noticeOf = (seq: number, sender: string, at: number): StoredNotice => ({
  seq,
  senderKey: `scope\u0000${sender}`,
  frame: `{"type":"message_receipt","from":{"id":"bob"},"receipt":{"messageId":"m${seq}","status":"expired","timestamp":${at},"detail":"evicted"}}`,
  at
})

const commitOf = (change: Partial<MailCommit>): MailCommit => ({
  records: [],
  mailPuts: [],
  mailDeletes: [],
  edgePuts: [],
  edgeDeletes: [],
  ...change
})

/** Puts four notices over two commits, deletes two of them (one put in the same commit), and loads. */
const putAndDelete = (store: MailStoreService) =>
  Effect.gen(function*() {
    yield* store.commit(commitOf({ noticePuts: [noticeOf(2, "alice", 20), noticeOf(1, "alice", 10), noticeOf(3, "carol", 30)] }))
    yield* store.commit(commitOf({ noticePuts: [noticeOf(4, "alice", 40)], noticeDeletes: [1, 4] }))
    return yield* store.load(0)
  })

describe("MailStore: failure notices owed to senders", () => {
  it.effect("SQLite and memory load back the same notices, in the order they were issued, with their age and the next number", () =>
    Effect.gen(function*() {
      const viaSqlite = yield* Effect.andThen(MailStore, putAndDelete).pipe(Effect.provide(sqliteStore))
      const viaMemory = yield* putAndDelete(makeMemory(makeMemoryMailState()))
      for (const loaded of [viaSqlite, viaMemory]) {
        assert.deepStrictEqual(loaded.notices, [noticeOf(2, "alice", 20), noticeOf(3, "carol", 30)])
        assert.strictEqual(loaded.nextNoticeSeq, 4)
      }
    }))

  it.effect("an empty store has no notices and numbers them from 1", () =>
    Effect.gen(function*() {
      const loaded = yield* Effect.andThen(MailStore, (store) => store.load(0)).pipe(Effect.provide(sqliteStore))
      assert.deepStrictEqual([loaded.notices, loaded.nextNoticeSeq], [[], 1])
    }))

  it.effect("migration 0008 adds owed_notices to a database at 0007, keyed by seq, and keeps its mail", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* mail0001
      yield* replayLog0005
      yield* mailBySeq0006
      yield* replayBlocks0007
      yield* sql`INSERT INTO mail (seq, record_key, body) VALUES (1, 'k', 'kept')`
      yield* owedNotices0008
      const columns = yield* sql<{ name: string; pk: number }>`SELECT name, pk FROM pragma_table_info('owed_notices')`
      assert.deepStrictEqual(columns.map((c) => c.name), ["seq", "sender_key", "owed_at", "frame"])
      assert.deepStrictEqual(columns.filter((c) => c.pk > 0).map((c) => c.name), ["seq"])
      const mail = yield* sql<{ body: string }>`SELECT body FROM mail`
      assert.deepStrictEqual(mail.map((row) => row.body), ["kept"])
      yield* sql`DELETE FROM mail`
      yield* withdrawnAsks0009 // the store loads withdrawn asks too
      yield* stateEpoch0010 // and the state epoch
      yield* silencedAsks0012 // and the silenced asks
      yield* stampHigh0013 // and the highest stamp
      const store = yield* makeSqlite
      yield* store.commit(commitOf({ noticePuts: [noticeOf(7, "alice", 70)] }))
      const loaded = yield* store.load(0)
      assert.deepStrictEqual([loaded.notices, loaded.nextNoticeSeq], [[noticeOf(7, "alice", 70)], 8])
    }).pipe(Effect.provide(bareSqlite)))

  it.effect("a stored notice that is not a failure receipt fails the load, naming it; nothing is skipped", () =>
    Effect.gen(function*() {
      const store = yield* MailStore
      const sql = yield* SqlClient.SqlClient
      yield* store.commit(commitOf({ noticePuts: [noticeOf(1, "alice", 10)] }))
      yield* sql`INSERT INTO owed_notices (seq, sender_key, owed_at, frame) VALUES (2, 'scope', 20, '{"type":"message"}')`
      const error = yield* Effect.flip(store.load(0))
      assert.strictEqual(error.operation, "load")
      assert.include(error.message, "owed notice")
      assert.include(error.message, "\"2\"")
    }).pipe(Effect.provide(sqliteStore)))

  it.effect("the memory store fails the load on such a notice too", () =>
    Effect.gen(function*() {
      const disk = makeMemoryMailState()
      disk.notices.set(3, { senderKey: "scope", frame: "not json", at: 1 })
      const error = yield* Effect.flip(makeMemory(disk).load(0))
      assert.include(error.message, "owed notice")
    }))
})

const stored = (frame: string) => ({ seq: 7, senderKey: "scope\u0000asker", frame, at: 1_000 })

describe("stored owed notices: what decodes", () => {
  it("an ask_expired notice owed to an away asker reads back as it was stored", () => {
    const notice = stored(askExpiredFrame("question-1", 1_000))
    assert.strictEqual(checkNotice(notice), notice)
  })

  it("an expired receipt reads back; a frame of another type, or a malformed ask_expired, is a corrupt row", () => {
    const receipt = stored(receiptFrame(`{"id":"b"}`, { messageId: "m", status: "expired", timestamp: 1, detail: "gone" }))
    assert.strictEqual(checkNotice(receipt), receipt)
    assert.instanceOf(checkNotice(stored(`{"type":"delivered","messageId":"m"}`)), CorruptRow)
    assert.instanceOf(checkNotice(stored(`{"type":"ask_expired","messageId":"m"}`)), CorruptRow)
  })
})
