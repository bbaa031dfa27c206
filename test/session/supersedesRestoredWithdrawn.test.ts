/**
 * A message the host journal restores already withdrawn (the last process read its control, answered it and saved
 * the withdrawal, then ended before confirming; the broker then queues the superseding message alone, still naming
 * it — test/broker/supersede-unconfirmed-return) is left as it is when that superseding message comes: its sender is
 * not answered `superseded` again, the journal not told again, and a cancelled one stays cancelled (review revbp
 * BP1, BP2: `HostHandoff.withdraw`'s `already`); a real control read after the superseding message is not passed on
 * a second time (BP3). Fake client, TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import type { JournalRecord } from "../../src/session/Host.ts"
import { C, drainHandOff, type FakeClient, inboundMessage, restoredSession, settle } from "./support.ts"

const HOUR = 60 * 60 * 1000

const restoredWithdrawn = (withdrawn: "cancel" | "supersede"): JournalRecord => ({
  from: C,
  message: { id: "m2", timestamp: HOUR, brokerReceivedAt: HOUR, content: { text: "old instructions" } },
  receivedAt: HOUR,
  withdrawn
})

const superseding = inboundMessage(C, "m3", "new instructions", { brokerReceivedAt: 2 * HOUR, supersedes: "m2" })

const restart = (record: JournalRecord) => restoredSession([record])

const receiptsOf = (client: FakeClient, messageId: string) =>
  client.posts.flatMap((post) =>
    post._tag === "Receipt" && post.receipt.messageId === messageId ? [post.receipt.status] : []
  )

describe("supersedes naming a message restored already withdrawn", () => {
  it.effect("restored as superseded, then the superseding message comes: not answered or saved again", () =>
    Effect.gen(function*() {
      const { client, host, withdrawals } = yield* restart(restoredWithdrawn("supersede"))
      yield* client.push(superseding)
      yield* settle
      yield* drainHandOff
      const old = yield* Queue.take(host.inbox)
      assert.strictEqual(old.message.id, "m2", "setup: the restored m2 comes first")
      assert.include(old.text, "Withdrawn", "setup: m2 handed over withdrawn")
      assert.deepStrictEqual(
        { superseded: receiptsOf(client, "m2").filter((status) => status === "superseded"), withdrawals },
        { superseded: [], withdrawals: [] },
        "m2's sender was answered superseded a second time / the journal told again of a withdrawal it restored"
      )
    }))

  it.effect("restored as cancelled, then a staged replace naming it comes: still shown cancelled", () =>
    Effect.gen(function*() {
      const { client, host } = yield* restart(restoredWithdrawn("cancel"))
      const cancelledText = yield* Effect.gen(function*() {
        yield* client.push(superseding)
        yield* settle
        yield* drainHandOff
        return (yield* Queue.take(host.inbox)).text
      })
      assert.deepStrictEqual(
        { superseded: receiptsOf(client, "m2").includes("superseded"), relabelled: !cancelledText.includes("cancelled this message") },
        { superseded: false, relabelled: false },
        "a cancelled m2 was answered superseded / relabelled superseded"
      )
    }))
})

describe("the real control read after the superseding message", () => {
  it.effect("a restored m2 withdrawn by m3's supersedes, then m2's control: answered superseded once", () =>
    Effect.gen(function*() {
      const { withdrawn: _saved, ...live } = restoredWithdrawn("supersede")
      const { client, withdrawals } = yield* restart(live)
      yield* client.push(superseding)
      yield* settle
      yield* client.control({
        _tag: "Control",
        from: C,
        control: { messageId: "m2", action: "supersede", timestamp: 2 * HOUR }
      })
      yield* settle
      yield* drainHandOff
      assert.deepStrictEqual(
        { superseded: receiptsOf(client, "m2").filter((status) => status === "superseded"), withdrawals },
        { superseded: ["superseded"], withdrawals: ["m2 supersede"] },
        "m2 answered superseded / saved withdrawn twice: the control after m3 was passed on as new"
      )
    }))
})
