/**
 * The client numbers the messages it reads and marks each control with the number of the last message read
 * before it (`InboundMessage.read`, `ControlEvent` `read`), and `readSince` says whether a message under the
 * control's (sender, id) was passed on after it: then the control is an earlier message's (a control never comes
 * before its message), which is what lets a lagging session leave a new message under a reused id live (review
 * revbb BB2; test/session/controlFiberLags.test.ts). In memory, against a fake broker that writes the frames it is
 * told to ahead of each `list` answer (as test/client/withdrawnAskCopy.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ScriptFrame, scriptedListClient } from "./support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

const message = (id: string, text: string): ScriptFrame => ({
  type: "message",
  from: SENDER,
  message: { id, timestamp: 1, content: { text } }
})
const cancel = { type: "message_control", from: SENDER, control: { messageId: "m1", action: "cancel", timestamp: 2 } }

describe("a control's read mark (review revbb BB2)", () => {
  it.effect("is the last message's read number, and readSince turns true only once a new message of its pair passed", () =>
    Effect.gen(function*() {
      const { client, controls, listAfter, messages } = yield* scriptedListClient
      yield* listAfter([message("m1", "old task"), cancel])
      const old = yield* messages.next((inbound) => inbound.message.id === "m1")
      const control = yield* controls.next((event) => event._tag === "Control")
      assert.isDefined(old.read, "a message read by the client carries its read number")
      assert.strictEqual(control._tag === "Control" ? control.read : undefined, old.read, "the mark is the last message's number")
      const mark = old.read ?? 0
      assert.isFalse(yield* client.readSince(SENDER.id, "m1", mark), "the control's own message counts as read after it")
      // 1,024 other messages: the old m1's pair is forgotten (confirmed as read), so a new m1 passes as new.
      yield* listAfter(Array.from({ length: 1024 }, (_, i) => message(`f${i}`, `filler ${i}`)))
      assert.isFalse(yield* client.readSince(SENDER.id, "m1", mark), "other messages made the old control look stale")
      yield* listAfter([message("m1", "new task, id reused")])
      const fresh = yield* messages.next((inbound) => inbound.message.content.text === "new task, id reused")
      assert.isAbove(fresh.read ?? 0, mark)
      assert.isTrue(yield* client.readSince(SENDER.id, "m1", mark), "the new m1 was not seen as read after the old cancel")
    }))
})
