/**
 * Review revbb BB2 probe (FAILS on main 515dd690): the client's record forgets an old message's cancel once a new
 * message of its (sender, id) is read after it (RecentControls.received), but the session's control fiber — a
 * stream of its own, here still busy saving an earlier control to the host's journal — handles that old cancel
 * after the new message reached the hand-off, and `handoff.withdraw` (Inbound.ts, control fiber) withdraws the
 * NEW message by its id. The client reads the cancels first, then the message, as a broker's registration gives
 * kept controls ahead of the mailbox's mail (MailDelivery hooks.registered). Not a regression of the merge:
 * before it the new m-1 was withdrawn the same way (and by the record too); the residual of AX-B1.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Queue } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../src/client/IntercomClient.ts"
import { Host } from "../src/session/Host.ts"
import { IntercomSession } from "../src/session/IntercomSession.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle } from "./session/support.ts"

const HOUR = 60 * 60 * 1000

describe("revbb BB2: an old cancel the session's control fiber handles after a new message under its id", () => {
  it.effect("does not withdraw the new message", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
      // A journal that saves withdrawals, one of them slowly (a disk write).
      const service = {
        ...host.service,
        journal: {
          checkpoint: () => Effect.void,
          undelivered: Effect.succeed([]),
          handled: Effect.succeed([]),
          withdrawn: (_from: string, messageId: string) => messageId === "other" ? Effect.sleep(1_000) : Effect.void
        }
      }
      const context = yield* Layer.build(
        IntercomSession.layer().pipe(
          Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(service)))
        )
      )
      Context.get(context, IntercomSession)
      yield* client.push(inboundMessage(C, "m-1", "first task"))
      yield* settle
      assert.strictEqual((yield* Queue.take(host.inbox)).intent, "trigger", "setup: the first m-1 was live")
      // Past the broker's replay record and the admission window (as withdrawalIdReused.test.ts).
      yield* TestClock.adjust(2 * HOUR)
      // The host refuses hand-offs for a while: C's message "other" waits in the hand-off, and so does what
      // comes behind it.
      host.failDeliveries = 15 // 1.5 s at HANDOFF_RETRY_INTERVAL (100 ms)
      yield* client.push(inboundMessage(C, "other", "another task"))
      yield* settle
      // The client reads C's cancel of "other": the control fiber withdraws it and saves that (slowly).
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "other", action: "cancel", timestamp: 0 } })
      yield* settle
      // Then the old m-1's cancel (kept for this client's return, say), then a new m-1 under the reused id.
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })
      yield* client.push(inboundMessage(C, "m-1", "an unrelated new task"))
      yield* settle
      assert.isUndefined(yield* client.service.withdrawal(C.id, "m-1"), "setup: the client's record forgot the old cancel")
      for (let i = 0; i < 10; i++) {
        yield* TestClock.adjust(500)
        yield* settle
      }
      const other = yield* Queue.take(host.inbox)
      assert.strictEqual(other.message.id, "other", "setup: other first")
      const second = yield* Queue.take(host.inbox)
      assert.strictEqual(second.message.content.text, "an unrelated new task", "setup: the new m-1 was handed over")
      assert.strictEqual(second.intent, "trigger", "the new m-1 was handed over withdrawn by the old m-1's cancel")
      assert.notInclude(second.text, "Withdrawn")
    }))
})
