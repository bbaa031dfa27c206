/**
 * Review revbb BB1 probe (FAILS on main 515dd690). RecentControls.received forgets a pair's controls whenever
 * RecentMessages lets a message of that pair pass — taking it for a NEW message under a reused id. But
 * RecentMessages also lets a COPY of an old ask pass once by design: a reply of this client's that was lost
 * (its `expired` receipt, `replyLost`) reopens the ask's pair, "also when the broker asks nothing again ... a
 * later redelivery then passes once, a duplicate" (RecentMessages.ts header). Such a copy — here the ask and
 * its cancel written again to the next connection, as a `received-v1` broker gives what the client never
 * confirmed (or a cancelled copy and its cancel at a return, WithdrawnCopies.give) — makes the client forget
 * the cancel: `withdrawal` no longer says the ask was withdrawn, and the cancel written again reaches
 * `controls` a second time (the session answers its sender a second `cancellation_requested`). Before the
 * merge the record kept the cancel (`withdrawal` = "cancel") and dropped the second one.
 * Scripted fake broker as test/client/controlsOnce.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ControlEvent } from "../src/client/events.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker, subscribe } from "./client/support.ts"

const SENDER = { id: "dddddddd-3333-4000-8000-00000000000d", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }

type Frame = { readonly type: string; readonly [key: string]: unknown }

const ask = { type: "message", from: SENDER, message: { id: "q1", timestamp: 1, content: { text: "still need this?" }, expectsReply: true } }
const cancel = { type: "message_control", from: SENDER, control: { messageId: "q1", action: "cancel", timestamp: 2 } }

const label = (event: ControlEvent): string =>
  event._tag === "Control" ? `${event.control.action} ${event.control.messageId}` : event._tag

describe("revbb BB1: a copy of a withdrawn ask that RecentMessages lets pass again (its reply lost)", () => {
  it.effect("keeps the ask withdrawn and does not pass its cancel on twice", () =>
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
      // The ask written again (never confirmed), then its cancel: the same ask, still withdrawn. Read apart here,
      // as two reads of the socket may split them: the session asks `withdrawal` as it hands the copy over.
      yield* listAfter([ask])
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
