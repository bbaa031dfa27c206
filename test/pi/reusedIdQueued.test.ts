/**
 * Two messages under one (sender, id) in pi's queues at once (a sender reusing an id, P46), through the pi host
 * (`makePiHost` over the typed rig, test/pi/hostRig.ts) and the session's journal keeper wired to it: the older
 * one's control, read after the newer one (`JournalKeeper.withdrawnEarlier`, as InboundControls.ts's control fiber
 * calls it), marks the older one where pi still holds it, and only it — pi's `message_end` of each is told apart by the
 * details object pi was handed it with, whatever order pi drains its queues in (steers before follow-ups).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import { WITHDRAWN_ENTRY } from "../../src/pi/entries.ts"
import type { Inbound } from "../../src/session/Host.ts"
import { makeJournalKeeper } from "../../src/session/InboundJournal.ts"
import type { InboundContext } from "../../src/session/ReplyTracker.ts"
import { renderInbound } from "../../src/session/render.ts"
import { makePiHostRig } from "./hostRig.ts"

const B: SessionInfo = { id: "b0b0b0b0-1111-2222", name: "B", cwd: "/work/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

/** A message `id` of B the client read as number `read`, handed over as `intent`. */
const handed = (id: string, text: string, read: number, intent: Inbound["intent"]): { inbound: Inbound; context: InboundContext } => {
  const message = { id, timestamp: read, content: { text } }
  return {
    inbound: { intent, from: B, message, text: renderInbound(B, message, true), expectsReply: false, delivery: "steer", read },
    context: { from: B, message, receivedAt: 0, read }
  }
}

describe("messages reusing one (sender, id) in pi's queues", () => {
  it.effect("the older one's control read after the newer one marks the older one only, whichever pi drains first", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const journal = rig.host.journal
      assert.isDefined(journal)
      const keeper = makeJournalKeeper(journal)
      // The older one waits as a follow-up, the newer one (read after it) as a steer: pi drains the steer first.
      const older = handed("re-1", "the older message", 1, "followUp")
      const newer = handed("re-1", "the newer message", 3, "steer")
      yield* rig.host.deliver(older.inbound)
      keeper.taken(older.context, true)
      yield* rig.host.deliver(newer.inbound)
      keeper.taken(newer.context, true)
      // The older one's cancel, read at 2: before the newer one (read at 3).
      keeper.withdrawnEarlier(B.id, "re-1", "cancel", 2, undefined)
      const [olderSent, newerSent] = rig.sent
      assert.isDefined(olderSent)
      assert.isDefined(newerSent)
      const newerEnters = rig.queued.entering({ customType: newerSent.customType, details: newerSent.details })
      const olderEnters = rig.queued.entering({ customType: olderSent.customType, details: olderSent.details })
      assert.isUndefined(newerEnters, "the newer message entered marked withdrawn by the older one's control")
      assert.strictEqual(olderEnters?.details.withdrawn, "cancel", "the older message, withdrawn in pi's queue, entered live")
      assert.include(olderEnters?.content ?? "", "the older message")
      assert.deepStrictEqual(
        rig.entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY),
        [],
        "a withdrawal saved under the key would mark the newer message too"
      )
    }))

  it.effect("the newer one's own control marks the newer one only", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const journal = rig.host.journal
      assert.isDefined(journal)
      const keeper = makeJournalKeeper(journal)
      const older = handed("re-2", "the older message", 1, "steer")
      const newer = handed("re-2", "the newer message", 3, "steer")
      yield* rig.host.deliver(older.inbound)
      keeper.taken(older.context, true)
      yield* rig.host.deliver(newer.inbound)
      keeper.taken(newer.context, true)
      yield* keeper.withdrawn(B.id, "re-2", "supersede", false, undefined)
      const [olderSent, newerSent] = rig.sent
      assert.isDefined(olderSent)
      assert.isDefined(newerSent)
      assert.isUndefined(
        rig.queued.entering({ customType: olderSent.customType, details: olderSent.details }),
        "the older message entered marked withdrawn by the newer one's control"
      )
      assert.strictEqual(
        rig.queued.entering({ customType: newerSent.customType, details: newerSent.details })?.details.withdrawn,
        "supersede"
      )
    }))
})
