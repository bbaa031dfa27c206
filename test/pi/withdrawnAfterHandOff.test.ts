/**
 * A withdrawal (P73) read once pi was handed the message but before it entered
 * the model's context reaches QueuedInbound through the journal keeper, wired
 * as src/pi/host.ts wires them (QueuedInbound decides what the journal saves),
 * behind the real HostHandoff. The control is read at a fixed step, not left
 * to where the fiber happens to yield: inside the `taken` hook before it tells
 * the keeper (after the hand-off let the message go: neither waiting nor
 * steered yet, review revbd BD3), after `taken` for an idle session's trigger
 * (not counted as steered, review revbd BD2), and inside `deliver` just after
 * pi was handed the message (the hand-off still reports it `waiting`, with the
 * `Inbound` it gave pi, review revbd BD1). Each enters marked withdrawn and is
 * saved; a later live message reusing its (sender, id) enters live.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeQueuedInbound } from "../../src/pi/queuedInbound.ts"
import type { SessionInfo } from "../../src/protocol/frames.ts"
import type { Inbound, JournalRecord } from "../../src/session/Host.ts"
import { type HostHandoff, makeHostHandoff } from "../../src/session/HostHandoff.ts"
import { makeJournalKeeper } from "../../src/session/InboundJournal.ts"
import type { InboundContext } from "../../src/session/ReplyTracker.ts"
import { renderInbound } from "../../src/session/render.ts"

const B: SessionInfo = { id: "b0b0b0b0-1111-2222", name: "B", cwd: "/work/b", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

const inbound = (id: string, intent: Inbound["intent"]): Inbound => {
  const message = { id, timestamp: 0, content: { text: `body of ${id}` } }
  return { intent, from: B, message, text: renderInbound(B, message, true), expectsReply: false, delivery: "steer" }
}

const piMessage = (handed: Inbound) => ({
  customType: "intercom_message",
  details: { messageId: handed.message.id, from: handed.from, expectsReply: handed.expectsReply, intent: handed.intent }
})

/** Where the control fiber reads the withdrawal, relative to the hand-off's steps. */
type ReadAt = "inDeliver" | "beforeTaken" | "afterTaken"

/**
 * Hands `live` over through a real HostHandoff to a host wired as pi's (`handed` with a turn), reading a `cancel`
 * of it at `readAt` as InboundControls.ts's control fiber does; then `later`, a new message reusing its id, live.
 * Gives what each enters the model's context as, and the withdrawals the host saved.
 */
const run = (live: Inbound, readAt: ReadAt, later: Inbound) =>
  Effect.gen(function*() {
    const queued = makeQueuedInbound()
    const saved: Array<string> = []
    const record: JournalRecord = { from: B, message: live.message, receivedAt: 0 }
    const keeper = makeJournalKeeper({
      checkpoint: () => Effect.void,
      undelivered: Effect.succeed([record]),
      // src/pi/host.ts: the `intercom_withdrawn` entry is appended only when QueuedInbound keeps the withdrawal.
      withdrawn: (fromId, messageId, action, waiting, prepared) =>
        Effect.sync(() => {
          if (queued.withdrawn(fromId, messageId, action, waiting, prepared)) saved.push(`${messageId}/${action}`)
        })
    })
    let handoff: HostHandoff | undefined
    const control = Effect.suspend(() => {
      const found = handoff?.withdraw(B.id, live.message.id, "cancel")
      return keeper.withdrawn(B.id, live.message.id, "cancel", found?.waiting ?? false, found?.prepared)
    })
    const prepared = [live, later]
    let taken = 0
    handoff = yield* makeHostHandoff(
      (inbound) =>
        Effect.andThen(
          Effect.sync(() => queued.handed(inbound)), // pi's deliver, then sendMessage
          readAt === "inDeliver" && inbound === live ? control : Effect.void
        ),
      {
        prepare: () => Effect.sync(() => prepared.shift() ?? later),
        taken: (context) =>
          Effect.gen(function*() {
            const first = taken++ === 0
            if (first && readAt === "beforeTaken") yield* control
            keeper.taken(context, live.intent === "steer" || live.intent === "followUp") // Inbound.ts
            if (first && readAt === "afterTaken") yield* control
          })
      }
    )
    const context = (handed: Inbound): InboundContext => ({ from: B, message: handed.message, receivedAt: 0 })
    yield* handoff.enqueue(context(live))
    while (taken < 1) yield* Effect.yieldNow
    const first = queued.entering(piMessage(live))?.details.withdrawn
    yield* handoff.enqueue(context(later))
    while (taken < 2) yield* Effect.yieldNow
    const second = queued.entering(piMessage(later))?.details.withdrawn
    return { first, second, saved }
  }).pipe(Effect.scoped)

describe("a withdrawal read after pi was handed the message, before it entered", () => {
  it.effect("a steer whose control is read between the hand-off letting it go and `taken` enters withdrawn, and is saved", () =>
    Effect.gen(function*() {
      const result = yield* run(inbound("s-1", "steer"), "beforeTaken", inbound("s-1", "steer"))
      assert.deepStrictEqual(result, { first: "cancel", second: undefined, saved: ["s-1/cancel"] })
    }))

  it.effect("an idle session's trigger withdrawn after it was taken, before it entered, enters withdrawn, and is saved", () =>
    Effect.gen(function*() {
      const result = yield* run(inbound("t-1", "trigger"), "afterTaken", inbound("t-1", "trigger"))
      assert.deepStrictEqual(result, { first: "cancel", second: undefined, saved: ["t-1/cancel"] })
    }))

  it.effect("a steer whose control is read in `deliver`, after pi had it, enters withdrawn; a later one of its id enters live", () =>
    Effect.gen(function*() {
      const result = yield* run(inbound("d-1", "steer"), "inDeliver", inbound("d-1", "steer"))
      assert.deepStrictEqual(result, { first: "cancel", second: undefined, saved: ["d-1/cancel"] })
    }))
})
