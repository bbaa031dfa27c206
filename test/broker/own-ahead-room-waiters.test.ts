/**
 * Review revc (merge "stuck", S3): while the head of a reader's parked list
 * waits on another session's room and an item for the reader itself, offered
 * ahead of it, waits on the reader's own full outbox, a retry of the head
 * (woken by `Peer.drainWait`: Output.ownJoined, or the other outbox's room)
 * neither pushes another wait onto the reader's `roomWaiters` nor looks
 * ahead again (ParkedDrain.offerOwnAhead, `Peer.ownWait`); the own item is
 * still offered once the reader's writer makes room.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import { frameText } from "../../src/protocol/framing.ts"
import { message } from "../support/broker.ts"
import { typedSessions } from "../support/frameTypes.ts"
import { handRouter } from "../support/handRouter.ts"

const sendsTo = (to: string, count: number, text: string) =>
  Array.from({ length: count }, (_, i) => ({ type: "send", to, message: message(`${text} ${i}`) }))

describe("own items offered ahead of a head that waits elsewhere", () => {
  it.effect("retries of the head push no further wait onto the reader's room waiters, and the own item goes once the reader reads", () =>
    Effect.gen(function*() {
      const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2 })
      const session = typedSessions({ attach, batch })
      session("stuck", [])
      const asker = session("asker", [])
      assert.isTrue(batch(asker.peer, sendsTo("stuck", 6, "m")), "nothing parked: the test sets up nothing")
      // The asker's outbox is full (its acks); its list answer is parked behind the sends.
      batch(asker.peer, [{ type: "list", requestId: "probe", limit: 1 }])
      const drain = router.output.drain
      const fiber = Effect.runFork(drain.offerParked(asker.peer, drain.nextParked(asker.peer)!))
      for (let retry = 0; retry < 10; retry++) {
        const wait = asker.peer.drainWait
        assert.isDefined(wait, `retry ${retry}: the drainer does not wait on its head`)
        // What Output.wakeDrainers does when an item that may go ahead joins the list.
        Deferred.doneUnsafe(wait, Exit.void)
        yield* Effect.yieldNow
      }
      assert.isDefined(asker.peer.drainWait, "the head no longer waits")
      const waiters = asker.peer.roomWaiters?.length ?? 0
      assert.isAtMost(waiters, 1, `the asker's room waiters after 10 retries: ${waiters}`)
      // The asker reads: the list answer goes ahead of the sends, which still wait for `stuck`.
      const first = router.output.writes.takeForWrite(asker.peer).frames.map(frameText)
      assert.notInclude(first.join("\n"), `"sessions"`)
      yield* Effect.yieldNow
      const next = router.output.writes.takeForWrite(asker.peer).frames.map(frameText)
      assert.isTrue(next.some((text) => text.startsWith(`{"type":"sessions"`)), `written: ${next.join(",")}`)
      yield* Fiber.interrupt(fiber)
    }))
})
