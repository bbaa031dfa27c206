/**
 * A watcher that saw a session join always hears it leave, however the
 * session's changes fold together before the watcher's writer collects the
 * membership feed (MembershipFeed.ts: one entry per continuous presence,
 * `presentSince`). Real sockets: the session's changes arrive in one read
 * batch, so all of them are in the feed before the watcher collects.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrames } from "../../src/protocol/index.ts"
import { settled } from "../support/barrier.ts"
import { list, membershipView, registerFrame, withBroker } from "../support/broker.ts"

describe("membership departures", () => {
  it.live("a known session taken over and gone before the watcher collects reaches it as session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      yield* broker.session({ sessionId: "flapper" })
      yield* watcher.client.next("session_joined", (f) => f.session.id === "flapper")
      // Takeover (P16) and leave in one batch: the watcher collects both at once.
      const successor = yield* broker.connect("flapper-again")
      yield* successor.sendRaw(encodeFrames([
        JSON.stringify(registerFrame({ sessionId: "flapper" })),
        JSON.stringify({ type: "unregister" })
      ]))
      yield* settled([successor], [watcher.client])
      assert.deepStrictEqual([...membershipView(watcher.client.received()).keys()], [])
      assert.deepStrictEqual((yield* list(watcher.client)).map((s) => s.id), ["watcher"])
    }))

  it.live("a known session that leaves, joins again and leaves again before the watcher collects reaches it as session_left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const flapper = yield* broker.connect("flapper")
      yield* flapper.sendRaw(encodeFrames([JSON.stringify(registerFrame({ sessionId: "flapper" }))]))
      yield* watcher.client.next("session_joined", (f) => f.session.id === "flapper")
      // Leave, join again and leave again in one batch: the watcher collects all three at once.
      yield* flapper.sendRaw(encodeFrames([
        JSON.stringify({ type: "unregister" }),
        JSON.stringify(registerFrame({ sessionId: "flapper" })),
        JSON.stringify({ type: "unregister" })
      ]))
      yield* settled([flapper], [watcher.client])
      assert.deepStrictEqual([...membershipView(watcher.client.received()).keys()], [])
      // The flapper registered twice on one connection: both registrations were taken.
      assert.strictEqual(flapper.received().filter((f) => f.type === "registered").length, 2)
    }))
})
