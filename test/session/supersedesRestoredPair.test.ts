/**
 * A superseding message restored from the host journal together with the message it names (the last process
 * checkpointed both, its control fiber not yet having saved the withdrawal when it ended; both confirmed, so the
 * broker gives nothing again): the old message is handed over withdrawn, as the control would have had it (review
 * revbp BP4: InboundRestore.ts's restore looks for a later restored message of the sender that supersedes it). Fake
 * client, TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import type { JournalRecord } from "../../src/session/Host.ts"
import { C, drainHandOff, restoredSession } from "./support.ts"

const HOUR = 60 * 60 * 1000

const records: ReadonlyArray<JournalRecord> = [
  {
    from: C,
    message: { id: "m2", timestamp: HOUR, brokerReceivedAt: HOUR, content: { text: "old instructions" } },
    receivedAt: HOUR
  },
  {
    from: C,
    message: {
      id: "m3",
      timestamp: HOUR + 1000,
      brokerReceivedAt: HOUR + 1000,
      supersedes: "m2",
      content: { text: "new instructions" }
    },
    receivedAt: HOUR + 1000
  }
]

describe("a superseding message restored with the message it names", () => {
  it.effect("the restored m2 is handed over withdrawn", () =>
    Effect.gen(function*() {
      const { host } = yield* restoredSession(records)
      yield* drainHandOff
      const old = yield* Queue.take(host.inbox)
      assert.strictEqual(old.message.id, "m2", "setup: the restored m2 comes first")
      assert.include(old.text, "Withdrawn", "the restored m2 was handed over live though the restored m3 supersedes it")
    }))
})
