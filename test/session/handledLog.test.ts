/**
 * The handled log (HandledLog.ts): the messages a host without a history of
 * its own took, in a file, so a new process of its session does not hand
 * them over again (known issue 6). The file's format and bounds, and a
 * session over a host with a log: the broker's copy of a logged message is
 * dropped, a new one is shown and logged.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Queue } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import * as HandledLog from "../../src/session/HandledLog.ts"
import { Host, type HostService } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, messageFor, send, tempDir } from "../support/broker.ts"
import { memoryNetwork, settle } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions } from "../client/support.ts"
import { makeRecordingHost } from "./support.ts"

const A_ID = "aaaaaaaa-7777-4000-8000-00000000000a"
const B_ID = "bbbbbbbb-7777-4000-8000-00000000000b"

/** A fresh file path in a directory that does not exist yet, under a temp dir removed with the test's Scope. */
const freshFile = Effect.map(tempDir("ei-handled-"), (dir) => path.join(dir, "watch", "bob.handled.jsonl"))

const modeOf = (file: string): number => fs.statSync(file).mode & 0o777

describe("HandledLog: the file", () => {
  it.effect("what one log records, the next one over the file lists, oldest first, with its times; file 0600, directory 0700", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      assert.deepStrictEqual(yield* HandledLog.make(file).handled, [], "no file yet: nothing")
      const first = HandledLog.make(file)
      yield* first.record("alice", "m-1", 10)
      yield* first.record("carol", "m-2", 20)
      assert.deepStrictEqual(yield* HandledLog.make(file).handled, [
        { fromId: "alice", messageId: "m-1", receivedAt: 10 },
        { fromId: "carol", messageId: "m-2", receivedAt: 20 }
      ])
      assert.strictEqual(modeOf(file), 0o600)
      assert.strictEqual(modeOf(path.dirname(file)), 0o700)
    }))

  it.effect("a torn last line and a line that is no entry are skipped; the next log's first record is not joined to the torn line", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      yield* HandledLog.make(file).record("alice", "m-1", 10)
      fs.appendFileSync(file, "[1,2]\n{\"f\":\"alice\"}\n{\"f\":\"alice\",\"m\":\"m-2\"}\n{\"f\":\"al")
      assert.deepStrictEqual(yield* HandledLog.make(file).handled, [
        { fromId: "alice", messageId: "m-1", receivedAt: 10 },
        { fromId: "alice", messageId: "m-2" }
      ])
      const next = HandledLog.make(file)
      yield* next.record("alice", "m-3", 30)
      yield* next.record("alice", "m-4", 40)
      assert.deepStrictEqual((yield* HandledLog.make(file).handled).map((entry) => entry.messageId), ["m-1", "m-2", "m-3", "m-4"])
    }))

  it.effect("a directory that exists with a looser mode is made 0700 by a log's first record", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      fs.mkdirSync(path.dirname(file), { mode: 0o755 })
      fs.chmodSync(path.dirname(file), 0o755)
      yield* HandledLog.make(file).record("alice", "m-1", 10)
      assert.strictEqual(modeOf(path.dirname(file)), 0o700)
    }))

  it.effect("kept to the newest `capacity`: at twice that the file is rewritten with the newest", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      const log = HandledLog.make(file, { capacity: 3 })
      for (let i = 1; i <= 5; i++) yield* log.record("alice", `m-${i}`, i)
      assert.strictEqual(fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").length, 5)
      yield* log.record("alice", "m-6", 6)
      const lines = fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "")
      assert.deepStrictEqual(lines.map((line) => JSON.parse(line).m), ["m-4", "m-5", "m-6"])
      assert.strictEqual(modeOf(file), 0o600)
      // A log that reads a longer file lists only the newest `capacity`.
      for (let i = 7; i <= 8; i++) yield* HandledLog.make(file, { capacity: 10 }).record("alice", `m-${i}`, i)
      assert.deepStrictEqual((yield* HandledLog.make(file, { capacity: 3 }).handled).map((entry) => entry.messageId), ["m-6", "m-7", "m-8"])
    }))

  it.effect("a log that cannot be read is an error naming the file; a record that cannot be written is logged, not fatal", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir("ei-handled-")
      // A directory where the file should be: reading and appending both fail.
      const log = HandledLog.make(dir)
      const read = yield* Effect.exit(log.handled)
      assert.isTrue(Exit.isFailure(read))
      const error = Exit.isFailure(read) ? read.cause.reasons.find((reason) => reason._tag === "Fail") : undefined
      const failure = error?._tag === "Fail" ? error.error : undefined
      assert.strictEqual(failure?._tag, "HandledLogUnreadable")
      assert.include(failure?.message ?? "", dir)
      assert.isTrue(Exit.isSuccess(yield* Effect.exit(log.record("alice", "m-1", 1))))
    }))
})

