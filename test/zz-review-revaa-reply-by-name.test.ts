/**
 * Review revaa AA1 (probe, fails on main at 11b45496): a reply addressed to
 * its asker by name (or prefix) — `IntercomClient.send({ to: "alice" })`, or
 * IntercomSession's `send` with `replyTo` whose `to` did not resolve locally
 * (Sending.deliver sends the raw string) — is recorded under the asker key
 * "alice", which names no (sender, id) pair. Its `expired` receipt then
 * forgets nothing, and the question the broker asks again is dropped as a
 * repeat: never shown again. Before fixz2, replyLost's suffix scan found it.
 * The scripted broker answers any `send`; the test waits on a marker frame
 * written last, never on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { InboundMessage } from "../src/client/events.ts"
import type { Message } from "../src/protocol/frames.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./client/support.ts"
import { message } from "./support/broker.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", name: "alice", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

const fromAlice = (m: Message) => ({ type: "message", from: ALICE, message: m })
const expiredReceipt = (messageId: string) => ({
  type: "message_receipt",
  from: ALICE,
  receipt: { messageId, status: "expired", timestamp: 1, detail: "evicted" }
})
const ids = (seen: ReadonlyArray<InboundMessage>) => seen.map((m) => m.message.id)

describe("review revaa AA1: a reply sent to its asker's name", () => {
  for (const to of ["alice", "aaaaaaaa"]) {
    it.live(`lost (expired), lets its question, asked again, pass (to: ${JSON.stringify(to)})`, () =>
      Effect.gen(function*() {
        const ask = message("still need this?", { expectsReply: true })
        const marker = message("after the question")
        const reply = message("yes", { replyTo: ask.id })
        // Behind the reply's answer, in one write: its `expired` receipt, the question asked again, a marker.
        const fake = yield* fakeBroker({
          afterRegistered: () => [fromAlice(ask)],
          afterSend: (id) => id === reply.id ? [expiredReceipt(reply.id), fromAlice(ask), fromAlice(marker)] : []
        })
        const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID))
        const heard = yield* subscribe(bob.messages, "bob's messages")
        yield* bob.connect
        yield* heard.next((m) => m.message.id === ask.id)
        yield* bob.send({ to, message: reply })
        yield* heard.next((m) => m.message.id === marker.id)
        assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the question asked again was dropped")
      }))
  }
})
