/**
 * The rewrite of a message withdrawn while it waited in pi's queue
 * (src/pi/queuedInbound.ts): at pi's `message_end` an `intercom_message` handed
 * over with a turn and withdrawn since enters as the hand-off renders a
 * withdrawn message, passive; one not withdrawn, one withdrawn after it entered,
 * one never handed over here, and other custom messages are left as they are.
 * A withdrawal is kept only for a message watched here or one still in the
 * session's hand-off (`waiting`): a late one, or one of a message handed over
 * already withdrawn, never marks a later message reusing its (sender, id),
 * and such withdrawals never push out one that counts (review revaz AZ1, AZ2);
 * nor does one the hand-off reports `waiting` for the very message it had
 * handed pi already, or one of a message handed over again without a turn;
 * a copy dropped from pi's queue keeps its withdrawal when handed over again
 * (review revbd BD1, BD5).
 * `withdrawn` says whether the withdrawal is kept: the host saves only those.
 */
import { assert, describe, it } from "@effect/vitest"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { Inbound } from "../../src/session/Host.ts"
import { renderInbound } from "../../src/session/render.ts"
import { makeQueuedInbound, QUEUED_KEPT } from "../../src/pi/queuedInbound.ts"

const B: SessionInfo = {
  id: "b0b0b0b0-1111-2222",
  name: "B",
  cwd: "/work/b",
  model: "m",
  pid: 1,
  startedAt: 0,
  lastActivity: 0
}

const inbound = (id: string, intent: Inbound["intent"], expectsReply = false): Inbound => {
  const message = { id, timestamp: 0, content: { text: `body of ${id}` }, ...(expectsReply ? { expectsReply } : {}) }
  return {
    intent,
    from: B,
    message,
    text: renderInbound(B, message, true),
    expectsReply,
    delivery: intent === "followUp" ? "queue" : "steer"
  }
}

/** `handed` prepared again for another hand-off (after a refusal, or Esc): the same message, a new `Inbound`. */
const copyOf = (handed: Inbound, intent: Inbound["intent"] = handed.intent): Inbound => ({ ...handed, intent })

/** The custom message pi is handed for `handed` (the details the host gives it). */
const piMessage = (handed: Inbound, customType = "intercom_message") => ({
  customType,
  details: { messageId: handed.message.id, from: handed.from, expectsReply: handed.expectsReply, intent: handed.intent }
})

