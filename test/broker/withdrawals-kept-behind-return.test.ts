/**
 * A withdrawn message forced behind a withheld return's old output — parked
 * at a THIRD reader's list, neither its sender's current connection nor its
 * receiver's (ForcedOutput.parkBehindReturn) — still counts as waiting when
 * its sender cancels it (MayStillWait.ts's `mayStillWait` through
 * `Output.parksWithdrawn`, which scans every parked reader's list): the
 * withdrawal outlives the route's hour, and the message, given back to the
 * mailbox as its receiver leaves, never reaches the receiver's next
 * connection (review revay, the family of AY2).
 *
 * `d` sends `o1` to `b` (whose outbox is full) and unregisters in the same
 * batch: `o1` parks with that connection's drainer (`first`). `d` registers
 * again and sends `n1`, which waits for the pair; that connection closes,
 * forcing `n1` behind `o1` at `first`. `d` registers a third time and
 * cancels `n1`. Hand-driven Router (handRouter.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

const HOUR = 3_600_000

interface Frame {
  readonly type: string
  readonly messageId?: string
  readonly message?: { readonly id: string }
}

describe("a cancelled message parked behind a withheld return's old output", () => {
  it.effect("n1, parked at d's first connection and cancelled from its third, never reaches b's next connection", () =>
    Effect.gen(function*() {
      const clock = { now: 1_000_000 }
      const { attach, batch, close, router, tryDrain } = yield* handRouter(
        { outboxCapacity: 2, mailboxRetention: 24 * HOUR },
        () => clock.now
      )
      const writes = new Map<Peer, Array<Frame>>()
      /** A connection whose writes complete at once, each frame kept, parsed. */
      const recorded = (id: number): Peer => {
        const frames: Array<Frame> = []
        const peer = attach({
          ...fakeConnection(id, false),
          write: (out: ReadonlyArray<OutFrame>) => {
            for (const frame of out) frames.push(JSON.parse(frameText(frame)))
            return undefined
          }
        })
        writes.set(peer, frames)
        return peer
      }
      const written = (peer: Peer): ReadonlyArray<Frame> => {
        peer.writer.flush()
        return writes.get(peer) ?? []
      }
      // b's writes never complete: its outbox empties only when the test writes it.
      const conn: Connection = { ...fakeConnection(1, false), write: () => Effect.never }
      const b = attach(conn)
      batch(b, [registerFrame({ sessionId: "b" })])
      const e = attach(fakeConnection(2, false))
      batch(e, [registerFrame({ sessionId: "e" })])
      const first = attach(fakeConnection(3, false))
      batch(first, [registerFrame({ sessionId: "d" })])
      // b's writer takes the answer to its register: its outbox is empty, and holds two frames at most.
      router.output.writes.takeForWrite(b)
      batch(e, [{ type: "send", to: "b", message: message("e0") }, { type: "send", to: "b", message: message("e1") }])
      const o1 = message("o1")
      assert.isTrue(
        batch(first, [{ type: "send", to: "b", message: o1 }, { type: "unregister" }]),
        "o1 was not parked: the test sets up nothing"
      )
      const second = attach(fakeConnection(4, false))
      batch(second, [registerFrame({ sessionId: "d" })])
      assert.strictEqual(b.returnWaits?.size, 1, "b withholds no return of d's: the test sets up nothing")
      const n1 = message("n1")
      assert.isTrue(batch(second, [{ type: "send", to: "b", message: n1 }]), "n1 did not wait: the test sets up nothing")
      close(second)
      const parksN1 = (peer: Peer) =>
        peer.parked.some(([, item]) => typeof item === "object" && "mail" in item && item.mail.message.id === n1.id)
      assert.isTrue(parksN1(first), "n1 is not parked behind o1 at d's first connection: the test sets up nothing")
      const third = recorded(5)
      batch(third, [registerFrame({ sessionId: "d" })])
      batch(third, [{ type: "cancel_message", messageId: n1.id }])
      assert.isTrue(parksN1(first), "n1 left d's first connection at the cancel: the test's premise is wrong")
      clock.now += HOUR + 1_000
      router.prune(clock.now)
      close(b)
      for (let n = 0; n < 10 && tryDrain(first); n++) {
        // each step offers one parked item
      }
      for (let n = 0; n < 10 && tryDrain(third); n++) {
        // each step offers one parked item
      }
      const answers = written(third).filter((f) => f.messageId === n1.id).map((f) => f.type)
      const next = recorded(6)
      batch(next, [registerFrame({ sessionId: "b" })])
      // Its mailbox flush may park past its outbox: offered until nothing moves.
      for (let n = 0; n < 20 && tryDrain(next); n++) written(next)
      const seen = written(next).flatMap((f) => f.type === "message" ? [f.message?.id] : [])
      assert.include(seen, o1.id, `o1, never written, did not come back: the test checks nothing (${seen})`)
      assert.deepStrictEqual(answers, ["delivered"], "d's cancel of n1 was not answered delivered")
      assert.notInclude(seen, n1.id, "n1, cancelled while parked behind o1 at d's first connection, reached b's next connection")
    }))
})
