/**
 * A message read under a (sender, id) pair the client still remembers is dropped as a copy, whatever its
 * content: the pair is all the client knows of a message. Its own `timestamp` does not tell a reuse from a copy
 * for sure (a memory-mode broker restarted stamps a durable question's notice anew: RecentMessages' header), so it
 * changes nothing passed on; but a drop whose timestamp differs from the one passed on — most likely a new message
 * under a reused id, lost — is counted (`status.reusedIdDrops`) and logged once per pair, naming the sender and the
 * id; a copy with the same timestamp is neither. The client's part against a fake broker that writes the frames it
 * is told to ahead of each `list` answer (as test/client/controlReadMark.test.ts); RecentMessages' part directly.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import type { ConfirmBound } from "../../src/client/ConfirmationPolicy.ts"
import { RecentMessages } from "../../src/client/RecentMessages.ts"
import { type ScriptFrame, scriptedListClient } from "./support.ts"

const SENDER = { id: "eeeeeeee-3333-4000-8000-00000000000e", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

const message = (id: string, timestamp: number, text: string): ScriptFrame => ({
  type: "message",
  from: SENDER,
  message: { id, timestamp, content: { text } }
})

/** Records the warnings logged by every fiber of the test (the client's reader inherits the test's logger). */
const capturingWarnings = (into: Array<string>) =>
  Logger.layer([
    Logger.make(({ logLevel, message: logged }) => {
      if (logLevel !== "Warn") return
      const parts: ReadonlyArray<unknown> = Array.isArray(logged) ? logged : [logged]
      into.push(parts.map(String).join(" "))
    })
  ])

const all = (): ConfirmBound => "all"

describe("a message dropped under a remembered (sender, id) pair", () => {
  it("is counted only when its timestamp differs from the one passed on, and told once per pair", () => {
    const recent = new RecentMessages()
    assert.strictEqual(recent.firstTime("alice", "m1", all, false, 1, 100), "new")
    assert.isFalse(recent.firstTime("alice", "m1", all, false, 2, 100), "a copy passed again")
    assert.strictEqual(recent.reusedDrops, 0, "a copy (same timestamp) was counted as a reused id")
    assert.isUndefined(recent.takeReused())
    assert.isFalse(recent.firstTime("alice", "m1", all, false, 3, 200), "delivery changed: the reuse passed")
    assert.strictEqual(recent.reusedDrops, 1)
    assert.deepStrictEqual(recent.takeReused(), [{ senderId: "alice", messageId: "m1", passed: 100, dropped: 200 }])
    assert.isFalse(recent.firstTime("alice", "m1", all, false, 4, 300))
    assert.isFalse(recent.firstTime("alice", "m1", all, false, 5, 100), "a copy of the first passed")
    assert.strictEqual(recent.reusedDrops, 2, "the second reuse was not counted, or the copy was")
    assert.isUndefined(recent.takeReused(), "a pair told a second time")
    // Another sender's pair under the same id is its own.
    assert.strictEqual(recent.firstTime("carol", "m1", all, false, 6, 100), "new")
    assert.isFalse(recent.firstTime("carol", "m1", all, false, 7, 150))
    assert.deepStrictEqual(recent.takeReused(), [{ senderId: "carol", messageId: "m1", passed: 100, dropped: 150 }])
    assert.strictEqual(recent.reusedDrops, 3)
  })

  it.effect("reaches messages never, counts in status.reusedIdDrops, and is logged once naming its sender and id", () => {
    const warnings: Array<string> = []
    return Effect.gen(function*() {
      const { client, listAfter, messages } = yield* scriptedListClient
      yield* listAfter([message("m1", 1_000, "first task")])
      assert.strictEqual((yield* messages.next()).message.content.text, "first task")
      // A copy of it (the broker's redelivery carries the sender's timestamp): dropped, not counted.
      yield* listAfter([message("m1", 1_000, "first task")])
      assert.strictEqual((yield* client.status).reusedIdDrops, 0, "a copy was counted as a reused id")
      // Two new messages under the reused id: dropped as before, each counted, the pair told once.
      yield* listAfter([message("m1", 2_000, "second task, id reused"), message("m1", 3_000, "third task, id reused")])
      // A second round trip: the reader routed the batch above, and logged what it found, before reading this one.
      yield* listAfter([message("m2", 4_000, "marker")])
      assert.strictEqual((yield* messages.next()).message.id, "m2", "a message under the reused id reached messages")
      assert.strictEqual((yield* client.status).reusedIdDrops, 2)
      const told = warnings.filter((line) => line.includes("reused id"))
      assert.lengthOf(told, 1, `told ${told.length} times: ${told.join(" | ")}`)
      assert.include(told[0], SENDER.id)
      assert.include(told[0], `"m1"`)
      assert.include(told[0], "unique per sender")
    }).pipe(Effect.provide(capturingWarnings(warnings)))
  })
})
