/**
 * The journal keeper's settle check (C-DLV-16) on its own: what a run that
 * settles hands over again (marked withdrawn when its sender withdrew it,
 * P73; every withdrawal is told to the journal, with whether the message was
 * still in the hand-off, and the host decides what to save), and what a
 * journal that cannot be read then leaves watched.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { JournalRecord } from "../../src/session/Host.ts"
import { makeJournalKeeper } from "../../src/session/InboundJournal.ts"
import type { InboundContext } from "../../src/session/ReplyTracker.ts"
import { message } from "../support/broker.ts"
import { info } from "./support.ts"

const A_ID = "aaaaaaaa-4444-4000-8000-00000000000a"

const context: InboundContext = { from: info(A_ID), message: message("cleared by Esc"), receivedAt: 0 }
const record: JournalRecord = { from: context.from, message: context.message, receivedAt: 0 }

describe("makeJournalKeeper: cleared", () => {
  it.effect("a steered or follow-up message history lacks at the settle is handed over again, once", () =>
    Effect.gen(function*() {
      const keeper = makeJournalKeeper({ checkpoint: () => Effect.void, undelivered: Effect.succeed([record]) })
      keeper.taken(context, true)
      assert.deepStrictEqual((yield* keeper.cleared).map((c) => c.context.message.id), [context.message.id])
      assert.deepStrictEqual(yield* keeper.cleared, [], "no longer watched once handed over again")
    }))

  it.effect("a steered message its sender withdrew is handed over again withdrawn, and the withdrawal is saved", () =>
    Effect.gen(function*() {
      const saves: Array<string> = []
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed([record]),
        withdrawn: (fromId, messageId, action) => Effect.sync(() => void saves.push(`${fromId}/${messageId}/${action}`))
      })
      keeper.taken(context, true)
      yield* keeper.withdrawn(context.from.id, context.message.id, "cancel", false, undefined)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.message.id, again.withdrawn]),
        [[context.message.id, "cancel"]]
      )
      assert.deepStrictEqual(saves, [`${A_ID}/${context.message.id}/cancel`])
    }))

  it.effect("an earlier message's control, read before a newer one under its id, marks only the older steered message (review revbi BI1)", () =>
    Effect.gen(function*() {
      const saves: Array<string> = []
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed([record]),
        withdrawn: (_fromId, messageId) => Effect.sync(() => void saves.push(messageId))
      })
      // The old message, read as number 1, steered; its cancel read at 2 (a newer message under the id read at 3).
      keeper.taken({ ...context, read: 1 }, true)
      keeper.withdrawnEarlier(context.from.id, context.message.id, "cancel", 2, undefined)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.read, again.withdrawn]),
        [[1, "cancel"]],
        "the old steered message Esc cleared was handed over again live"
      )
      // The newer message, read as number 3, steered: the old control does not mark it.
      keeper.taken({ ...context, read: 3 }, true)
      keeper.withdrawnEarlier(context.from.id, context.message.id, "cancel", 2, undefined)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.read, again.withdrawn]),
        [[3, undefined]],
        "the newer steered message was marked withdrawn by an older one's control"
      )
      assert.deepStrictEqual(saves, [], "the host's journal, which cannot tell the two apart, was told")
    }))

  it.effect("a newer message under the id steered after the older one's withdrawal was noted is not marked by it, and Esc hands both over again", () =>
    Effect.gen(function*() {
      const keeper = makeJournalKeeper({ checkpoint: () => Effect.void, undelivered: Effect.succeed([record]) })
      keeper.taken({ ...context, read: 1 }, true)
      keeper.withdrawnEarlier(context.from.id, context.message.id, "cancel", 2, undefined)
      keeper.taken({ ...context, read: 3 }, true)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.read, again.withdrawn]),
        [[1, "cancel"], [3, undefined]],
        "the newer steered message replaced the older one, or was marked by its control"
      )
    }))

  it.effect("two messages under one reused (sender, id), both steered and cleared by Esc, are both handed over again, each with its own withdrawal", () =>
    Effect.gen(function*() {
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed([record]),
        withdrawn: () => Effect.void
      })
      const older: InboundContext = { ...context, read: 1 }
      const newer: InboundContext = { ...context, message: message("the newer one", { id: context.message.id }), read: 2 }
      keeper.taken(older, true)
      keeper.taken(newer, true)
      // The newer one's own control (read after it): it marks the newer one only.
      yield* keeper.withdrawn(context.from.id, context.message.id, "supersede", false, undefined)
      // The older one taken again (a copy handed over again before the settle) is not a third message.
      keeper.taken(older, true)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.read, again.withdrawn]),
        [[1, undefined], [2, "supersede"]],
        "Esc handed only the newer message over again (the older one lost), or marked the wrong one"
      )
    }))

  it.effect("a withdrawal only the host's journal kept marks, of two steered messages under one reused id, the one its record is", () =>
    Effect.gen(function*() {
      const older: InboundContext = { ...context, message: { ...context.message, timestamp: 1 }, read: 1 }
      const newer: InboundContext = { ...context, message: { ...context.message, timestamp: 2 }, read: 2 }
      // The journal restores the older checkpoint of the key (pi's: the first), marked withdrawn.
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed([{ ...record, message: older.message, withdrawn: "cancel" }])
      })
      keeper.taken(older, true)
      keeper.taken(newer, true)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.read, again.withdrawn]),
        [[1, "cancel"], [2, undefined]],
        "the older message's saved withdrawal marked the newer one too"
      )
    }))

  it.effect("the host's journal is told whether the withdrawn message was still waiting in the hand-off", () =>
    Effect.gen(function*() {
      const saves: Array<string> = []
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed([record]),
        withdrawn: (_fromId, messageId, _action, waiting) => Effect.sync(() => void saves.push(`${messageId}/${waiting}`))
      })
      yield* keeper.withdrawn(A_ID, "waiting-1", "cancel", true, undefined)
      keeper.taken(context, true)
      yield* keeper.withdrawn(context.from.id, context.message.id, "cancel", false, undefined)
      assert.deepStrictEqual(saves, ["waiting-1/true", `${context.message.id}/false`])
    }))

  it.effect("a withdrawal of a message taken while idle is told to the journal, not waiting, and not handed over again", () =>
    Effect.gen(function*() {
      const saves: Array<string> = []
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed([record]),
        withdrawn: (fromId, messageId, _action, waiting) => Effect.sync(() => void saves.push(`${fromId}/${messageId}/${waiting}`))
      })
      keeper.taken(context, false)
      // The host's agent may not have it yet (pi holds a trigger back while a run settles): the host decides
      // whether to save it, and saves nothing for a message its agent has (test/pi/queuedInbound.test.ts).
      yield* keeper.withdrawn(context.from.id, context.message.id, "cancel", false, undefined)
      assert.deepStrictEqual(saves, [`${A_ID}/${context.message.id}/false`])
      assert.deepStrictEqual(yield* keeper.cleared, [], "not steered: the settle hands nothing over again")
    }))

  it.effect("a message taken while the agent was idle is not watched", () =>
    Effect.gen(function*() {
      const keeper = makeJournalKeeper({ checkpoint: () => Effect.void, undelivered: Effect.succeed([record]) })
      keeper.taken(context, false)
      assert.deepStrictEqual(yield* keeper.cleared, [])
    }))

  it.effect("a steered message whose withdrawal only the host's journal kept (told before taken) is handed over again withdrawn (review revbf BF3)", () =>
    Effect.gen(function*() {
      // A journal like pi's: a saved withdrawal marks the undelivered record it names.
      const saved = new Map<string, JournalRecord["withdrawn"]>()
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.sync(() => {
          const action = saved.get(record.message.id)
          return [action === undefined ? record : { ...record, withdrawn: action }]
        }),
        withdrawn: (_fromId, messageId, action) => Effect.sync(() => void saved.set(messageId, action))
      })
      // The control is read after the hand-off let the message go and before `taken`: the keeper had nothing
      // steered to note it on, the host's journal saved it.
      yield* keeper.withdrawn(context.from.id, context.message.id, "cancel", false, undefined)
      keeper.taken(context, true)
      assert.deepStrictEqual(
        (yield* keeper.cleared).map((again) => [again.context.message.id, again.withdrawn]),
        [[context.message.id, "cancel"]],
        "cleared by Esc, it was handed over again live"
      )
    }))

  it.effect("a journal that cannot be read at the settle keeps the message watched for the next one", () =>
    Effect.gen(function*() {
      let reads = 0
      const keeper = makeJournalKeeper({
        checkpoint: () => Effect.void,
        undelivered: Effect.suspend(() => ++reads === 1 ? Effect.fail("the session file is busy") : Effect.succeed([record]))
      })
      keeper.taken(context, true)
      assert.deepStrictEqual(yield* keeper.cleared, [], "nothing is known while the journal cannot be read")
      assert.deepStrictEqual((yield* keeper.cleared).map((c) => c.context.message.id), [context.message.id])
    }))
})
