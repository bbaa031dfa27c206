/**
 * review revz Z4 probe: StaleAsks.drop stores the debt of an answered ask
 * no reply marked (review revx X2) only with the reply AnsweredAsks still
 * knows (`answeredReply` → AnsweredAsks.replyOf), and AnsweredAsks forgets
 * an answer after the replay records' retention (an hour,
 * REPLAY_RETENTION_MS). An ask open longer (`askTimeoutMs` may be up to 30
 * days; 3 hours here) whose replier's connection drops more than an hour
 * after the reply, before the deadline, is remembered in memory
 * only: a durable broker stores no debt, so after a restart the reply's
 * loss neither asks again nor tells its asker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { LAZY_FLUSH } from "../src/broker/StoreWriter.ts"
import { RECEIVED_V1 } from "../src/protocol/features.ts"
import { makeMemoryMailState } from "../src/store/MailStore.ts"
import { assertDelivered } from "./support/assertions.ts"
import { message, messageFor, send } from "./support/broker.ts"
import { durableBroker } from "./support/durable.ts"
import { advance, memoryNetwork } from "./support/memory.ts"

const ASK_TIMEOUT_MS = 3 * 3_600_000
const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

describe("revz Z4: a deep answered ask dropped past AnsweredAsks' window, before its deadline", () => {
  it.effect("its debt is stored", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      yield* durableBroker(world, disk, { askTimeout: ASK_TIMEOUT_MS })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", ...CONFIRMING })
      // 64 notes ahead (Asks' ANSWERED_SCAN), read by bob's client and never confirmed: the reply marks no copy.
      for (let i = 0; i < 64; i++) assertDelivered(yield* send(carol.client, "bob", message(`note ${i}`)))
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      yield* messageFor(bob.client, ask.id)
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      const reply = message("yes", { replyTo: ask.id })
      assertDelivered(yield* send(bob.client, "alice", reply), "queued")
      // 61 minutes on (past AnsweredAsks' window, the replay records' retention; well before the 3-hour deadline); a send runs the clean-ups.
      yield* advance("61 minutes")
      assertDelivered(yield* send(carol.client, "alice", message("later")), "queued")
      yield* bob.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "bob")
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.mail.size, 66, "setup: not the 64 notes, the reply and the later note stored")
      assert.strictEqual(disk.silencedAsks.size, 1, "the debt of a deep ask dropped before its deadline was not stored")
    }))
})
