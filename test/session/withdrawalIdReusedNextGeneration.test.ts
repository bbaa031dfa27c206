/**
 * A control a generation reads for a message an earlier generation of the same client handled (not received
 * here: a generation used to keep such a control in a map of its own until its message came, and withdrew
 * whatever came under that id) does not withdraw a new message its sender sends
 * later under that id (review revax AX-B1, its session-side case): the client forgets a control of a pair once
 * it reads a message of that pair after it (RecentControls.received), and the generation takes the client's
 * word. Over the fake session client, two generations in turn, on the TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Queue, Scope } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { Host } from "../../src/session/Host.ts"
import { IntercomSession } from "../../src/session/IntercomSession.ts"
import { B, C, inboundMessage, makeFakeClient, makeRecordingHost, SELF, settle } from "./support.ts"

const HOUR = 60 * 60 * 1000

describe("a control read by a later generation, of a message an earlier one handled", () => {
  it.effect("does not withdraw a new message its sender sends under that id", () =>
    Effect.gen(function*() {
      const client = yield* makeFakeClient(SELF.id)
      client.sessions = [SELF, B, C]
      const generation = Effect.gen(function*() {
        const host = yield* makeRecordingHost({ name: "self", cwd: "/work", model: "test-model" })
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(
          IntercomSession.layer().pipe(
            Layer.provide(Layer.mergeAll(Layer.succeed(IntercomClient, client.service), Host.layer(host.service)))
          ),
          scope
        ).pipe(Effect.map((context) => Context.get(context, IntercomSession)))
        return { host, close: Scope.close(scope, Exit.void) }
      })
      // Generation 1 hands m-1 over; its host takes it; the generation ends.
      const one = yield* generation
      yield* client.push(inboundMessage(C, "m-1", "first task"))
      yield* settle
      assert.strictEqual((yield* Queue.take(one.host.inbox)).intent, "trigger", "setup: the first m-1 was live")
      yield* one.close
      // Generation 2 reads C's cancel of that m-1, which it never received.
      const two = yield* generation
      yield* client.control({ _tag: "Control", from: C, control: { messageId: "m-1", action: "cancel", timestamp: 0 } })
      yield* settle
      // Past the broker's replay record and the admission window: C sends a new m-1.
      yield* TestClock.adjust(2 * HOUR)
      yield* client.push(inboundMessage(C, "m-1", "an unrelated new task"))
      yield* settle
      const second = yield* Queue.take(two.host.inbox)
      assert.strictEqual(second.message.content.text, "an unrelated new task", "setup: the new message was admitted")
      assert.strictEqual(second.intent, "trigger", "a new message was handed over withdrawn by an earlier message's cancel")
      assert.notInclude(second.text, "Withdrawn")
      yield* two.close
    }))
})
