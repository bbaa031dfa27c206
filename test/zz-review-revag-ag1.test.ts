/**
 * Review revag AG1 (probe; fails on main): a cancel of a reply whose caller
 * stopped waiting (timed out) closes the question's reopened pair at once
 * (ClientConnection `cancel` release → RecentMessages.cancelEnded(false)).
 * The broker did take the cancel: it withdraws the reply and writes the
 * question again ahead of its late bare `delivered` (Receipts.cancel →
 * MailDelivery.cancel → StaleAsks.replyLost → askAgain). The question asked
 * again reaches the client after the pair was closed and is dropped as a
 * repeat: the replier never sees it, and its asker waits to the deadline.
 * Runs against the scripted broker on a real socket; waits on a marker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { InboundMessage } from "../src/client/events.ts"
import type { Message } from "../src/protocol/frames.ts"
import { message } from "./support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./client/support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"
const fromAlice = (m: Message) => ({ type: "message", from: ALICE, message: m })
const ids = (seen: ReadonlyArray<InboundMessage>) => seen.map((m) => m.message.id)

describe("revag AG1: a cancel answered after its caller timed out", () => {
  it.live("the question the broker asked again ahead of its late `delivered` passes", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const marker = message("after the late answer")
      let late = false
      // The cancel is not answered in time; later the broker's question asked again, the cancel's late bare
      // `delivered` (the reply was withdrawn) and a marker come ahead of a list's answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        beforeList: () => late ? [fromAlice(ask), { type: "delivered", messageId: reply.id }, fromAlice(marker)] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered in time")
      late = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the question asked again was dropped as a repeat")
    }))
})
