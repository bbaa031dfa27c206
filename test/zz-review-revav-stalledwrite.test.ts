/**
 * Review revav AV4 probe (the AS1 loss, left open where timeouts really
 * happen): a send whose timeout fires while its frame is in a transport
 * write the socket has not taken whole (a broker not reading: the common
 * cause of a send timeout) is FORGOTTEN, not abandoned — ClientConnection.ts
 * `send` forgets on any interruption of `writeText` (the outbox could not
 * withdraw the frame, and `writeText` passes no `takenBack`). The link then
 * dies with that write unfinished: the broker never read the question, and
 * the next connection does not write it again, so it is lost, its caller
 * told only "may or may not have been delivered". fixas abandons (and
 * re-sends) only a send whose write had completed.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { message } from "./support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, stallingDial } from "./client/support.ts"

const SENDER = "cccccccc-5555-4000-8000-00000000000c"

describe("revav AV4: a send that timed out inside an unfinished write, then the link died", () => {
  it.live("is written again on the next connection", () =>
    Effect.gen(function*() {
      const question = message("still there?", { expectsReply: true })
      const { cut, dial, stall, stalled } = stallingDial("send")
      const fake = yield* fakeBroker({ detailedSendAnswers: true })
      const { client } = yield* makeClient(fakeClientOptions(fake, SENDER, { sendTimeoutMs: 300, reconnectBaseMs: 10, dial }))
      yield* client.connect
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
})
