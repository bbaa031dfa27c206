/** From bus messages to ordering entries: the source of a bridged child (C-ORD-24) and the progress thread (C-DLV-17). */
import { assert, describe, it } from "@effect/vitest"
import type { InboundMessage } from "../../src/client/events.ts"
import type { Inbound } from "../../src/session/Host.ts"
import { formatSupervisorMessage } from "../../src/session/supervisorMessages.ts"
import { inboundEntry, inboundMessageOf, progressThreadOf } from "../../src/workflow/InboundAdapter.ts"
import { CHILD, inbound, PEER } from "./support.ts"

const child = { runId: "run-7", agent: "worker", index: 2, sessionName: CHILD.name }

const fromChild = (
  id: string,
  reason: "progress_update" | "need_decision",
  channel: "supervisor" | undefined
): InboundMessage => ({
  ...inbound(id, { timestamp: 41, expectsReply: reason === "need_decision" }, CHILD),
  ...(channel === undefined ? {} : { channel }),
  message: {
    id,
    timestamp: 41,
    content: { text: formatSupervisorMessage(reason, child, "Half done.") },
    ...(reason === "need_decision" ? { expectsReply: true } : {})
  }
})

describe("inboundEntry", () => {
  it("C-ORD-24: a child's supervisor-channel message carries its source, read from the existing message fields", () => {
    const entry = inboundEntry(fromChild("m1", "progress_update", "supervisor"))
    assert.deepStrictEqual(entry.source, { subagentRunId: "run-7", subagentAgent: "worker", subagentIndex: 2 })
    assert.deepStrictEqual(
      [entry.messageId, entry.senderId, entry.senderName, entry.timestamp, entry.expectsReply],
      ["m1", CHILD.id, CHILD.name, 41, false]
    )
    // C-DLV-17: a progress update is on the child's generated thread.
    assert.isTrue(entry.progress)
    assert.strictEqual(entry.threadId, progressThreadOf({ subagentRunId: "run-7", subagentAgent: "worker", subagentIndex: 2 }))
  })

  it("a child's question keeps its source and is an ask, not progress", () => {
    const entry = inboundEntry(fromChild("q1", "need_decision", "supervisor"))
    assert.strictEqual(entry.source?.subagentRunId, "run-7")
    assert.isTrue(entry.expectsReply)
    assert.isUndefined(entry.progress)
    assert.isUndefined(entry.threadId)
  })

  it("the same text without the broker's supervisor channel names no source: a peer cannot claim to be a run's child", () => {
    const entry = inboundEntry(fromChild("m2", "progress_update", undefined))
    assert.isUndefined(entry.source)
    assert.isUndefined(entry.progress)
  })

  it("a bridged child's plain send gets the source the engine names; other senders get none", () => {
    const resolveSource = (from: { readonly id: string }) => from.id === CHILD.id ? { subagentRunId: "run-7" } : undefined
    assert.deepStrictEqual(inboundEntry(inbound("m3", {}, CHILD), { resolveSource }).source, { subagentRunId: "run-7" })
    assert.isUndefined(inboundEntry(inbound("m4", {}, PEER), { resolveSource }).source)
  })

  it("a sender's delivery-v1 thread is the entry's thread; replyTo is kept", () => {
    const entry = inboundEntry({
      ...inbound("m5", { replyTo: "q0" }, PEER),
      delivery: { delivery: "queue", queueMode: "replace", threadId: "t-1" }
    })
    assert.deepStrictEqual([entry.threadId, entry.replyTo], ["t-1", "q0"])
  })
})

describe("inboundMessageOf", () => {
  it("keeps the sender, the message, the supervisor channel and a non-default delivery mode of the session's Inbound", () => {
    const message = fromChild("m6", "progress_update", "supervisor")
    const handed: Inbound = {
      intent: "steer",
      from: message.from,
      message: message.message,
      text: "rendered",
      expectsReply: false,
      delivery: "queue",
      channel: "supervisor"
    }
    const back = inboundMessageOf(handed)
    assert.deepStrictEqual(back, { from: message.from, message: message.message, channel: "supervisor", delivery: { delivery: "queue" } })
    assert.strictEqual(inboundEntry(back).source?.subagentAgent, "worker")
    assert.deepStrictEqual(inboundMessageOf({ ...handed, delivery: "steer", channel: undefined }), { from: message.from, message: message.message })
  })
})
