/**
 * A withheld return (WithheldDepartures.ts's held return, Output's `parkBehindReturn`)
 * whose forced new mail meets the recipient's OWN parked list (its mailbox
 * flush): the new mail must park behind the old output the pair waits for,
 * not behind that flush — there it waited for the pair, while the old output
 * the pair waits for waited behind it, and neither reader moved (review
 * revrbq2, R1); nor may it keep the recipient's departure hold up once the
 * old connection's registration timeout forced the old reply through (R2).
 * And the recipient taken over (P16) once that timeout left the flush's hold
 * the only one on the return (R3): its new connection must hear the old
 * mail, then the sender leave and join, then the new mail
 * (WithheldDepartures.takenOver).
 * Hand-driven Router (no fibers): each drainer offer is tried by hand, and
 * interrupted if it waits.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

const written = (router: Router, peer: Peer): Array<string> => router.output.writes.takeForWrite(peer).frames.flatMap(orderLabel)

/** Frames written to a recording connection, decoded as `written` does. */
const label = orderLabel

const setUp = Effect.gen(function*() {
  const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
  let connections = 0
  const session = (sessionId: string, stuck: boolean): Peer => {
    const peer = attach(fakeConnection(++connections, stuck))
    batch(peer, [registerFrame({ sessionId })])
    return peer
  }
  const away = session("recipient", false)
  const sender = session("sender", false)
  batch(away, [{ type: "unregister" }])
  for (let i = 0; i < 4; i++) {
    router.output.writes.takeForWrite(sender)
    assert.isFalse(batch(sender, [{ type: "send", to: "recipient", message: message(`m${i}`) }]))
  }
  const recipient = session("recipient", true)
  assert.strictEqual(recipient.parked.length, 3)
  /** A session on a connection whose writes complete at once, recorded in `log`. */
  const recorded = (sessionId: string, log: Array<string>): Peer => {
    const peer = attach({ ...fakeConnection(++connections, false), write: (frames) => void log.push(...frames.flatMap(label)) })
    batch(peer, [registerFrame({ sessionId })])
    return peer
  }
  return { router, recipient, sender, batch, session, close, tryDrain, recorded }
})

