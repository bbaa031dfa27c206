/**
 * A held sender that leaves and returns while a takeover's custody hold
 * (CustodyHold.ts) withholds its departure from the holder: the holder hears
 * its held mail, then its `session_left` and new `session_joined` together,
 * then its mail from since the return — as a recipient does behind a
 * sender's parked output (WithheldDepartures' withheld return). Before the
 * fix the new join, written while the departure was withheld, stood for it:
 * the holder never heard the sender leave (its asks waiting on the departed
 * sender did not end, C-ASK-9), and heard the join before the held mail.
 * On a Router driven by hand, with the setups of
 * takeover-custody-order.test.ts (test/support/custodyHold.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { setUp } from "../support/custodyHold.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { orderLabel } from "../support/handRouter.ts"

/** A connection whose writes complete at once, noting its frames' labels (`orderLabel`) in `labels`. */
const labellingConnection = (id: number, labels: Array<string>): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    for (const frame of frames) labels.push(...orderLabel(frame))
    return undefined
  }
})

/**
 * `b` taken over by a connection noting its frames' labels (`orderLabel`)
 * in `labels`; `d`'s `m2` held behind the old custody. `flush` runs the
 * holder's writer; `comeBack` registers `d` again on a new connection and
 * sends `n1` to `b` from it; `drain` has the senders' drainers offer all
 * they parked.
 */
const heldSenderSetUp = Effect.gen(function*() {
  const setup = yield* setUp()
  const { attach, batch, register, router, send, sender } = setup
  const labels: Array<string> = []
  const holder = register(attach(labellingConnection(3, labels)), "b-2")
  const flush = (peer: Peer = holder): void => {
    for (const frame of router.output.writes.takeForWrite(peer).frames) labels.push(...orderLabel(frame))
  }
  flush()
  assert.isTrue(send(sender, "m2"), "m2 was not held: the test sets up nothing")
  const comeBack = (): Peer => {
    const back = attach(fakeConnection(9, false))
    batch(back, [registerFrame({ sessionId: "d" })])
    assert.strictEqual(back.session?.id, "d", "d did not register again: the test sets up nothing")
    batch(back, [{ type: "send", to: "b", message: message("n1") }])
    return back
  }
  const drain = (...readers: ReadonlyArray<Peer>): Effect.Effect<void> =>
    Effect.gen(function*() {
      for (const reader of readers) {
        for (let next = router.output.drain.nextParked(reader); next !== undefined; next = router.output.drain.nextParked(reader)) {
          yield* router.output.drain.offerParked(reader, next)
        }
      }
    })
  /** Another connection, writing its frames' labels into `labels`. */
  const labelling = (id: number, into: Array<string>): Peer => attach(labellingConnection(id, into))
  return { ...setup, comeBack, drain, flush, holder, labelling, labels }
})

describe("a held sender that leaves and returns before the custody hold ends", () => {
  it.effect("the holder's writer runs meanwhile: it hears the held mail, then the sender leave and join again, then its new mail", () =>
    Effect.gen(function*() {
      const { close, closeOld, comeBack, drain, flush, labels, sender } = yield* heldSenderSetUp
      close(sender)
      flush()
      const back = comeBack()
      flush()
      assert.deepStrictEqual(labels, [], "the holder heard of d before its held mail")
      closeOld()
      flush()
      yield* drain(back)
      flush()
      // Without the fix: ["joined d", "m0", "m1", "m2", "n1"].
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "left d", "joined d", "n1"])
    }))

  it.effect("the holder's writer does not run until the hold ends: the same order", () =>
    Effect.gen(function*() {
      const { close, closeOld, comeBack, drain, flush, labels, sender } = yield* heldSenderSetUp
      close(sender)
      const back = comeBack()
      closeOld()
      flush()
      yield* drain(back)
      flush()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "left d", "joined d", "n1"])
    }))

  it.effect("the sender leaves again before the hold ends: one session_left, after the held mail and the mail from its return", () =>
    Effect.gen(function*() {
      const { close, closeOld, comeBack, drain, flush, labels, sender } = yield* heldSenderSetUp
      close(sender)
      flush()
      const back = comeBack()
      flush()
      close(back)
      flush()
      closeOld()
      flush()
      yield* drain(back)
      flush()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "n1", "left d"])
    }))

  it.effect("the holder is taken over while the return is withheld: the next connection hears the held mail, then d leave and join again, then its new mail", () =>
    Effect.gen(function*() {
      const { close, closeOld, comeBack, drain, flush, labelling, register, router, sender } = yield* heldSenderSetUp
      close(sender)
      flush()
      const back = comeBack()
      flush()
      const labels: Array<string> = []
      const third = register(labelling(5, labels), "b-3")
      const flushThird = (): void => {
        for (const frame of router.output.writes.takeForWrite(third).frames) labels.push(...orderLabel(frame))
      }
      flushThird()
      closeOld()
      flushThird()
      yield* drain(back)
      flushThird()
      assert.strictEqual(third.session?.id, "b", "the third connection does not hold b: the test sets up nothing")
      // The return moves with the carried hold (WithheldDepartures.takenOver), as any withheld return does:
      // owed at the takeover it would come first (["left d", "joined d", "m0", ...]); dropped, never (review revhs).
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "left d", "joined d", "n1"])
    }))

  it.effect("the holder is taken over, then the returned sender leaves again before the hold ends: the next connection hears one session_left, last", () =>
    Effect.gen(function*() {
      const { close, closeOld, comeBack, drain, labelling, register, router, sender } = yield* heldSenderSetUp
      close(sender)
      const back = comeBack()
      const labels: Array<string> = []
      const third = register(labelling(5, labels), "b-3")
      const flushThird = (): void => {
        for (const frame of router.output.writes.takeForWrite(third).frames) labels.push(...orderLabel(frame))
      }
      flushThird()
      close(back)
      flushThird()
      closeOld()
      flushThird()
      yield* drain(back)
      flushThird()
      assert.deepStrictEqual(labels, ["m0", "m1", "m2", "n1", "left d"])
    }))
})
