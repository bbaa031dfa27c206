/**
 * A cancel begun on a connection that has closed but was still the one it was given (it waited there for a
 * send of the same id, which the close failed) writes nothing and ends unwritten. An earlier cancel of that
 * id the close cut off unanswered may have been carried out, and left the question's pair reopened: the
 * unwritten one must not close it, or the question the broker asks again on the next connection is dropped
 * as a repeat (review revaj AJ1, the `!writes.open` path of ConnectionSends' `cancel`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

describe("a cancel begun on its connection after that connection closed", () => {
  it.live("leaves open the pair an earlier cancel cut off by the close reopened: the question, asked again, passes once", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const trigger = message("ends the connection")
      const marker = message("after the question")
      let replySends = 0
      // Connection 1: the reply's first send is answered, its second left unanswered, no cancel answered, and
      // `trigger`'s send ends the connection. Connection 2 asks the question again (the cut-off cancel was carried
      // out), then a marker.
      const fake = yield* fakeBroker({
        afterRegistered: (connection) =>
          connection === 1
            ? [{ type: "message", from: ALICE, message: ask }]
            : [{ type: "message", from: ALICE, message: ask }, { type: "message", from: ALICE, message: marker }],
        leaveSendUnanswered: (id) => id === reply.id && ++replySends === 2,
        dropOnSend: (connection, id) => connection === 1 && id === trigger.id
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 60_000, reconnectBaseMs: 10 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      // The first cancel: written, never answered; its caller still waits when the close cuts it off.
      const first = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)))
      yield* fake.until("setup: the first cancel's frame", () => fake.ofType("cancel_message").length === 1)
      // The reply sent again, left unanswered; a second cancel waits on connection 1 for that send's answer.
      yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: reply })))
      const replySendsRead = () =>
        fake.ofType("send").filter(({ frame }) => typeof frame.message === "object" && frame.message !== null && "id" in frame.message && frame.message.id === reply.id).length
      yield* fake.until("setup: the reply's second send", () => replySendsRead() === 2)
      const second = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)))
      // A round trip on connection 1: the second cancel has found the send in flight and waits on it.
      yield* bob.list
      // The close fails the send: the second cancel goes on, on connection 1, closed — it writes nothing.
      yield* Effect.forkScoped(Effect.exit(bob.send({ to: ALICE.id, message: trigger })))
      assert.isTrue((yield* Fiber.join(first))._tag === "Failure", "setup: the first cancel was answered")
      assert.isTrue((yield* Fiber.join(second))._tag === "Failure", "setup: the second cancel was answered")
      yield* heard.next((m) => m.message.id === marker.id)
      assert.strictEqual(fake.ofType("cancel_message").length, 1, "setup: the second cancel wrote a frame")
      const seen = heard.seen().map((m) => m.message.id)
      assert.deepStrictEqual(seen, [ask.id, ask.id, marker.id], "the question, asked again on connection 2, was dropped")
    }))
})
