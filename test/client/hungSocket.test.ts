/**
 * A broker that stops reading after `registered`, over a real Unix socket:
 * once the socket buffer is full, a write cannot finish. A request's timeout
 * covers its write as well as its answer, so `send` ends instead of waiting
 * forever, nor does a request queued behind it (the liveness probe is one).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option } from "effect"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient } from "./support.ts"

const A_ID = "aaaaaaaa-9999-4000-8000-00000000000a"

describe("a broker that stops reading", () => {
  it.live("a send whose frame the full socket cannot take ends with RequestTimeout within its timeout, and so does a list behind it", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"], hangAfterRegister: true })
      const { client } = yield* makeClient(fakeClientOptions(fake, A_ID, {
        sendTimeoutMs: 300,
        listTimeoutMs: 300,
        // Later than both timeouts: the requests' own timeouts are what ends them here.
        livenessIntervalMs: 60_000,
        reconnectBaseMs: 60_000
      }))
      yield* client.connect
      // Far more than a Unix socket buffers: the write waits for a reader that never comes.
      const sent = yield* client.send({ to: "someone", message: message("x".repeat(900_000)) }).pipe(
        Effect.exit,
        Effect.timeoutOption(Duration.seconds(20))
      )
      assert.isTrue(Option.isSome(sent), "the send was still waiting after 20 s")
      if (Option.isSome(sent)) assert.match(JSON.stringify(sent.value), /RequestTimeout/)
      const listed = yield* client.list.pipe(Effect.exit, Effect.timeoutOption(Duration.seconds(20)))
      assert.isTrue(Option.isSome(listed), "the list was still waiting after 20 s")
      if (Option.isSome(listed)) {
        assert.isTrue(Exit.isFailure(listed.value))
        assert.match(JSON.stringify(listed.value), /RequestTimeout/)
      }
    }))
})
