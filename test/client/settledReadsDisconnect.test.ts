/**
 * A settling round trip (`settleRoundTrip`, `ask-expiry-v1`) answered while
 * a message read before the answer is unhandled waits for it to be handled
 * (`settledReads`, IntercomClient.ts), for at most the liveness timeout —
 * and no longer than until `disconnect`: nobody handles what a closed client
 * read (SettleRoundTrip.ts: it answers at once when closed, also while it
 * waits).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { ASK_EXPIRY_V1, EXACT_SEND_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { settle, step } from "../support/memory.ts"
import { makeMemoryClient, memoryClientOptions, memoryFakeBroker } from "./support.ts"

const ID = "dddddddd-0000-4000-8000-0000000000e3"

describe("a settling round trip's wait for the reads before its answer", () => {
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
    })

  it.effect("handling the reply read ahead of the answer ends it", () =>
    roundTrip(true))

  it.effect("disconnect ends it at once, the reply still unhandled", () =>
    roundTrip(false))
})
