/**
 * `ephemeral-v1`: a short-lived session (the CLI's one-shot commands) is
 * forgotten when it leaves. Nothing sent to its name or id afterwards is
 * queued for it (P34/P49 remember other sessions a day), and no later
 * session of the same name and directory inherits mail meant for it. A
 * client that does not ask for the extension keeps the base behaviour, with
 * or without the field.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EPHEMERAL_V1 } from "../../src/protocol/features.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { message, register, send } from "../support/broker.ts"
import { withMemoryBroker } from "../support/memory.ts"

describe("ephemeral-v1: a short-lived session is forgotten when it leaves", () => {
  it.effect("after it leaves, a send to its name or id is not found, not queued", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const once = yield* broker.session({
        sessionId: "once-1",
        name: "dave",
        frame: { features: [EPHEMERAL_V1], ephemeral: true }
      })
      assert.include(once.registered.features ?? [], EPHEMERAL_V1)
      // While it runs it is a session like any other.
      assertDelivered(yield* send(sender.client, "dave", message("while it runs")))
      yield* once.client.destroy
      yield* sender.client.next("session_left")
      assertFailed(yield* send(sender.client, "dave", message("after it ended")), "E_TARGET_NOT_FOUND", "Session not found")
      assertFailed(yield* send(sender.client, "once-1", message("after it ended")), "E_TARGET_NOT_FOUND", "Session not found")
    }))

  it.effect("it has no mailbox identity: mail queued for a departed session of its name and directory waits for that one", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      // A session that stays (a watch, pi) leaves mail behind it for its next self; an ephemeral one of the
      // same name and directory, run in between, is not given it.
      const watch = yield* broker.session({ sessionId: "watch-1", name: "dave", cwd: "/work" })
      yield* watch.client.destroy
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "dave", message("for dave's watch")), "queued")
      const once = yield* broker.session({
        sessionId: "once-2",
        name: "dave",
        cwd: "/work",
        frame: { features: [EPHEMERAL_V1], ephemeral: true }
      })
      yield* settled([once.client]) // the registration's flush has been read
      yield* once.client.expectNothing("message")
      yield* once.client.destroy
      const back = yield* broker.connect("back")
      yield* register(back, { sessionId: "watch-2", name: "dave", cwd: "/work" })
      assert.strictEqual((yield* back.next("message")).message.content.text, "for dave's watch")
    }))

  it.effect("an ephemeral registration that takes a live session's id over (P16) is that session: remembered when it leaves", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      yield* broker.session({ sessionId: "kept-1", name: "frank" })
      const taker = yield* broker.session({
        sessionId: "kept-1",
        name: "frank",
        frame: { features: [EPHEMERAL_V1], ephemeral: true }
      })
      yield* taker.client.destroy
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "frank", message("for frank's next self")), "queued")
    }))

  it.effect("without the extension the field is ignored: the session is remembered and mail is queued for it", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker()
      const sender = yield* broker.session({ sessionId: "sender", name: "sender" })
      const base = yield* broker.session({ sessionId: "base-1", name: "erin", frame: { ephemeral: true } })
      assert.notInclude(base.registered.features ?? [], EPHEMERAL_V1)
      yield* base.client.destroy
      yield* sender.client.next("session_left")
      assertDelivered(yield* send(sender.client, "erin", message("queued for erin")), "queued")
    }))
})
