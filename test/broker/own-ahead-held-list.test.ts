/**
 * Review revc (merge "stuck", S1): a `list` the session sends while a `list`
 * answer of its own is parked behind its sends to a session that does not
 * read is held (PeerReader.whileHeldBack: `parksAnswerFor`). Once the drainer
 * offers that answer ahead of the sends (ParkedDrain.offerOwnAhead), or
 * before them when it is the head of the list, the held `list` is answered
 * too (PeerReader.answerHeldReads), not once the whole parked list drains:
 * the session's liveness probe is such a `list`, and its client would
 * otherwise drop the connection.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFrames } from "../../src/protocol/index.ts"
import { patientClock, withMemoryBroker } from "../support/memory.ts"
import { listParkedBehind, sendsTo, small } from "../support/ownAhead.ts"

describe("a list held behind a parked list answer", () => {
  it.effect("is answered once that answer went ahead of sends to a session that does not read, while those sends still wait", () =>
    patientClock(Effect.gen(function*() {
      // Its first list's answer meets its full outbox: parked behind its sends to `stuck`.
      const asker = yield* listParkedBehind(sendsTo("stuck", 12, "m"))
      // A second list (the next liveness probe) comes while that answer is parked: held.
      yield* asker.send({ type: "list", requestId: "probe2", limit: 1 })
      yield* asker.resume
      yield* asker.next("sessions", (frame) => frame.requestId === "probe")
      assert.isBelow(asker.count("delivered"), 12, "the sends to `stuck` still wait for it")
      // The first answer went ahead of the sends; the second list should be answered too.
      yield* asker.next("sessions", (frame) => frame.requestId === "probe2")
      assert.isBelow(asker.count("delivered"), 12, "the sends to `stuck` still wait for it")
    })))

  it.effect("is answered once that answer, parked at the head of the list, was written, while sends behind it still wait", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker(small)
      const stuck = yield* broker.session({ sessionId: "stuck" })
      yield* stuck.client.pause
      const bystander = yield* broker.session({ sessionId: "bystander" })
      const filler = yield* broker.session({ sessionId: "filler" })
      const asker = yield* broker.session({ sessionId: "asker" })
      // `stuck`'s outbox and link are full of another sender's mail: the asker's sends to it will wait.
      yield* filler.client.sendRaw(encodeFrames(sendsTo("stuck", 12, "f")))
      yield* asker.client.pause
      for (const text of sendsTo("asker", 10, "mail")) yield* bystander.client.sendText(text)
      // One batch: its list's answer meets its full outbox and is parked first, its sends to `stuck` behind it.
      const list = JSON.stringify({ type: "list", requestId: "probe", limit: 1 })
      yield* asker.client.sendRaw(encodeFrames([list, ...sendsTo("stuck", 3, "m")]))
      // A round trip of the bystander's, so that the next list comes in a batch of its own.
      yield* bystander.client.send({ type: "list", requestId: "between", limit: 1 })
      yield* bystander.client.next("sessions", (frame) => frame.requestId === "between")
      // A second list (the next liveness probe) comes while that answer is parked: held.
      yield* asker.client.send({ type: "list", requestId: "probe2", limit: 1 })
      yield* asker.client.resume
      yield* asker.client.next("sessions", (frame) => frame.requestId === "probe")
      yield* asker.client.next("sessions", (frame) => frame.requestId === "probe2")
      assert.strictEqual(asker.client.count("delivered"), 0, "the sends to `stuck` still wait for it")
    })))
})
