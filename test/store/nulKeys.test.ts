/**
 * Keys that hold NUL characters (a session key is `<scope>\u0000<id>`, and
 * the default scope is empty) load back whole, also through a `node:sqlite`
 * that cuts TEXT at its first NUL when it reads it, as Node 22's does (a
 * database that Node 22 wrote could not be loaded again: "stored replay block
 * does not decode"). The emulation wraps Node 24's module: writes keep every
 * byte, reads cut every string at its first NUL.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as path from "node:path"
import * as Database from "../../src/store/Database.ts"
import { type MailCommit, MailStore, makeSqlite } from "../../src/store/MailStore.ts"
import { encodeFingerprint, encodeOutcome, type StoredRecord } from "../../src/store/mailCodec.ts"
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
import { cutsAtNul } from "./nulSqlite.ts"
import { tempDir } from "./support.ts"

/** Alice's session key in the default (empty) scope, and her message's record key. */
const ALICE = "\u0000alice"
const BOB = "\u0000bob"
const KEY = `${ALICE}\u0001m1`

const record: StoredRecord = {
  key: KEY,
  sender: ALICE,
  fingerprint: {
    targetId: "bob",
    textLength: 2,
    textHash: 7,
    attachmentsLength: 0,
    attachmentsHash: 0,
    replyTo: undefined,
    expectsReply: true,
    supersedes: undefined,
    retryOf: undefined,
    replyErrorLength: -1,
    replyErrorHash: 0
  },
  outcome: { ok: true, delivery: "queued" },
  at: 10
}

const commit: MailCommit = {
  records: [record],
  mailPuts: [{
    seq: 1,
    mail: {
      recordKey: KEY,
      senderKey: ALICE,
      senderId: "alice",
      senderIdentity: undefined,
      fromJson: JSON.stringify({ id: "alice", name: "alice" }),
      message: { id: "m1", timestamp: 1, content: { text: "hi" }, expectsReply: true },
      brokerReceivedAt: 10,
      spaceKey: "",
      targetKey: BOB,
      targetId: "bob",
      targetIdentity: undefined,
      queuedAt: 10,
      askTimeoutMs: 60_000
    }
  }],
  mailDeletes: [],
  edgePuts: [{ messageKey: KEY, messageId: "m1", askerKey: ALICE, targetKey: BOB, deadline: 70 }],
  edgeDeletes: [],
  noticePuts: [{
    seq: 1,
    senderKey: ALICE,
    frame: `{"type":"message_receipt","from":{"id":"bob"},"receipt":{"messageId":"m0","status":"expired","timestamp":5}}`,
    at: 5
  }]
}

describe("keys with NULs through a node:sqlite that cuts TEXT at NUL (Node 22)", () => {
  it.effect("what was committed loads back whole: replay record, mail, ask edge and owed notice", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "intercom.db")
      const loaded = yield* Effect.gen(function*() {
        const store = yield* MailStore
        yield* store.commit(commit)
        return yield* store.load(0)
      }).pipe(Effect.provide(Layer.provideMerge(MailStore.sqlite, Database.layer({ file, loadSqlite: cutsAtNul }))))
      assert.deepStrictEqual(loaded.records, [record])
      assert.deepStrictEqual(loaded.mail, commit.mailPuts)
      assert.deepStrictEqual(loaded.edges, commit.edgePuts)
      assert.deepStrictEqual(loaded.notices, commit.noticePuts)
    }))

  it.effect("migration 0007 carries the log's keys into blocks whole", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* mail0001
      yield* replayLog0005
      yield* mailBySeq0006
      yield* sql`INSERT INTO replay_log (record_key, sender_key, fingerprint, outcome, recorded_at)
        VALUES (${record.key}, ${record.sender}, ${encodeFingerprint(record.fingerprint)}, ${encodeOutcome(record.outcome)}, ${record.at})`
      yield* replayBlocks0007
      yield* owedNotices0008
      yield* withdrawnAsks0009
      yield* stateEpoch0010 // and the state epoch
      yield* silencedAsks0012 // and the silenced asks
      yield* stampHigh0013 // and the highest stamp
      const store = yield* makeSqlite
      assert.deepStrictEqual((yield* store.load(0)).records, [record])
    }).pipe(Effect.provide(SqliteClient.layer({ filename: ":memory:", loadSqlite: cutsAtNul }))))
})
