/**
 * Review revaz probes (src/pi/queuedInbound.ts, merge piwd f1b91434). Each test
 * states the rule it checks and FAILS on main at f1b91434.
 *
 * The host's `journal.withdrawn` (src/pi/host.ts:170-175) tells `QueuedInbound`
 * of every control the session reads (src/session/Inbound.ts:398 on the
 * controls path, :330 when a message is handed over already withdrawn), not
 * only of messages waiting in pi's queue; `withdrawn` keeps each one in its
 * map until a message of the same (sender id, message id) enters.
 */
import { assert, describe, it } from "@effect/vitest"
import type { SessionInfo } from "../src/protocol/frames.ts"
import type { Inbound } from "../src/session/Host.ts"
import { renderInbound } from "../src/session/render.ts"
import { makeQueuedInbound, QUEUED_KEPT } from "../src/pi/queuedInbound.ts"

const B: SessionInfo = {
  id: "b0b0b0b0-1111-2222",
  name: "B",
  cwd: "/work/b",
  model: "m",
  pid: 1,
  startedAt: 0,
  lastActivity: 0
}

const inbound = (id: string, intent: Inbound["intent"], text = `body of ${id}`): Inbound => {
  const message = { id, timestamp: 0, content: { text } }
  return {
    intent,
    from: B,
    message,
    text: renderInbound(B, message, true),
    expectsReply: false,
    delivery: intent === "followUp" ? "queue" : "steer"
  }
}

const piMessage = (handed: Inbound) => ({
  customType: "intercom_message",
  details: { messageId: handed.message.id, from: handed.from, expectsReply: handed.expectsReply, intent: handed.intent }
})

describe("review revaz: QueuedInbound", () => {
  it("AZ1: a late cancel of a message already in the model's context does not mark a later live message of the same id", () => {
    const queued = makeQueuedInbound()
    const first = inbound("m-1", "steer")
    queued.handed(first)
    assert.isUndefined(queued.entering(piMessage(first)), "entered live")
    // The sender cancels it after the model has it: the control path still calls journal.withdrawn.
    queued.withdrawn(B.id, "m-1", "cancel")
    // Later, a new message of the same (sender, id) — the session hands it over live.
    const second = inbound("m-1", "followUp", "a new message")
    queued.handed(second)
    assert.isUndefined(queued.entering(piMessage(second)), "a message not withdrawn is never shown withdrawn")
  })

  it("AZ1: a withdrawal of a message the session handed over already withdrawn (passive, never queued) does not mark a later live one", () => {
    const queued = makeQueuedInbound()
    // Inbound.ts:330: read before the message came; handed over passive, marked withdrawn (triggerTurn false: not `handed`).
    queued.withdrawn(B.id, "m-2", "supersede")
    // A later live message of the same (sender, id).
    const live = inbound("m-2", "steer", "a new message")
    queued.handed(live)
    assert.isUndefined(queued.entering(piMessage(live)), "a message not withdrawn is never shown withdrawn")
  })

  it("AZ2: withdrawals of messages not in pi's queue do not push out the withdrawal of one that is", () => {
    const queued = makeQueuedInbound()
    const waiting = inbound("w-1", "steer")
    queued.handed(waiting)
    queued.withdrawn(B.id, "w-1", "cancel")
    // Late cancels of messages the model already has (or never queued): each is kept until its key enters.
    for (let i = 0; i < QUEUED_KEPT; i++) queued.withdrawn(B.id, `old-${i}`, "cancel")
    assert.strictEqual(queued.entering(piMessage(waiting))?.details.withdrawn, "cancel", "the waiting message was withdrawn")
  })
})
