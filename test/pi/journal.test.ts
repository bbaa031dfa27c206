/**
 * The pi inbound journal's checkpoint entries (C-DLV-14): what a reload or a
 * resumed session restores is what was checkpointed, including the sender's
 * delivery mode, so a restored `passive` message still starts no turn.
 */
import { assert, describe, it } from "vitest"
import { checkpointEntry, undeliveredIn } from "../../src/pi/journal.ts"
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
})