describe("HandledLog.withHandledLog: the host", () => {
  it.effect("a message is recorded once the host took it; one the host refused is not", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      const recording = yield* makeRecordingHost({ name: "bob", cwd: "/work", model: "m" })
      let refuse = true
      const host = HandledLog.withHandledLog({
        ...recording.service,
        deliver: (inbound) => refuse ? Effect.fail("busy") : recording.service.deliver(inbound)
      }, HandledLog.make(file))
      const inbound = (id: string) => ({
        from: { id: "alice", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
        message: message("hi", { id }),
        text: "hi",
        intent: "trigger" as const,
        expectsReply: false,
        delivery: "steer" as const
      })
      assert.isTrue(Exit.isFailure(yield* Effect.exit(host.deliver(inbound("m-1")))))
      refuse = false
      yield* host.deliver(inbound("m-2"))
      assert.deepStrictEqual((yield* HandledLog.make(file).handled).map((entry) => entry.messageId), ["m-2"])
    }))

  it.effect("a journal the host has keeps its checkpoint and restore; `handled` is the log's", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      yield* HandledLog.make(file).record("alice", "m-1", 1)
      const recording = yield* makeRecordingHost({ name: "bob", cwd: "/work", model: "m" })
      const checkpointed: Array<string> = []
      const host: HostService = HandledLog.withHandledLog({
        ...recording.service,
        journal: {
          checkpoint: (record) => Effect.sync(() => void checkpointed.push(record.message.id)),
          undelivered: Effect.succeed([])
        }
      }, HandledLog.make(file))
      const msg = message("x", { id: "m-2" })
      yield* host.journal?.checkpoint?.({ from: { id: "alice", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }, message: msg, receivedAt: 2 }) ?? Effect.void
      assert.deepStrictEqual(checkpointed, ["m-2"])
      assert.deepStrictEqual((yield* host.journal?.handled ?? Effect.succeed([])).map((entry) => entry.messageId), ["m-1"])
    }))

  it.effect("a restarted process over the same log drops the broker's copy of a message it showed, and logs what it shows next", () =>
    Effect.gen(function*() {
      const file = yield* freshFile
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const alice = yield* world.session({ sessionId: A_ID, name: "alice" })
      // The old process: it read the message (and, as a watch would, logged it once shown) but never confirmed it.
      const before = yield* world.session({ sessionId: B_ID, name: "bob", frame: { features: [RECEIVED_V1] } })
      const first = message("shown by the old process, never confirmed")
      assertDelivered(yield* send(alice.client, "bob", first))
      yield* messageFor(before.client, first.id)
      yield* HandledLog.make(file).record(A_ID, first.id, 0)
      yield* before.client.destroy
      yield* settled([alice.client])

      // The new process: a real client and session over a host with the same log.
      const { client: bob } = yield* makeMemoryClient(memoryClientOptions(world, B_ID, "bob"))
      const recording = yield* makeRecordingHost({ name: "bob", cwd: "/work", model: "m" })
      yield* Layer.build(
        IntercomSession.layer().pipe(
          Layer.provide(Layer.mergeAll(
            Layer.succeed(IntercomClient, bob),
            Host.layer(HandledLog.withHandledLog(recording.service, HandledLog.make(file)))
          ))
        )
      )
      yield* settle(bob.connect)
      const later = message("sent after the restart")
      assertDelivered(yield* send(alice.client, "bob", later))
      yield* settle(bob.list)
      yield* settle(bob.list)
      assert.deepStrictEqual((yield* Queue.clear(recording.inbox)).map((inbound) => inbound.message.id), [later.id])
      assert.deepStrictEqual((yield* HandledLog.make(file).handled).map((entry) => entry.messageId), [first.id, later.id])
    }))
})
