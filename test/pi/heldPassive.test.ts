/**
 * A passive message handed to pi while its agent runs: pi holds it until the turn ends
 * (`_pendingCustomMessages`) and saves it then with no `message_end` an extension sees. Through the pi host
 * (`makePiHost` over the typed rig, test/pi/hostRig.ts): a withdrawal while pi holds it is saved, so a restart
 * before the turn ended restores it marked withdrawn; at the turn's end (`flushing`, the extension's `turn_end`)
 * it is saved marked; once pi saved it, a withdrawal is neither kept nor saved.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { WITHDRAWN_ENTRY } from "../../src/pi/entries.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { Inbound, JournalRecord } from "../../src/session/Host.ts"
import { renderInbound } from "../../src/session/render.ts"
import { makePiHostRig } from "./hostRig.ts"

const B: SessionInfo = { id: "b0b0b0b0-1111-2222", name: "B", cwd: "/work/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

const passive = (id: string): { inbound: Inbound; record: JournalRecord } => {
  const message = { id, timestamp: 0, content: { text: `body of ${id}` } }
  return {
    inbound: { intent: "passive", from: B, message, text: renderInbound(B, message, true), expectsReply: false, delivery: "passive" },
    record: { from: B, message, receivedAt: 0, delivery: "passive" }
  }
}

describe("a passive message pi holds while its agent runs", () => {
  it.effect("withdrawn while held: saved, so a restart before the turn ended restores it withdrawn; at the turn's end it enters marked", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const journal = rig.host.journal
      assert.isDefined(journal?.checkpoint)
      assert.isDefined(journal?.undelivered)
      const { inbound, record } = passive("h-1")
      yield* journal.checkpoint(record)
      rig.setBusy(true)
      yield* rig.host.deliver(inbound)
      yield* rig.withdrawn(B.id, "h-1", "cancel", false, undefined)
      assert.deepStrictEqual(
        rig.entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY).length,
        1,
        "the withdrawal of a message pi still held was not saved"
      )
      // pi exits mid-turn: the message was never saved; the next process restores it, marked.
      assert.deepStrictEqual(
        (yield* journal.undelivered).map((restored) => [restored.message.id, restored.withdrawn]),
        [["h-1", "cancel"]],
        "restored unmarked after a mid-turn exit"
      )
      // Or the turn ends: pi saves what it held, marked.
      const [sent] = rig.sent
      assert.isDefined(sent)
      const saved = rig.queued.flushing(sent.details)
      assert.strictEqual(saved?.details.withdrawn, "cancel")
      assert.include(saved?.content ?? "", "Withdrawn: B cancelled this message before it reached you")
      rig.queued.flushed()
    }))

  it.effect("once pi saved it (its turn ended), a withdrawal is neither kept nor saved", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const { inbound } = passive("h-2")
      rig.setBusy(true)
      yield* rig.host.deliver(inbound)
      const [sent] = rig.sent
      assert.isDefined(sent)
      assert.isUndefined(rig.queued.flushing(sent.details), "not withdrawn: saved as it is")
      rig.queued.flushed()
      yield* rig.withdrawn(B.id, "h-2", "cancel", false, undefined)
      assert.deepStrictEqual(rig.entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY), [])
    }))

  it.effect("handed while pi is idle (pi saves it at once), a withdrawal is neither kept nor saved", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      yield* rig.host.deliver(passive("h-3").inbound)
      yield* rig.withdrawn(B.id, "h-3", "cancel", false, undefined)
      assert.deepStrictEqual(rig.entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY), [])
    }))
})
