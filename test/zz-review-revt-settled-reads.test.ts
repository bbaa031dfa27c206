/**
 * Review revt, T3 (probe; fails on main at 4c832ea5). `settledReads`
 * (IntercomClient.ts: `unhandled.caughtUp` for at most the liveness timeout)
 * is not raced with the stop signal: a settling round trip (`settleRoundTrip`,
 * an ask's verdict at its deadline) answered by the broker while a message
 * read before the answer is unhandled goes on waiting up to
 * `livenessTimeoutMs` (5 s) after `disconnect`, though nobody will handle it
 * on a closed client. The same wait follows `askExpiry`'s notice.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { ASK_EXPIRY_V1, EXACT_SEND_V1, LIST_PAGE_V1 } from "../src/protocol/features.ts"
import { advance, settle, step } from "./support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker } from "./client/support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e3"

describe("review revt T3", () => {
  const roundTrip = (handleFirst: boolean) =>
    Effect.gen(function*() {
      let lists = 0
      const fake = yield* memoryFakeBroker({
        features: [EXACT_SEND_V1, LIST_PAGE_V1, ASK_EXPIRY_V1],
        beforeList: () =>
          lists++ === 0
            ? [{
              type: "message",
              from: { id: "peer", cwd: "/tmp", model: "m", pid: 1, startedAt: 0, lastActivity: 0 },
              message: { id: "re-q-1", timestamp: 0, content: { text: "accepted before the deadline" }, replyTo: "q-1" }
            }]
            : []
      })
      const { client } = yield* makeMemoryClient(memoryClientOptions(fake, ID))
      yield* settle(client.connect)
      const settling = yield* step(client.settleRoundTrip)
      assert.strictEqual(fake.ofType("list").length, 1, "the round trip was not made")
      assert.isUndefined(settling.pollUnsafe(), "the round trip did not wait for the reply read ahead of its answer")
      if (handleFirst) {
        // (control) handling the reply ends the wait at once: it is the wait for handling that holds the round trip.
        const head = yield* settle(Stream.runHead(client.messages))
        if (head._tag === "Some") yield* settle(client.handled(head.value))
        assert.isDefined(settling.pollUnsafe(), "the round trip waits on something else than the handling")
        return
      }
      yield* settle(client.disconnect)
      assert.isDefined(settling.pollUnsafe(), "the round trip still waits after disconnect")
      yield* advance("5 seconds") // (it ends by itself at the liveness timeout)
    })

  it.effect("(control, passes on main) handling the reply read ahead of the answer ends the round trip's wait", () =>
    roundTrip(true))

  it.effect("disconnect ends a settling round trip's wait for the messages read before its answer to be handled", () =>
    roundTrip(false))
})
