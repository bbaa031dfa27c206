/**
 * A passive message handed to pi while its agent streams: pi holds it until the turn ends
 * (`_pendingCustomMessages`) and saves it then with no `message_end` an extension sees, keeping the content array
 * and details object it was handed. Through the pi host (`makePiHost` over the typed rig, test/pi/hostRig.ts, which
 * holds and saves as pi does): a withdrawal while pi holds it rewrites both in place, so pi saves it marked, and
 * is saved, so a restart before the turn ended restores it marked withdrawn; once pi saved it, a withdrawal is
 * not kept — the saved message is left as it is — but saved as told, as for any message the host took (review revbt
 * bt1); the run's settling forgets what pi saved.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { WITHDRAWN_ENTRY } from "../../src/pi/entries.ts"
import { messageDetails } from "../../src/pi/journal.ts"
import { savedDetails } from "../../src/pi/queuedInbound.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { Inbound, JournalRecord } from "../../src/session/Host.ts"
import { renderInbound } from "../../src/session/render.ts"
import { makePiHostRig, type PiHostRig, type RigEntry } from "./hostRig.ts"

const B: SessionInfo = { id: "b0b0b0b0-1111-2222", name: "B", cwd: "/work/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

const passive = (id: string): { inbound: Inbound; record: JournalRecord } => {
  const message = { id, timestamp: 0, content: { text: `body of ${id}` } }
  return {
    inbound: { intent: "passive", from: B, message, text: renderInbound(B, message, true), expectsReply: false, delivery: "passive" },
    record: { from: B, message, receivedAt: 0, delivery: "passive" }
  }
}

/** The intercom messages pi saved, as (id, withdrawn, text). */
const savedMessages = (rig: PiHostRig) =>
  rig.entries.flatMap((entry: RigEntry) => {
    const details = messageDetails(entry)
    if (details === undefined) return []
    const content = Array.isArray(entry.content) ? entry.content : []
    const text = content.map((part: { readonly text?: string }) => part.text ?? "").join("")
    return [{ id: details.messageId, withdrawn: details.withdrawn, intent: details.intent, text }]
  })

const withdrawals = (rig: PiHostRig) => rig.entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY).length

describe("a passive message pi holds while its agent streams", () => {
  it.effect("withdrawn while held: marked in place, so pi saves it marked; the withdrawal is saved, so a restart before the turn ended restores it withdrawn", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const journal = rig.host.journal
      assert.isDefined(journal?.checkpoint)
      assert.isDefined(journal?.undelivered)
      const { inbound, record } = passive("h-1")
      yield* journal.checkpoint(record)
      rig.setPhase("streaming")
      yield* rig.host.deliver(inbound)
      assert.deepStrictEqual(savedMessages(rig), [], "pi held it: nothing saved yet")
      yield* rig.withdrawn(B.id, "h-1", "cancel", false, undefined)
      assert.strictEqual(withdrawals(rig), 1, "the withdrawal of a message pi still held was not saved")
      // pi exits mid-turn: the message was never saved; the next process restores it, marked.
      assert.deepStrictEqual(
        (yield* journal.undelivered).map((restored) => [restored.message.id, restored.withdrawn]),
        [["h-1", "cancel"]],
        "restored unmarked after a mid-turn exit"
      )
      // Or the turn ends: pi saves what it held — the objects it was handed, rewritten in place.
      rig.flush()
      const [saved] = savedMessages(rig)
      assert.deepStrictEqual([saved?.id, saved?.withdrawn, saved?.intent], ["h-1", "cancel", "passive"])
      assert.include(saved?.text ?? "", "Withdrawn: B cancelled this message before it reached you")
      assert.strictEqual(saved?.text, renderInbound(B, inbound.message, false, "cancel"))
    }))

  it.effect("once pi saved it (its turn ended), a withdrawal is not kept — the saved message is left as it is — but saved as told", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      rig.setPhase("streaming")
      yield* rig.host.deliver(passive("h-2").inbound)
      rig.flush()
      rig.setPhase("idle")
      yield* rig.withdrawn(B.id, "h-2", "cancel", false, undefined)
      assert.strictEqual(withdrawals(rig), 1, "the withdrawal of a message the host took is saved as told (revbt bt1)")
      const [saved] = savedMessages(rig)
      assert.deepStrictEqual([saved?.id, saved?.withdrawn], ["h-2", undefined], "the saved message was marked")
      assert.include(saved?.text ?? "", "body of h-2")
    }))

  it.effect("the run's settling forgets the held messages pi saved, and only those", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      rig.setPhase("streaming")
      yield* rig.host.deliver(passive("h-4").inbound)
      rig.flush()
      // Handed while pi still streams after its flush (its agent_settled handlers run): held until its next flush.
      yield* rig.host.deliver(passive("h-5").inbound)
      assert.isTrue(rig.queued.holds(B.id, "h-4"))
      rig.queued.settled(() => savedDetails(rig.entries))
      assert.isFalse(rig.queued.holds(B.id, "h-4"), "a message pi saved is still watched")
      assert.isTrue(rig.queued.holds(B.id, "h-5"), "a message pi still holds is no longer watched")
      yield* rig.withdrawn(B.id, "h-5", "supersede", false, undefined)
      assert.strictEqual(withdrawals(rig), 1)
      rig.flush()
      assert.deepStrictEqual(savedMessages(rig).map((saved) => [saved.id, saved.withdrawn]), [["h-4", undefined], [
        "h-5",
        "supersede"
      ]])
    }))

  it.effect("an earlier message's control (withdrawnEarlier) marks the one pi holds in place and saves nothing", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const earlier = rig.host.journal?.withdrawnEarlier
      assert.isDefined(earlier)
      rig.setPhase("streaming")
      yield* rig.host.deliver({ ...passive("e-1").inbound, read: 1 })
      earlier(B.id, "e-1", "cancel", 1, undefined)
      rig.flush()
      assert.deepStrictEqual(savedMessages(rig).map((saved) => [saved.id, saved.withdrawn]), [["e-1", "cancel"]])
      assert.strictEqual(withdrawals(rig), 0, "saved: the saved withdrawal names the newer message too")
    }))

  it.effect("handed while pi is idle (pi saves it at once), a withdrawal is not kept, but saved as told", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      yield* rig.host.deliver(passive("h-3").inbound)
      yield* rig.withdrawn(B.id, "h-3", "cancel", false, undefined)
      assert.strictEqual(withdrawals(rig), 1, "the withdrawal of a message the host took is saved as told (revbt bt1)")
      assert.deepStrictEqual(savedMessages(rig).map((saved) => [saved.id, saved.withdrawn]), [["h-3", undefined]])
    }))
})
