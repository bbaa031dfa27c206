/**
 * A reply of this client's to an ask its sender then withdrew is lost (its `expired` receipt): the broker asks a
 * withdrawn question nothing again, so the ask's (sender, id) pair is not reopened (review revbf BF2). Reopened,
 * it stayed so for good, and a NEW message its sender sent much later under the reused id (past the broker's
 * replay record, P46, and past the 1,024 pairs RecentMessages remembers) was classed "again" — the same
 * question asked again — so the old ask's cancel was kept for it (BB1): `withdrawal` said "cancel" and a session
 * handed the new message over withdrawn. Here it passes as new, and the old cancel no longer applies to it.
 * In memory, against a fake broker that writes the frames it is told to ahead of each `list` answer (as
 * test/client/withdrawnAskCopy.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ControlEvent } from "../../src/client/events.ts"
import { scriptedListClient } from "./support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

const ask = { type: "message", from: SENDER, message: { id: "q1", timestamp: 1, content: { text: "still need this?" }, expectsReply: true } }
const cancel = { type: "message_control", from: SENDER, control: { messageId: "q1", action: "cancel", timestamp: 2 } }
const reused = { type: "message", from: SENDER, message: { id: "q1", timestamp: 9, content: { text: "a new task, id reused" } } }

const label = (event: ControlEvent): string =>
  event._tag === "Control" ? `${event.control.action} ${event.control.messageId}` : event._tag

describe("a new message under the id of a withdrawn ask whose reply was lost (review revbf BF2)", () => {
  it.effect("is not taken as withdrawn by the old ask's cancel", () =>
    Effect.gen(function*() {
      const { client, controls, listAfter, messages } = yield* scriptedListClient
      // bob reads the ask, answers it, then reads its sender's cancel of it.
      yield* listAfter([ask])
      yield* Effect.orDie(client.send({ to: SENDER.id, message: { id: "r1", timestamp: 3, content: { text: "yes" }, replyTo: "q1" } }))
      yield* listAfter([cancel])
      yield* controls.next((event) => label(event) === "cancel q1")
      // bob's reply is lost: the ask was withdrawn, so the broker asks nothing again (the pair stays reopened).
      yield* listAfter([{ type: "message_receipt", from: SENDER, receipt: { messageId: "r1", status: "expired", timestamp: 4 } }])
      // 1,024 other messages: RecentMessages forgets the ask's pair (confirmed as read: nothing holds it).
      yield* listAfter(Array.from({ length: 1024 }, (_, i) => ({
        type: "message",
        from: SENDER,
        message: { id: `f${i}`, timestamp: 5, content: { text: `filler ${i}` } }
      })))
      // Much later the sender reuses the id for a new, live message.
      yield* listAfter([reused])
      yield* messages.next((message) => message.message.content.text === "a new task, id reused")
      assert.isUndefined(
        yield* client.withdrawal(SENDER.id, "q1"),
        "a new message under the reused id was taken as withdrawn by the old ask's cancel"
      )
    }))
})
