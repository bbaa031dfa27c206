/**
 * A control frame (a cancel, a supersede: ControlFrame.ts) from a sender
 * whose departure and return a recipient withholds (`Peer.returnWaits`,
 * WithheldDepartures.ts) is held back like that sender's mail from since
 * its return: it must not reach the recipient ahead of the message it is
 * about, still parked behind the return's old output (C-ORD).
 *
 * `d` sends `o1` to `b` (whose outbox is full) and unregisters in the same
 * batch: `o1` parks with that connection's drainer. `d` registers again and
 * sends `n1`, which waits for the pair; that connection closes, forcing
 * `n1` behind `o1`. `d` registers a third time and cancels `n1` (or
 * supersedes it). On a Router driven by hand (handRouter.ts): `b`'s writer
 * runs, and each drainer offers, only when the test says.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

/** `orderLabel`, and a control frame as `<action> <text of the message it is about>`. */
const labeller = (texts: ReadonlyMap<string, string>) => (frame: OutFrame): Array<string> => {
  const parsed: { type: string; control?: { action: string; messageId: string } } = JSON.parse(frameText(frame))
  if (parsed.type === "message_control") {
    return [`${parsed.control?.action} ${texts.get(parsed.control?.messageId ?? "") ?? "?"}`]
  }
  return orderLabel(frame)
}

/** The set-up of the module header, up to `d`'s third registration; `n1`'s id named for the labels. */
const returnWithheld = () =>
  Effect.gen(function*() {
    const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
    const texts = new Map<string, string>()
    const label = labeller(texts)
    const labels: Array<string> = []
    // b's writes never complete: its outbox empties only when the test writes it (`flush`).
    const conn: Connection = { ...fakeConnection(1, false), write: () => Effect.never }
    const b = attach(conn)
    batch(b, [registerFrame({ sessionId: "b" })])
    const flush = (): void => {
      router.membership.notify()
      for (const frame of router.output.writes.takeForWrite(b).frames) labels.push(...label(frame))
    }
    const e = attach(fakeConnection(2, false))
    batch(e, [registerFrame({ sessionId: "e" })])
    const first = attach(fakeConnection(3, false))
    batch(first, [registerFrame({ sessionId: "d" })])
    flush()
    labels.length = 0
    batch(e, [{ type: "send", to: "b", message: message("e0") }, { type: "send", to: "b", message: message("e1") }])
    assert.isTrue(
      batch(first, [{ type: "send", to: "b", message: message("o1") }, { type: "unregister" }]),
      "o1 was not parked: the test sets up nothing"
    )
    const second = attach(fakeConnection(4, false))
    batch(second, [registerFrame({ sessionId: "d" })])
    assert.strictEqual(b.returnWaits?.size, 1, "b withholds no return of d's: the test sets up nothing")
    const n1 = message("n1")
    texts.set(n1.id, "n1")
    assert.isTrue(batch(second, [{ type: "send", to: "b", message: n1 }]), "n1 did not wait: the test sets up nothing")
    close(second)
    const third = attach(fakeConnection(5, false))
    batch(third, [registerFrame({ sessionId: "d" })])
    // b's writer makes room: a control routed now finds b's outbox with room.
    flush()
    /** The drainers offer, and b's writer runs, until nothing moves. */
    const settle = (...readers: ReadonlyArray<Peer>): void => {
      for (let round = 0; round < 4; round++) {
        for (const reader of readers) while (tryDrain(reader)) { /* offered */ }
        flush()
      }
    }
    return { batch, close, first, labels, n1, settle, texts, third }
  })

describe("a control frame behind a withheld return", () => {
  it.effect("a cancel of n1 from d's next return waits like d's mail: b reads o1, n1, the pair, then the cancel", () =>
    Effect.gen(function*() {
      const { batch, first, labels, n1, settle, third } = yield* returnWithheld()
      batch(third, [{ type: "cancel_message", messageId: n1.id }])
      settle(third, first)
      assert.deepStrictEqual(labels, ["e0", "e1", "o1", "n1", "left d", "joined d", "cancel n1"])
    }))

  it.effect("a supersede of n1 from d's next return: b reads n1 before the supersede, and the new message after it", () =>
    Effect.gen(function*() {
      const { batch, first, labels, n1, settle, third } = yield* returnWithheld()
      batch(third, [{ type: "send", to: "b", message: message("n2", { supersedes: n1.id }) }])
      settle(third, first)
      assert.deepStrictEqual(labels, ["e0", "e1", "o1", "n1", "left d", "joined d", "supersede n1", "n2"])
    }))

  it.effect("the cancel forced when that return's connection closes too: parked behind the old output, after n1", () =>
    Effect.gen(function*() {
      const { batch, close, first, labels, n1, settle, third } = yield* returnWithheld()
      assert.isTrue(batch(third, [{ type: "cancel_message", messageId: n1.id }]), "the cancel did not wait: the test sets up nothing")
      close(third)
      settle(first)
      const at = (label: string): number => labels.indexOf(label)
      assert.isAbove(at("cancel n1"), at("n1"), `the cancel came before n1: ${labels.join(", ")}`)
      assert.isAbove(at("n1"), at("o1"))
    }))
})
