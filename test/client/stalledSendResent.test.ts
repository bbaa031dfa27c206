/**
 * A question whose send timed out while its frame was in a transport write the socket had not taken whole
 * (a broker not reading: the usual cause of a send timeout) is abandoned, not forgotten — the outbox could not
 * take it back — so when the link dies with that write unfinished, the next connection writes it again for the
 * ask still settling with the broker: never read by any broker, it would otherwise be lost. Review `revav` AV4.
 * The same for a question still queued behind that write when its timeout came: the caller's timeout does not
 * take it back (review `revax` AX-A2).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, stallingDial } from "./support.ts"

const SENDER = "cccccccc-5555-4000-8000-00000000000c"

describe("a question whose send timed out behind or inside an unfinished write, then the link died", () => {
  it.live("is written again on the next connection", () =>
    Effect.gen(function*() {
      const question = message("still there?", { expectsReply: true })
      const { cut, dial, stall, stalled } = stallingDial("send")
      const fake = yield* fakeBroker({ detailedSendAnswers: true })
      const { client } = yield* makeClient(fakeClientOptions(fake, SENDER, { sendTimeoutMs: 300, reconnectBaseMs: 10, dial }))
      yield* client.connect
      // An ask settling with the broker watches its question's verdict (Ask.ts): that is what a lost question costs.
      yield* Effect.asVoid(client.lateVerdict({ to: "peer", message: question }))
      stall()
      const sending = yield* Effect.forkScoped(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
      yield* Deferred.await(stalled)
      const sent = yield* Fiber.join(sending)
      assert.isTrue(Exit.isFailure(sent), "setup: the send was expected to time out")
      assert.strictEqual(fake.ofType("send").length, 0, "setup: the broker read the stalled send")
      yield* cut
      yield* fake.until("the client reconnected", () => fake.connections() >= 2)
      // A round trip on the new connection: anything the client writes again on it is written before this.
      yield* client.list
      const resent = fake.ofType("send").filter((f) => JSON.stringify(f.frame).includes(question.id))
      assert.strictEqual(resent.length, 1, "the question, never read by any broker, was not written again: lost")
    }))

  it.live("queued behind the unfinished write when its timeout came: kept, not taken back, and written again on the next connection", () =>
    Effect.gen(function*() {
      const plain = message("first, stalls in the socket")
      const question = message("still there?", { expectsReply: true })
      const { cut, dial, stall, stalled } = stallingDial("send")
      const fake = yield* fakeBroker({ detailedSendAnswers: true })
      const { client } = yield* makeClient(
        fakeClientOptions(fake, "cccccccc-5555-4000-8000-00000000000d", { sendTimeoutMs: 300, reconnectBaseMs: 10, dial })
      )
      yield* client.connect
      yield* Effect.asVoid(client.lateVerdict({ to: "peer", message: question }))
      stall()
      const first = yield* Effect.forkScoped(Effect.exit(client.send({ to: "peer", message: plain })), { startImmediately: true })
      yield* Deferred.await(stalled)
      // The question's frame queues behind the write the socket has not taken when its send times out.
      const asking = yield* Effect.forkScoped(Effect.exit(client.send({ to: "peer", message: question })), { startImmediately: true })
      assert.isTrue(Exit.isFailure(yield* Fiber.join(first)), "setup: the first send was expected to time out")
      assert.isTrue(Exit.isFailure(yield* Fiber.join(asking)), "setup: the question's send was expected to time out")
      assert.strictEqual(fake.ofType("send").length, 0, "setup: the broker read a stalled send")
      yield* cut
      yield* fake.until("the client reconnected", () => fake.connections() >= 2)
      yield* client.list
      const resent = fake.ofType("send").filter((f) => JSON.stringify(f.frame).includes(question.id))
      assert.strictEqual(resent.length, 1, "the question an ask still settles on, never read by any broker, was not written again: lost")
    }))
})
