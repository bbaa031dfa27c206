/**
 * The pi inbound journal's checkpoint entries (C-DLV-14): what a reload or a
 * resumed session restores is what was checkpointed, including the sender's
 * delivery mode, so a restored `passive` message still starts no turn; and
 * what the history holds (`handled`), so a resumed process drops the broker's
 * copy of a message its agent already has (known issue 6); and the
 * `intercom_withdrawn` entries, so a restored message its sender withdrew is
 * restored marked withdrawn (P73), while a file without them loads as before.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "vitest"
import {
  checkpointEntry,
  checkpointsDurable,
  handledIn,
  inheritedInstance,
  type MessageDetails,
  undeliveredIn,
  undeliveredInstances,
  withdrawnEntry
} from "../../src/pi/journal.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { JournalRecord } from "../../src/session/Host.ts"
import { message } from "../support/broker.ts"

const from: SessionInfo = { id: "sender-1", cwd: "/tmp", model: "m", pid: 1, startedAt: 1, lastActivity: 1 }

const entryOf = (record: JournalRecord) => ({ type: "custom", customType: "intercom_received", data: checkpointEntry("me", record) })

describe("pi inbound journal", () => {
  it("a checkpoint keeps the sender's delivery mode; one without a mode (steer, or saved before delivery-v1) restores without one", () => {
    const passive: JournalRecord = { from, message: message("fyi", { id: "m-passive" }), receivedAt: 5, delivery: "passive" }
    const queued: JournalRecord = { from, message: message("later", { id: "m-queue" }), receivedAt: 6, delivery: "queue" }
    const plain: JournalRecord = { from, message: message("now", { id: "m-steer" }), receivedAt: 7 }
    const restored = undeliveredIn("me", [passive, queued, plain].map(entryOf))
    assert.deepStrictEqual(restored.map((record) => [record.message.id, record.delivery]), [
      ["m-passive", "passive"],
      ["m-queue", "queue"],
      ["m-steer", undefined]
    ])
  })

  it("undelivered marks a checkpoint an intercom_withdrawn entry of this session names; another session's, or none, leaves it unmarked", () => {
    const cancelled: JournalRecord = { from, message: message("delete it?", { id: "q-1", expectsReply: true }), receivedAt: 1 }
    const replaced: JournalRecord = { from, message: message("draft", { id: "m-2" }), receivedAt: 2 }
    const kept: JournalRecord = { from, message: message("keep", { id: "m-3" }), receivedAt: 3 }
    const mark = (recipient: string, messageId: string, action: "cancel" | "supersede") => ({
      type: "custom",
      customType: "intercom_withdrawn",
      data: withdrawnEntry(recipient, from.id, messageId, action)
    })
    const entries = [
      ...[cancelled, replaced, kept].map(entryOf),
      mark("me", "q-1", "cancel"),
      mark("me", "m-2", "supersede"),
      mark("a-fork", "m-3", "cancel"),
      { type: "custom", customType: "intercom_withdrawn", data: { recipient: "me", messageId: "m-3" } }
    ]
    assert.deepStrictEqual(undeliveredIn("me", entries).map((record) => [record.message.id, record.withdrawn]), [
      ["q-1", "cancel"],
      ["m-2", "supersede"],
      ["m-3", undefined]
    ])
    assert.isFalse("withdrawn" in (undeliveredIn("me", [cancelled].map(entryOf))[0] ?? {}), "a file without the entry")
  })

  it("undelivered applies an intercom_withdrawn entry only to checkpoints saved before it: a later message reusing the (sender, id) is restored live", () => {
    const older: JournalRecord = { from, message: message("old draft", { id: "m-4" }), receivedAt: 1 }
    const reused: JournalRecord = { from, message: message("a new message, the same id", { id: "m-4" }), receivedAt: 2 }
    const mark = { type: "custom", customType: "intercom_withdrawn", data: withdrawnEntry("me", from.id, "m-4", "cancel") }
    // The older message's withdrawal was saved, its checkpoint was not (a failed save): the new one was never withdrawn.
    assert.deepStrictEqual(undeliveredIn("me", [mark, entryOf(reused)]).map((record) => [record.message.content.text, record.withdrawn]), [
      ["a new message, the same id", undefined]
    ])
    // Saved before the withdrawal, the older one is restored withdrawn (each message once: the first checkpoint).
    assert.deepStrictEqual(
      undeliveredIn("me", [entryOf(older), mark, entryOf(reused)]).map((record) => [record.message.content.text, record.withdrawn]),
      [["old draft", "cancel"]]
    )
  })

  it("undelivered, leaving another live generation's: a message any checkpoint of which names an instance in leftTo is left out; one naming none is kept", () => {
    const live = "11111111-1111-4111-8111-111111111111"
    const dead = "22222222-2222-4222-8222-222222222222"
    const saved = (id: string, instance?: string) => ({
      type: "custom",
      customType: "intercom_received",
      data: checkpointEntry("me", { from, message: message(id, { id }), receivedAt: 1 }, instance)
    })
    const entries = [saved("m-live", live), saved("m-dead", dead), saved("m-none"), saved("m-both", dead), saved("m-both", live)]
    const ids = (leftTo?: ReadonlySet<string>) => undeliveredIn("me", entries, leftTo).map((record) => record.message.id)
    assert.deepStrictEqual(ids(), ["m-live", "m-dead", "m-none", "m-both"])
    assert.deepStrictEqual(ids(new Set([live])), ["m-dead", "m-none"])
    assert.deepStrictEqual(ids(new Set([live, dead])), ["m-none"])
    assert.deepStrictEqual(undeliveredInstances("me", entries), [live, dead])
  })

  it("a checkpoint keeps a child's supervisor channel, so the restored message is still its supervisor's", () => {
    const progress: JournalRecord = { from, message: message("50 %", { id: "m-progress" }), receivedAt: 8, channel: "supervisor" }
    const plain: JournalRecord = { from, message: message("hi", { id: "m-plain" }), receivedAt: 9 }
    const restored = undeliveredIn("me", [progress, plain].map(entryOf))
    assert.deepStrictEqual(restored.map((record) => [record.message.id, record.channel]), [
      ["m-progress", "supervisor"],
      ["m-plain", undefined]
    ])
  })

  it("handled: the intercom messages history holds and the replies ask results name, each once, in order, with a receive time when there is one", () => {
    const other: SessionInfo = { ...from, id: "sender-2" }
    const messageEntry = (sender: SessionInfo, messageId: string) => {
      const details: MessageDetails = { messageId, from: sender, expectsReply: false, intent: "steer" }
      return { type: "custom_message", customType: "intercom_message", details }
    }
    const checkpointed: JournalRecord = { from, message: message("one", { id: "m-1" }), receivedAt: 41 }
    const forAnother = { type: "custom", customType: "intercom_received", data: checkpointEntry("someone-else", { ...checkpointed, message: message("two", { id: "m-2" }), receivedAt: 42 }) }
    const entries = [
      entryOf(checkpointed),
      messageEntry(from, "m-1"),
      forAnother,
      messageEntry(from, "m-2"),
      messageEntry(other, "m-1"),
      messageEntry(from, "m-1"),
      entryOf({ from, message: message("three", { id: "m-3" }), receivedAt: 43 }),
      { type: "message" },
      // An ask answered: the tool result names the reply (a failure reply's error result too). A checkpoint of
      // the reply (saved before the ask's waiter took it) is not undelivered: the agent has it as that result.
      entryOf({ from: other, message: message("answer", { id: "r-1" }), receivedAt: 44 }),
      { type: "message", message: { role: "toolResult", toolName: "intercom", timestamp: 50, isError: false, details: { messageId: "q-1", replyId: "r-1", from: "sender-2" } } },
      { type: "message", message: { role: "toolResult", toolName: "contact_supervisor", timestamp: 51, isError: true, details: { error: "ReplyFailed", replyId: "r-2", from: "boss" } } },
      // Results that name no reply, or of another tool, do not count.
      { type: "message", message: { role: "toolResult", toolName: "intercom", timestamp: 52, isError: false, details: { messageId: "m-9", delivered: true } } },
      { type: "message", message: { role: "toolResult", toolName: "bash", timestamp: 53, isError: false, details: { replyId: "r-3", from: "sender-2" } } },
      { type: "message", message: { role: "assistant", timestamp: 54, details: { replyId: "r-4", from: "sender-2" } } }
    ]
    assert.deepStrictEqual(handledIn("me", entries), [
      { fromId: "sender-1", messageId: "m-1", receivedAt: 41 },
      { fromId: "sender-1", messageId: "m-2" },
      { fromId: "sender-2", messageId: "m-1" },
      { fromId: "sender-2", messageId: "r-1", receivedAt: 44 },
      { fromId: "boss", messageId: "r-2", receivedAt: 51 }
    ])
    assert.deepStrictEqual(undeliveredIn("me", entries).map((record) => record.message.id), ["m-3"])
  })

  it("handled marks a message history holds withdrawn when an intercom_withdrawn entry of this session names it after its latest checkpoint (review revbt bt1)", () => {
    const messageEntry = (messageId: string) => {
      const details: MessageDetails = { messageId, from, expectsReply: false, intent: "steer" }
      return { type: "custom_message", customType: "intercom_message", details }
    }
    const mark = (recipient: string, messageId: string, action: "cancel" | "supersede") => ({
      type: "custom",
      customType: "intercom_withdrawn",
      data: withdrawnEntry(recipient, from.id, messageId, action)
    })
    const saved = (id: string, receivedAt: number) => entryOf({ from, message: message(id, { id }), receivedAt })
    const entries = [
      // Taken, in the model's context, then cancelled: the host's journal saved the withdrawal.
      saved("m-1", 1),
      messageEntry("m-1"),
      mark("me", "m-1", "cancel"),
      // Superseded, then a new message reusing its id, saved after the withdrawal: that one is live.
      saved("m-2", 2),
      messageEntry("m-2"),
      mark("me", "m-2", "supersede"),
      saved("m-2", 3),
      messageEntry("m-2"),
      // Another session's withdrawal (a fork's parent) marks nothing of this one.
      saved("m-3", 4),
      messageEntry("m-3"),
      mark("a-fork", "m-3", "cancel")
    ]
    assert.deepStrictEqual(handledIn("me", entries), [
      { fromId: from.id, messageId: "m-1", receivedAt: 1, withdrawn: "cancel" },
      { fromId: from.id, messageId: "m-2", receivedAt: 3 },
      { fromId: from.id, messageId: "m-3", receivedAt: 4 }
    ])
  })

  it("inheritedInstance: the instance the latest checkpoint of this session names; none when it names none, nor from another session's (a fork's copies)", () => {
    const record = (id: string): JournalRecord => ({ from, message: message(id, { id }), receivedAt: 1 })
    const saved = (recipient: string, id: string, instance?: string) => ({
      type: "custom",
      customType: "intercom_received",
      data: checkpointEntry(recipient, record(id), instance)
    })
    const first = "11111111-1111-4111-8111-111111111111"
    const second = "22222222-2222-4222-8222-222222222222"
    assert.strictEqual(inheritedInstance("me", []), undefined)
    assert.strictEqual(inheritedInstance("me", [saved("me", "m-1", first), saved("me", "m-2", second)]), second)
    assert.strictEqual(inheritedInstance("me", [saved("me", "m-1", first), saved("parent", "m-2", second)]), first)
    assert.strictEqual(inheritedInstance("fork", [saved("parent", "m-1", first)]), undefined)
    // A checkpoint saved before instances were kept, or by a generation that held none, names none: not an older one's.
    assert.strictEqual(inheritedInstance("me", [saved("me", "m-1", first), saved("me", "m-2")]), undefined)
    // The instance does not change what is restored.
    assert.deepStrictEqual(undeliveredIn("me", [saved("me", "m-1", first), saved("me", "m-2")]).map((r) => r.message.id), ["m-1", "m-2"])
  })

  it("checkpoints are durable once pi's session file exists, or when there is none (in memory): nothing to wait for", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "eipi-journal-"))
    try {
      const file = path.join(dir, "session.jsonl")
      assert.isFalse(checkpointsDurable(file), "pi has not written it yet")
      fs.writeFileSync(file, "{}\n")
      assert.isTrue(checkpointsDurable(file))
      assert.isTrue(checkpointsDurable(undefined), "--no-session")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