describe("QueuedInbound", () => {
  it("an ask withdrawn while it waited as a follow-up enters marked withdrawn, passive, with the hand-off's wording", () => {
    const queued = makeQueuedInbound()
    const ask = inbound("q-1", "followUp", true)
    queued.handed(ask)
    queued.withdrawn(B.id, "q-1", "cancel", false, undefined)
    const entered = queued.entering(piMessage(ask))
    assert.deepStrictEqual(entered, {
      content: renderInbound(B, ask.message, false, "cancel"),
      details: { messageId: "q-1", from: B, expectsReply: true, intent: "passive", withdrawn: "cancel" }
    })
    assert.include(entered?.content ?? "", "Withdrawn: B cancelled this message before it reached you")
    assert.notInclude(entered?.content ?? "", "To reply")
    // Entered once: a second message_end of it (none comes) would find nothing.
    assert.isUndefined(queued.entering(piMessage(ask)))
  })

  it("a steered message superseded while queued says it was replaced", () => {
    const queued = makeQueuedInbound()
    const steered = inbound("m-2", "steer")
    queued.handed(steered)
    queued.withdrawn(B.id, "m-2", "supersede", false, undefined)
    assert.include(queued.entering(piMessage(steered))?.content ?? "", "Withdrawn: B replaced this message with a later one")
  })

  it("a withdrawal noted while the message was in the hand-off, just before pi was handed it, still applies when it enters", () => {
    const queued = makeQueuedInbound()
    const steered = inbound("m-3", "steer")
    queued.withdrawn(B.id, "m-3", "cancel", true, undefined)
    queued.handed(steered)
    assert.strictEqual(queued.entering(piMessage(steered))?.details.withdrawn, "cancel")
  })

  it("a message not withdrawn is left as it is; a withdrawal after it entered does not mark a later message of its id", () => {
    const queued = makeQueuedInbound()
    const live = inbound("m-4", "followUp")
    queued.handed(live)
    assert.isUndefined(queued.entering(piMessage(live)))
    // The model has it; the session still tells the journal (a follow-up it took, in `steered` until the run settles).
    queued.withdrawn(B.id, "m-4", "cancel", false, undefined)
    const again = inbound("m-4", "steer")
    queued.handed(again)
    assert.isUndefined(queued.entering(piMessage(again)), "a new message of the same (sender, id) enters live")
  })

  it("a withdrawal of a message handed over already withdrawn (without a turn) does not mark a later live one of its id", () => {
    const queued = makeQueuedInbound()
    // Inbound.ts handOver: read before the message came, saved with `waiting`, then handed over passive.
    queued.withdrawn(B.id, "m-6", "supersede", true, undefined)
    queued.handedWithoutTurn(inbound("m-6", "passive"))
    const live = inbound("m-6", "steer")
    queued.handed(live)
    assert.isUndefined(queued.entering(piMessage(live)))
  })

  it("a withdrawal of a message neither watched nor in the hand-off is dropped: a later live one of its id is left as it is", () => {
    const queued = makeQueuedInbound()
    queued.withdrawn(B.id, "m-7", "supersede", false, undefined)
    const live = inbound("m-7", "steer")
    queued.handed(live)
    assert.isUndefined(queued.entering(piMessage(live)))
  })

  it("withdrawals of messages not in pi's queue do not push out the withdrawal of one that is", () => {
    const queued = makeQueuedInbound()
    const waiting = inbound("w-1", "steer")
    queued.handed(waiting)
    queued.withdrawn(B.id, "w-1", "cancel", false, undefined)
    for (let i = 0; i < QUEUED_KEPT; i++) queued.withdrawn(B.id, `old-${i}`, "cancel", false, undefined)
    assert.strictEqual(queued.entering(piMessage(waiting))?.details.withdrawn, "cancel")
  })

  it("a message pi's sendMessage refused (notHanded) is no longer watched", () => {
    const queued = makeQueuedInbound()
    const refused = inbound("m-8", "steer")
    queued.handed(refused)
    queued.notHanded(refused)
    queued.withdrawn(B.id, "m-8", "cancel", false, undefined)
    assert.isUndefined(queued.entering(piMessage(refused)))
  })

  it("another sender's message of the same id, a message never handed over here, and other custom types are left alone", () => {
    const queued = makeQueuedInbound()
    const mine = inbound("m-5", "steer")
    queued.handed(mine)
    queued.withdrawn(B.id, "m-5", "cancel", false, undefined)
    const other = { ...mine, from: { ...B, id: "c0c0c0c0-1111-2222" } }
    assert.isUndefined(queued.entering(piMessage(other)))
    assert.isUndefined(queued.entering(piMessage(mine, "some_other_extension")))
    assert.isUndefined(queued.entering({ customType: "intercom_message", details: { note: "no ids" } }))
    assert.isDefined(queued.entering(piMessage(mine)), "ours is still rewritten")
  })

  it("a withdrawal is kept, to be saved, only for a message watched or in the hand-off: not for one the model has already", () => {
    const queued = makeQueuedInbound()
    const live = inbound("k-1", "trigger")
    queued.handed(live)
    assert.isTrue(queued.withdrawn(B.id, "k-1", "cancel", false, undefined), "handed over with a turn, not entered: kept")
    queued.entering(piMessage(live))
    assert.isFalse(queued.withdrawn(B.id, "k-1", "cancel", false, undefined), "entered: the model has it, nothing to save")
    assert.isFalse(queued.withdrawn(B.id, "k-2", "cancel", false, undefined), "never handed over with a turn here")
    assert.isTrue(queued.withdrawn(B.id, "k-3", "cancel", true, undefined), "still in the hand-off: kept for its hand-off")
  })

  it("a withdrawal reported waiting after pi was handed the message marks it, and not a later live message of its id", () => {
    const queued = makeQueuedInbound()
    const first = inbound("r-1", "steer")
    queued.handed(first)
    // Read after `deliver` handed it to pi, before the hand-off let it go: the hand-off still says waiting.
    queued.withdrawn(B.id, "r-1", "cancel", true, first)
    assert.strictEqual(queued.entering(piMessage(first))?.details.withdrawn, "cancel")
    const later = inbound("r-1", "steer")
    queued.handed(later)
    assert.isUndefined(queued.entering(piMessage(later)), "a later message reusing the id enters live")
  })

  it("a withdrawal reported waiting after pi was handed the message without a turn does not mark a later live one of its id", () => {
    const queued = makeQueuedInbound()
    const passive = inbound("r-2", "passive")
    queued.handedWithoutTurn(passive)
    assert.isFalse(queued.withdrawn(B.id, "r-2", "cancel", true, passive), "pi has it, passive: nothing to save")
    const later = inbound("r-2", "steer")
    queued.handed(later)
    assert.isUndefined(queued.entering(piMessage(later)), "a later message reusing the id enters live")
  })

  it("a message the hand-off holds prepared but pi's sendMessage refused is still waiting for its next hand-off", () => {
    const queued = makeQueuedInbound()
    const refused = inbound("r-3", "steer")
    queued.handed(refused)
    queued.notHanded(refused)
    assert.isTrue(queued.withdrawn(B.id, "r-3", "cancel", true, refused))
    const again = copyOf(refused) // prepared again (the withdrawal made it stale), with a turn in this test
    queued.handed(again)
    assert.strictEqual(queued.entering(piMessage(again))?.details.withdrawn, "cancel")
  })

  it("a steer withdrawn in pi's queue and dropped from it (Esc) keeps its withdrawal when handed over again live", () => {
    const queued = makeQueuedInbound()
    const first = inbound("x-1", "steer")
    queued.handed(first)
    // Read after the hand-off let it go, before the session counted it steered: the settle hands it over live.
    queued.withdrawn(B.id, "x-1", "cancel", false, undefined)
    const again = copyOf(first)
    queued.handed(again)
    assert.strictEqual(queued.entering(piMessage(again))?.details.withdrawn, "cancel")
  })

  it("a copy handed over without a turn replaces one handed over with a turn earlier: a withdrawal after it entered marks nothing", () => {
    const queued = makeQueuedInbound()
    // Handed over as a steer, dropped from pi's queue by Esc, handed over again when the run settled: passive now.
    const first = inbound("e-1", "steer")
    queued.handed(first)
    const again = copyOf(first, "passive")
    queued.handedWithoutTurn(again)
    assert.isFalse(queued.withdrawn(B.id, "e-1", "cancel", false, undefined), "the model has it: nothing to save")
    assert.isUndefined(queued.entering(piMessage(again)), "it is left as it entered")
  })

  it("keeps the newest QUEUED_KEPT handed-over messages: the oldest, never entered (cleared by Esc), is forgotten", () => {
    const queued = makeQueuedInbound()
    const first = inbound("m-0", "steer")
    queued.handed(first)
    for (let i = 1; i <= QUEUED_KEPT; i++) queued.handed(inbound(`m-${i}`, "steer"))
    queued.withdrawn(B.id, "m-0", "cancel", false, undefined)
    queued.withdrawn(B.id, `m-${QUEUED_KEPT}`, "cancel", false, undefined)
    assert.isUndefined(queued.entering(piMessage(first)))
    assert.isDefined(queued.entering(piMessage(inbound(`m-${QUEUED_KEPT}`, "steer"))))
  })
})
