/**
 * A passive message handed while pi compacts (review revbw BW1): `isIdle()` is false then (agent-session.js
 * `get isIdle`: not idle while `isCompacting`), but pi holds a message without a turn only while its agent streams
 * (`sendCustomMessage`: `else if (this.isStreaming)` pushes it to `_pendingCustomMessages`; otherwise
 * `_appendCustomMessage` saves it at once). So the model has it before `sendMessage` returns, and a withdrawal after
 * that is not kept (the saved message is left as it is), as for one handed while idle (test/pi/heldPassive.test.ts);
 * its withdrawal is saved all the same (`WITHDRAWN_ENTRY`) as for any message the host took, so that the next process
 * knows it was told (review revbt bt1) — nothing restores a message in history, so the model never sees it withdrawn.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { WITHDRAWN_ENTRY } from "../../src/pi/entries.ts"
import { messageDetails } from "../../src/pi/journal.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { Inbound } from "../../src/session/Host.ts"
import { renderInbound } from "../../src/session/render.ts"
import { makePiHostRig } from "./hostRig.ts"

const B: SessionInfo = { id: "b0b0b0b0-1111-2222", name: "B", cwd: "/work/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

describe("a passive message handed while pi compacts (not idle, not streaming)", () => {
  it.effect("pi saved it at once: not watched as held, and a later withdrawal is not kept — the saved message is left as it is — but saved as told", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const message = { id: "c-1", timestamp: 0, content: { text: "body" } }
      const inbound: Inbound = {
        intent: "passive",
        from: B,
        message,
        text: renderInbound(B, message, true),
        expectsReply: false,
        delivery: "passive"
      }
      rig.setPhase("compacting")
      yield* rig.host.deliver(inbound)
      rig.setPhase("idle")
      assert.isFalse(rig.queued.holds(B.id, "c-1"), "watched as held by pi, though pi saved it")
      // The model has it (pi saved it); its sender cancels it.
      yield* rig.withdrawn(B.id, "c-1", "cancel", false, undefined)
      assert.deepStrictEqual(
        rig.entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY).length,
        1,
        "the withdrawal of a message the host took is saved, so the next process tells it no second time (revbt bt1)"
      )
      assert.deepStrictEqual(
        rig.entries.flatMap((entry) => {
          const details = messageDetails(entry)
          return details === undefined ? [] : [[details.messageId, details.withdrawn]]
        }),
        [["c-1", undefined]],
        "the message pi saved was marked withdrawn"
      )
    }))
})
