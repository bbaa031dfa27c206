/**
 * A reader's own items offered ahead of a head that waits (ParkedDrain.offerOwnAhead),
 * with running fibers: the real broker core on the in-memory network, its
 * drainers, writers and output fiber at work, time the TestClock's (each
 * client action is a step that runs until the world is idle, support/memory.ts).
 * A session's sends to `stuck`, which never reads, wait at the head of its
 * parked list; what is addressed to the session itself behind them — a reply
 * forced there, the settling answer parked behind it, a `list` answer that met
 * its own full outbox — reaches it once it reads, while the sends stay parked.
 * Without the drainer's offer ahead (and its wake at the batch's end, for an
 * item that joins while it waits) they waited for `stuck` to read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { patientClock } from "../support/memory.ts"
import { listParkedBehind, replyForcedBehind, sendsTo } from "../support/ownAhead.ts"

const EXPIRY = [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1]

describe("own items ahead of a head that waits on a session that does not read, with running fibers", () => {
  it.effect("a reply forced behind the asker's sends to a session that does not read reaches it, and the settling answer follows it", () =>
    patientClock(Effect.gen(function*() {
      const { asker, question } = yield* replyForcedBehind(EXPIRY, sendsTo("stuck", 12, "m"))
      const reply = yield* asker.next("message", (frame) => frame.message.replyTo === question.id)
      const settled = yield* asker.next("sessions", (frame) => frame.requestId === "settle")
      const order = asker.received().filter((frame) => frame === reply || frame === settled)
      assert.deepStrictEqual(order.map((frame) => frame.type), ["message", "sessions"])
      // The sends to `stuck` still wait for it, and the acks of those read with the registration behind them.
      assert.strictEqual(asker.count("delivered"), 0)
      // And a later probe is answered at once.
      yield* asker.send({ type: "list", requestId: "probe", limit: 1 })
      yield* asker.next("sessions", (frame) => frame.requestId === "probe")
    })))

  it.effect("a list answer that met the session's own full outbox while its sends wait on a session that does not read reaches it once it reads", () =>
    patientClock(Effect.gen(function*() {
      const asker = yield* listParkedBehind(sendsTo("stuck", 12, "m"))
      yield* asker.resume
      yield* asker.next("sessions", (frame) => frame.requestId === "probe")
      assert.isBelow(asker.count("delivered"), 12, "the sends to `stuck` still wait for it")
    })))
})
