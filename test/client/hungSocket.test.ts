/**
 * A broker that stops reading after `registered`, over a real Unix socket:
 * once the socket buffer is full, a write cannot finish. A request's timeout
 * covers its write as well as its answer, so `send` ends instead of waiting
 * forever, nor does a request queued behind it (the liveness probe is one).
 * A request such a broker never answers names the broker's pid and what to
 * try (a frozen broker: resume it, or stop it).
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Option } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
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

  it.live("a list or send the broker does not answer names the broker's pid (from broker.pid, a live process) and what to try", () =>
    Effect.gen(function*() {
      const fake = yield* fakeBroker({ features: ["exact-send-v1"], answerList: false, holdSendAnswers: true })
      fs.mkdirSync(fake.intercomDir, { recursive: true })
      // A live process stands in for the frozen broker: this test's own.
      fs.writeFileSync(path.join(fake.intercomDir, "broker.pid"), `${process.pid}\n`)
      const { client } = yield* makeClient(fakeClientOptions(fake, A_ID, {
        sendTimeoutMs: 200,
        listTimeoutMs: 200,
        livenessIntervalMs: 60_000,
        reconnectBaseMs: 60_000
      }))
      yield* client.connect
      const advice = (ms: number) =>
        `The intercom broker (pid ${process.pid}) did not answer on ${fake.socketPath} within ${ms} ms: it may be ` +
        `stopped (SIGSTOP), swapping, or paused in a debugger. Resume it (kill -CONT ${process.pid}), or stop it ` +
        `(kill ${process.pid}) and try again.`
      const listed = yield* Effect.flip(client.list)
      assert.strictEqual(listed.message, `List sessions timeout. ${advice(200)}`)
      const sent = yield* Effect.flip(client.send({ to: "someone", message: message("x") }))
      assert.strictEqual(sent.message, `Send timeout. ${advice(200)}`)
    }))
})
