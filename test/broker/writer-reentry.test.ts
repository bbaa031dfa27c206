/**
 * A writer's synchronous flush takes its outbox (`OutputWrites.takeForWrite`),
 * which makes room and wakes a drainer waiting for it; the woken fiber runs
 * at once, inside that call (`Deferred.doneUnsafe` resumes it inline), queues
 * its offer in the same outbox and calls the same writer's `flush` — while
 * the batch taken first is not handed to the socket yet. That nested flush
 * must leave the newer message to the outer one, or it reaches the socket
 * ahead of the older ones (PeerWriter's `writing`). On a Router driven by
 * hand: the recipient's outbox is full and its writer idle when the drainer
 * offers (as between output queued outside a batch and the output fiber's
 * flush of it), then the writer flushes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { frameText } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

describe("a drainer woken inside its recipient's flush", () => {
  it.effect("its message is written after the batch that flush took, in the order the sender sent them", () =>
    Effect.gen(function*() {
      const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2 })
      const output = router.output
      const written: Array<string> = []
      const recording: Connection = {
        ...fakeConnection(1, false),
        write: (frames) => {
          for (const frame of frames) {
            const parsed: { type: string; message?: { content: { text: string } } } = JSON.parse(frameText(frame))
            if (parsed.type === "message") written.push(`${parsed.message?.content.text}`)
          }
          return undefined
        }
      }
      const recipient = attach(recording)
      batch(recipient, [registerFrame({ sessionId: "recipient" })])
      const sender = attach(fakeConnection(2, false))
      batch(sender, [registerFrame({ sessionId: "sender" })])
      // One batch of the sender's fills the recipient's outbox (m0, m1) and parks m2; no flush yet.
      output.startBatch()
      router.handleBatch(sender, [0, 1, 2].map((i) => JSON.stringify({ type: "send", to: "recipient", message: message(`m${i}`) })))
      assert.isTrue(output.parkFor(sender), "nothing was parked: the test sets up nothing")
      const next = output.drain.nextParked(sender)
      if (next === undefined) return assert.fail("no parked item")
      // The sender's drainer offers m2 to the full outbox and waits for room.
      const drainer = yield* Effect.forkChild(output.drain.offerParked(sender, next))
      yield* Effect.yieldNow
      assert.strictEqual(recipient.roomWaiters?.length, 1, "the drainer is not waiting for room")
      // The batch ends: the recipient's idle writer flushes, and its take wakes the drainer.
      output.endBatch()
      yield* Fiber.await(drainer)
      assert.deepStrictEqual(written, ["m0", "m1", "m2"])
    }))
})
