/**
 * A copy of a withdrawn ask that RecentMessages lets pass once more — its pair reopened because this client's
 * reply was lost (the reply's `expired` receipt, `replyLost`) — is the same message, not a new one under a
 * reused id (review revbb BB1): the client keeps its cancel (`withdrawal` still says "cancel", so a session
 * handing the copy over before the cancel written behind it is read hands it withdrawn), and that cancel,
 * written again behind the copy, reaches `controls` once. Here the ask and its cancel come again as a
 * `received-v1` broker gives what the client never confirmed (or a cancelled copy and its cancel at a return,
 * WithdrawnCopies.give). In memory, against a fake broker that writes the frames it is told to ahead of each
 * `list` answer (as test/client/controlsOnce.test.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ControlEvent } from "../../src/client/events.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

type Frame = { readonly type: string; readonly [key: string]: unknown }

const ask = { type: "message", from: SENDER, message: { id: "q1", timestamp: 1, content: { text: "still need this?" }, expectsReply: true } }
const cancel = { type: "message_control", from: SENDER, control: { messageId: "q1", action: "cancel", timestamp: 2 } }

const label = (event: ControlEvent): string =>
  event._tag === "Control" ? `${event.control.action} ${event.control.messageId}` : event._tag

describe("a copy of a withdrawn ask passed on again after its reply was lost (review revbb BB1)", () => {
  it.effect("keeps the ask withdrawn, and its cancel written again is not passed on twice", () =>
    Effect.gen(function*() {
      let script: ReadonlyArray<Frame> = []
      const fake = yield* memoryFakeBroker({
        beforeList: () => {
          const frames = script
          script = []
          return frames
        }
      })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, "bbbbbbbb-3333-4000-8000-00000000000b", "bob"))
      const controls = yield* subscribe(client.controls, "bob's controls")
      const messages = yield* subscribe(client.messages, "bob's messages")
      yield* client.connect
      const listAfter = (frames: ReadonlyArray<Frame>) =>
        Effect.suspend(() => {
          script = frames
          return Effect.asVoid(client.list)
        })
      // bob reads the ask, answers it, then reads its sender's cancel of it.
      yield* listAfter([ask])
      yield* Effect.orDie(client.send({ to: SENDER.id, message: { id: "r1", timestamp: 3, content: { text: "yes" }, replyTo: "q1" } }))
      yield* listAfter([cancel])
      yield* controls.next((event) => label(event) === "cancel q1")
      assert.strictEqual(yield* client.withdrawal(SENDER.id, "q1"), "cancel", "setup: the cancel was recorded")
      // bob's reply is lost (its `expired` receipt, from the asker): the ask's pair is reopened (RecentMessages).
      yield* listAfter([{ type: "message_receipt", from: SENDER, receipt: { messageId: "r1", status: "expired", timestamp: 4 } }])
      // The ask written again (never confirmed), then its cancel, read apart (two reads of the socket may split
      // them): the session asks `withdrawal` as it hands the copy over.
      yield* listAfter([ask])
      yield* messages.next((message) => message.message.id === "q1")
      yield* messages.next((message) => message.message.id === "q1")
      assert.strictEqual(messages.seen().length, 2, "setup: the copy passed once more (its pair reopened)")
      assert.strictEqual(
        yield* client.withdrawal(SENDER.id, "q1"),
        "cancel",
        "a copy of the withdrawn ask made the client forget that it was withdrawn"
      )
      // A marker control behind the cancel: once it is seen, any second cancel of q1 was published before it.
      yield* listAfter([cancel, { ...cancel, control: { messageId: "marker", action: "cancel", timestamp: 5 } }])
      yield* controls.next((event) => label(event) === "cancel marker")
      assert.deepStrictEqual(
        controls.seen().filter((event) => event._tag === "Control").map(label),
        ["cancel q1", "cancel marker"],
        "the cancel written again reached controls a second time"
      )
    }))
})
