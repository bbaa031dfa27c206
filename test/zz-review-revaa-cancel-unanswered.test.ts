/**
 * Review revaa AA2 (probe, fails on main at 11b45496; a gap docs/client.md
 * names): a cancel of a reply whose answer never comes (here: the request
 * times out) leaves the question's pair let go for good — `cancelWritten`
 * dropped it and no `cancelAnswered` puts it back — so a later copy of the
 * question (a redelivery, not a re-ask: the reply stands) reaches `messages`
 * a second time. The scripted broker never answers the cancel; the copy and
 * a marker come ahead of a `list`'s answer, in one write.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { InboundMessage } from "../src/client/events.ts"
import type { Message } from "../src/protocol/frames.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./client/support.ts"
import { message } from "./support/broker.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

const fromAlice = (m: Message) => ({ type: "message", from: ALICE, message: m })
const ids = (seen: ReadonlyArray<InboundMessage>) => seen.map((m) => m.message.id)

describe("review revaa AA2: a cancel of a reply left unanswered", () => {
  it.live("keeps the answered question a repeat: a later copy of it is dropped", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const marker = message("after the copy")
      const reply = message("yes", { replyTo: ask.id })
      let copies = false
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        beforeList: () => copies ? [fromAlice(ask), fromAlice(marker)] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered")
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, marker.id], "the answered question reached messages twice")
    }))
})
