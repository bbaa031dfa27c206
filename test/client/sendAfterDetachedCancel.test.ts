/**
 * A cancel whose callers all left stays, detached, for its late answer (revag AG1); a later send of the same
 * message id on that connection drops it, so the send's bare `delivered` (P41) is the send's own answer, not
 * taken for the cancel's (P71) (review revai AI3; before, the send timed out).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("a send after a cancel of its id that timed out", () => {
  it.live("gets its own answer", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      // The broker never answers the cancel; it answers every send with a bare `delivered`.
      const fake = yield* fakeBroker({ afterRegistered: () => [{ type: "message", from: ALICE, message: ask }] })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered")
      const again = yield* Effect.exit(bob.send({ to: ALICE.id, message: reply }))
      assert.strictEqual(fake.ofType("send").length, 2, "setup: the second send was not written")
      assert.isTrue(again._tag === "Success", "the second send's answer was taken as the cancel's")
    }))
})
