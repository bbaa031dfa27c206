/**
 * The pi host (`makePiHost`, src/pi/host.ts) over a typed fake of pi
 * (test/pi/hostRig.ts): what a hand-off pi refused leaves behind. pi's
 * `sendMessage` throwing means pi does not have the message, whether it was
 * handed with a turn or without (passive): a withdrawal the session's
 * hand-off then reports `waiting` for the very `Inbound` it tried is one pi
 * may still be handed, so the host saves it (review revbf BF4); one for a
 * message pi accepted without a turn is not (the model has it). One for a
 * message the host took is saved, so that the next process, which finds it
 * in history, knows it was withdrawn (review revbt bt1).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { WITHDRAWN_ENTRY } from "../../src/pi/entries.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { Inbound } from "../../src/session/Host.ts"
import { renderInbound } from "../../src/session/render.ts"
import { makePiHostRig } from "./hostRig.ts"

const B: SessionInfo = { id: "b0b0b0b0-1111-2222", name: "B", cwd: "/work/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

const inbound = (id: string, intent: Inbound["intent"]): Inbound => {
  const message = { id, timestamp: 0, content: { text: `body of ${id}` } }
  const delivery = intent === "passive" ? "passive" : "steer"
  return { intent, from: B, message, text: renderInbound(B, message, true), expectsReply: false, delivery }
}

/** The message ids of the `intercom_withdrawn` entries the host appended. */
const savedWithdrawals = (entries: ReadonlyArray<{ readonly customType?: string; readonly data?: unknown }>) =>
  entries.filter((entry) => entry.customType === WITHDRAWN_ENTRY).map((entry) =>
    typeof entry.data === "object" && entry.data !== null ? Reflect.get(entry.data, "messageId") : undefined
  )

describe("makePiHost (over a fake pi)", () => {
  it.effect("hands pi an idle session's trigger with a turn, and a passive message without one", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      yield* rig.host.deliver(inbound("t-1", "trigger"))
      yield* rig.host.deliver(inbound("p-1", "passive"))
      assert.deepStrictEqual(rig.sent.map((sent) => [sent.customType, sent.options?.triggerTurn]), [
        ["intercom_message", true],
        ["intercom_message", false]
      ])
    }))

  it.effect("a passive message pi refused is not handed to pi: a withdrawal reported waiting for it is saved (review revbf BF4)", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const passive = inbound("p-2", "passive")
      rig.refuseSends(1)
      const exit = yield* Effect.exit(rig.host.deliver(passive))
      assert.isTrue(Exit.isFailure(exit), "setup: pi refused the message")
      assert.deepStrictEqual(rig.sent, [], "setup: pi has nothing")
      // The hand-off still holds it, prepared as the `Inbound` it tried: its next attempt may hand it to pi.
      yield* rig.withdrawn(B.id, "p-2", "cancel", true, passive)
      assert.deepStrictEqual(savedWithdrawals(rig.entries), ["p-2"], "the refused passive message was taken as pi's")
    }))

  it.effect("a passive message pi accepted is in the model's context: a withdrawal reported waiting for it is not saved", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      const passive = inbound("p-3", "passive")
      yield* rig.host.deliver(passive)
      yield* rig.withdrawn(B.id, "p-3", "cancel", true, passive)
      assert.deepStrictEqual(savedWithdrawals(rig.entries), [])
    }))
  it.effect("a message in the model's context the host took (not waiting in the hand-off): its withdrawal is saved, for the next process's history (review revbt bt1)", () =>
    Effect.gen(function*() {
      const rig = makePiHostRig()
      // Accepted without a turn: in the model's context, as in the case above, but reported taken.
      yield* rig.host.deliver(inbound("p-4", "passive"))
      yield* rig.withdrawn(B.id, "p-4", "supersede", false, undefined)
      assert.deepStrictEqual(savedWithdrawals(rig.entries), ["p-4"])
    }))
})
