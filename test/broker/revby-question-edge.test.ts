/**
 * Review revby by2: a durable supervisor question's edge stores its deadline on the broker's clock (Questions.openEdge,
 * docs/store.md), yet Router.restore gives every restored edge `dueAt = deadline - restoredLead`, the correction for a
 * deadline on the stamps' scale. When the stored stamps lead the new clock, a question's edge is restored that much
 * early — or, leading by more than its time left, dropped at startup. Now a question's edge stored without a due
 * time (the row below, as this stop's earlier builds wrote it) is restored due at its deadline.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { recordKeyOf } from "../../src/broker/DeliveryRecords.ts"
import { encodeEdge } from "../../src/store/mailCodec.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { AskEdge } from "../../src/store/records.ts"
import { durableBroker } from "../support/durable.ts"
import { memoryNetwork } from "../support/memory.ts"

const START = 1_000_000_000
const DAY = 24 * 60 * 60 * 1000

const openAfterRestore = (stampsLead: number) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    // A question's edge the last run opened 20 days ago (its clock), 10 days of its 30 left.
    const edge: AskEdge = {
      messageKey: recordKeyOf("child-key", "question-1"),
      messageId: "question-1",
      askerKey: "child-key",
      targetKey: "supervisor-key",
      deadline: START + 10 * DAY,
      openedAt: START - 20 * DAY,
      question: true
    }
    disk.edges.set(edge.messageKey, { deadline: edge.deadline, text: encodeEdge(edge) })
    if (stampsLead > 0) disk.stampHigh = START + stampsLead
    yield* TestClock.setTime(START)
    const broker = yield* durableBroker(world, disk)
    return (yield* broker.core.stats).asks
  })

describe("review revby by2: a durable question's edge restored with 10 days left is open", () => {
  it.effect("no stamp lead: the question's edge is open after the restart", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* openAfterRestore(0), 1)
    }))

  it.effect("the stored stamps 20 days ahead of this clock: the question's edge is open after the restart", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* openAfterRestore(20 * DAY), 1)
    }))
})