describe("forced new mail of a withheld return, and the recipient's own parked flush", () => {
  it.effect("the old reply and the new mail both reach the recipient once everyone reads", () =>
    Effect.gen(function*() {
      const { batch, close, recipient, router, sender: a, session, tryDrain } = yield* setUp
      // A: the old reply waits behind the recipient's flush (its mail of the sender's), then A unregisters.
      assert.isTrue(batch(a, [{ type: "send", to: "recipient", message: message("old") }, { type: "unregister" }]))
      // The sender returns on C: the recipient withholds the pair, C's mail waits for it.
      const c = session("sender", false)
      assert.isDefined(recipient.returnWaits)
      assert.isTrue(batch(c, [{ type: "send", to: "recipient", message: message("new") }]))
      // C closes: its mail is forced, and parks at the end of the recipient's own list.
      close(c)
      const got: Array<string> = []
      for (let round = 0; round < 20; round++) {
        tryDrain(recipient)
        got.push(...written(router, recipient))
        tryDrain(a)
        got.push(...written(router, recipient))
      }
      const mine = got.filter((f) => f === "old" || f === "new" || f.endsWith(" sender"))
      // (C's session_left after its message, as in return-holds.test.ts's closed-return case: the recipient never heard C join.)
      assert.deepStrictEqual(
        { mine, recipientParked: recipient.parked.length, aParked: a.parked.length },
        { mine: ["old", "new", "left sender"], recipientParked: 0, aParked: 0 }
      )
    }))

  it.effect("A's registration timeout forcing the old reply through: the old reply comes before the new mail, and both arrive", () =>
    Effect.gen(function*() {
      const { batch, close, recipient, router, sender: a, session, tryDrain } = yield* setUp
      assert.isTrue(batch(a, [{ type: "send", to: "recipient", message: message("old") }, { type: "unregister" }]))
      const c = session("sender", false)
      assert.isTrue(batch(c, [{ type: "send", to: "recipient", message: message("new") }]))
      close(c)
      close(a) // the registration timeout closes the unregistered connection
      const got: Array<string> = []
      for (let round = 0; round < 20; round++) {
        tryDrain(recipient)
        got.push(...written(router, recipient))
      }
      const mine = got.filter((f) => f === "old" || f === "new")
      assert.deepStrictEqual({ mine, recipientParked: recipient.parked.length }, { mine: ["old", "new"], recipientParked: 0 })
    }))

  it.effect("the recipient taken over when only its own flush's hold is left: the new connection gets the old mail, the pair, then the new mail", () =>
    Effect.gen(function*() {
      const { batch, close, recipient, recorded, router, sender: a, session, tryDrain } = yield* setUp
      assert.isTrue(batch(a, [{ type: "send", to: "recipient", message: message("old") }, { type: "unregister" }]))
      const c = session("sender", false)
      // C's new mail waits for the pair (parked in C's batch; its drainer waits).
      assert.isTrue(batch(c, [{ type: "send", to: "recipient", message: message("new") }]))
      assert.isFalse(tryDrain(c))
      // A's registration timeout forces the old reply into the recipient's own list, behind its flush: the
      // return's hold on A's output is released, the only hold left is the flush's own.
      close(a)
      assert.strictEqual(recipient.withheldDepartures?.get("sender")?.holds, 1)
      // The recipient's session is taken over (P16) by a connection that reads.
      const log: Array<string> = []
      const next = recorded("recipient", log)
      for (let round = 0; round < 5; round++) {
        tryDrain(c)
        tryDrain(recipient)
        router.output.writes.takeForWrite(recipient)
        router.membership.notify()
      }
      const mine = log.filter((f) => /^m\d$/.test(f) || f === "old" || f === "new" || f.endsWith(" sender"))
      const old = mine.filter((f) => /^m\d$/.test(f))
      assert.isAbove(old.length, 0, "the flush's mail came to the new connection")
      assert.deepStrictEqual(
        { mine, cParked: c.parked.length, withheld: next.withheldDepartures },
        { mine: [...old, "old", "left sender", "joined sender", "new"], cParked: 0, withheld: undefined }
      )
    }))

  it.effect("the same with C closed first (its new mail forced behind the old reply): the new connection hears the sender leave, after all its mail", () =>
    Effect.gen(function*() {
      const { batch, close, recipient, recorded, router, sender: a, session } = yield* setUp
      assert.isTrue(batch(a, [{ type: "send", to: "recipient", message: message("old") }, { type: "unregister" }]))
      const c = session("sender", false)
      assert.isTrue(batch(c, [{ type: "send", to: "recipient", message: message("new") }]))
      // C closes (its mail parks behind A's output), then A's registration timeout forces both into the
      // recipient's own list: the flush's mail, the old reply, the new mail; the flush's hold is the only one left.
      close(c)
      close(a)
      assert.strictEqual(recipient.withheldDepartures?.get("sender")?.holds, 1)
      const log: Array<string> = []
      recorded("recipient", log) // the takeover's own batch hands that list over and writes it
      router.output.writes.takeForWrite(recipient)
      router.membership.notify()
      const mine = log.filter((f) => /^m\d$/.test(f) || f === "old" || f === "new" || f.endsWith(" sender"))
      const old = mine.filter((f) => /^m\d$/.test(f))
      assert.isAbove(old.length, 0, "the flush's mail came to the new connection")
      // C's new mail reads as the incarnation the recipient knows (it never heard C join, as in the first
      // test here); its session_left comes once, after it.
      assert.deepStrictEqual({ mine, recipientParked: recipient.parked.length }, {
        mine: [...old, "old", "new", "left sender"],
        recipientParked: 0
      })
    }))
})
