/**
 * A departed sender's `session_left` held from one recipient while the
 * sender's mail waits in that recipient's own parked output (its mailbox
 * flush that did not fit), when the sender comes back and perhaps leaves
 * again before that mail is out: on a Router driven by hand (no fibers), so
 * each write of the recipient's and each offer of its drainer happens at an
 * exact point. The recipient's writer is stuck: it writes only when the test
 * takes its outbox (`written`); its drainer offers only when the test says
 * (`drain`). The same over the in-memory network: rejoin-flush-order.test.ts.
 * Last, the two holds side by side: behind the sender's own output parked
 * behind backpressure a return gets the recipient the pair, behind its mail
 * in the recipient's parked flush the new join alone (docs/protocol.md).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { Router } from "../../src/broker/Router.ts"
import { frameText } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

/**
 * A Router whose `recipient` came back (stuck writer, outbox of two) to
 * `count` messages of `sender`'s in its mailbox: its writer's first write
 * (stuck for good) took `registered` and m0, and m1… are parked with its own
 * reader.
 */
const setUpWith = (count: number) => Effect.gen(function*() {
  const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2 })
  let connections = 0
  const session = (sessionId: string, stuck: boolean, scopeId?: string): Peer => {
    const peer = attach(fakeConnection(++connections, stuck))
    batch(peer, [registerFrame(scopeId === undefined ? { sessionId } : { sessionId, scopeId })])
    return peer
  }
  /** `peer`'s connection closes. */
  const close = (peer: Peer): void => router.detach(peer, router.output.end.drainOnClose(peer))
  /** `reader`'s drainer offers its next `n` parked items (the recipients have room: nothing waits). */
  const drain = (reader: Peer, n: number): void => {
    for (let i = 0; i < n; i++) {
      Effect.runSync(router.output.drain.offerParked(reader, router.output.drain.nextParked(reader)!))
    }
  }
  const away = session("recipient", false)
  const sender = session("sender", false)
  batch(away, [{ type: "unregister" }])
  for (let i = 0; i < count; i++) {
    router.output.writes.takeForWrite(sender) // its own answers: its writer keeps up
    assert.isFalse(batch(sender, [{ type: "send", to: "recipient", message: message(`m${i}`) }]))
  }
  const recipient = session("recipient", true)
  assert.strictEqual(recipient.outbox.length, 0)
  assert.strictEqual(recipient.parked.length, count - 1)
  return { router, recipient, sender, batch, session, close, drain }
})
const setUp = setUpWith(4)

/** What a write of `peer`'s holds, in order: `m<i>` (a message), `left <id>`, `joined <id>`. */
const written = (router: Router, peer: Peer): Array<string> =>
  router.output.writes.takeForWrite(peer).frames.flatMap((frame) => {
    const parsed: { type: string; message?: { content: { text: string } }; sessionId?: string; session?: { id: string } } =
      JSON.parse(frameText(frame))
    if (parsed.type === "message") return [`${parsed.message?.content.text}`]
    if (parsed.type === "session_left") return [`left ${parsed.sessionId}`]
    if (parsed.type === "session_joined") return [`joined ${parsed.session?.id}`]
    return []
  })

describe("a departure held behind the sender's mail in the recipient's parked flush", () => {
  it.effect("the sender comes back and leaves again: the recipient, which heard it join again, hears it leave once, after the last of the mail", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 1)
      // The writer passes over the departure: two messages of the sender's are still parked.
      assert.deepStrictEqual(written(router, recipient), ["m1"])
      drain(recipient, 1)
      const back = session("sender", false)
      // The return is written (it stands for the departure passed over) while m3 is still parked.
      assert.deepStrictEqual(written(router, recipient), ["joined sender", "m2"])
      close(back)
      // The last of the mail is offered before the writer collects the second departure.
      drain(recipient, 1)
      assert.deepStrictEqual(written(router, recipient), ["m3", "left sender"])
      assert.deepStrictEqual(written(router, recipient), [])
    }))

  it.effect("the sender comes back, and the last of the mail is offered before its return is written: no session_left, the return ahead of that last message", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 2)
      assert.deepStrictEqual(written(router, recipient), ["m1", "m2"])
      session("sender", false)
      // The hold is released while the session is present again: its departure is not owed any more.
      drain(recipient, 1)
      assert.deepStrictEqual(written(router, recipient), ["joined sender", "m3"])
      assert.deepStrictEqual(written(router, recipient), [])
    }))

  it.effect("the sender comes back, the last of the mail is offered before its return is written, and it leaves again before the writer collects: the recipient hears it leave once, after that mail", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 2)
      assert.deepStrictEqual(written(router, recipient), ["m1", "m2"])
      const back = session("sender", false)
      // Released while the session is back and its join is not written yet; then it leaves again.
      drain(recipient, 1)
      close(back)
      // The recipient never heard it join again: it still takes it for present, and must hear it leave.
      assert.deepStrictEqual(written(router, recipient), ["m3", "left sender"])
      assert.deepStrictEqual(written(router, recipient), [])
      assert.isUndefined(recipient.withheldDepartures) // settled: nothing left behind
    }))

  it.effect("the same, with the feed dropping the second departure while the recipient lags: still one session_left, after that mail", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 2)
      assert.deepStrictEqual(written(router, recipient), ["m1", "m2"])
      const back = session("sender", false)
      drain(recipient, 1)
      close(back)
      // Past the feed's bound of departed entries: the sender's latest entry is dropped (Membership.compact).
      for (let i = 0; i < 1_100; i++) close(session(`passer-${i}`, false))
      router.membership.notify()
      assert.deepStrictEqual(written(router, recipient), ["m3", "left sender"])
      assert.deepStrictEqual(written(router, recipient), [])
      assert.isUndefined(recipient.withheldDepartures) // settled: nothing left behind
    }))

  it.effect("the sender comes back, and the last of the mail is offered before the recipient's writer collected anything: no session_left, its return ahead of that mail", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUpWith(3)
      close(sender)
      session("sender", false)
      drain(recipient, 2)
      assert.deepStrictEqual(written(router, recipient), ["joined sender", "m1", "m2"])
      assert.deepStrictEqual(written(router, recipient), [])
      assert.isUndefined(recipient.withheldDepartures) // settled: nothing left behind
    }))

  it.effect("the sender comes back and leaves again, and the last of the mail is offered, all before the recipient's writer collects: one session_left, after that mail", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUpWith(3)
      close(sender)
      close(session("sender", false))
      drain(recipient, 2)
      // Its return is not written (it joined and left since): the first departure goes after the queued mail.
      assert.deepStrictEqual(written(router, recipient), ["m1", "m2", "left sender"])
      assert.deepStrictEqual(written(router, recipient), [])
    }))
})

describe("a recipient whose session leaves while a departure is withheld from it, and whose connection registers again", () => {
  /** `peer` unregisters, then registers as session `sessionId` of scope `scopeId`, in two batches. */
  const reregister = (batch: (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>) => boolean, peer: Peer, sessionId: string, scopeId: string) => {
    batch(peer, [{ type: "unregister" }])
    batch(peer, [registerFrame(scopeId === undefined ? { sessionId } : { sessionId, scopeId })])
    assert.strictEqual(peer.session?.id, sessionId)
  }

  it.effect("released once it went (the departure owed, not written yet): the new registration gets no session_left of the old scope's session", () =>
    Effect.gen(function*() {
      const { batch, close, drain, recipient, router, sender } = yield* setUp
      close(sender)
      drain(recipient, 1)
      assert.deepStrictEqual(written(router, recipient), ["m1"])
      drain(recipient, 2) // the last of the mail: the departure is owed
      reregister(batch, recipient, "elsewhere", "other-scope")
      assert.deepStrictEqual(written(router, recipient), [])
      assert.deepStrictEqual(written(router, recipient), [])
    }))

  it.effect("released while the sender was back, its return not written: a session of the same id in the new scope that joins and leaves unseen is not reported leaving", () =>
    Effect.gen(function*() {
      const { batch, close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 2)
      assert.deepStrictEqual(written(router, recipient), ["m1", "m2"])
      session("sender", false)
      drain(recipient, 1) // released while the sender is back, before the recipient's writer wrote its return
      reregister(batch, recipient, "elsewhere", "other-scope")
      close(session("sender", false, "other-scope"))
      assert.deepStrictEqual(written(router, recipient), [])
      assert.deepStrictEqual(written(router, recipient), [])
    }))

  // A reader holds an `unregister` until its own parked output is offered (PeerReader.whileHeldBack): below,
  // the Router is driven directly, so the holds behind that output are still taken when the session leaves.
  it.effect("with the mail still in its own parked list: the new registration gets no session_left of the old scope's session", () =>
    Effect.gen(function*() {
      const { batch, close, drain, recipient, router, sender } = yield* setUp
      close(sender)
      drain(recipient, 1)
      assert.deepStrictEqual(written(router, recipient), ["m1"])
      reregister(batch, recipient, "elsewhere", "other-scope")
      drain(recipient, 2) // the old session's mail, refused and taken back: it releases nothing
      assert.deepStrictEqual([...written(router, recipient), ...written(router, recipient)], [])
    }))

  it.effect("with the mail still in its own parked list, and a departure of the same id held there: the new hold is released by its own mail, not by the old session's", () =>
    Effect.gen(function*() {
      const { batch, close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 1)
      assert.deepStrictEqual(written(router, recipient), ["m1"])
      // In another scope, "elsewhere" has three messages of that scope's "sender" in its mailbox.
      const away = session("elsewhere", false, "other-scope")
      batch(away, [{ type: "unregister" }])
      const other = session("sender", false, "other-scope")
      for (let i = 0; i < 3; i++) {
        router.output.writes.takeForWrite(other)
        assert.isFalse(batch(other, [{ type: "send", to: "elsewhere", message: message(`n${i}`) }]))
      }
      reregister(batch, recipient, "elsewhere", "other-scope")
      // The rest of its flush is parked behind the old session's m2 and m3; "sender" leaves with its mail there.
      // (n0 fitted the outbox: another sender's mail does not wait behind the old session's m2 and m3.)
      assert.strictEqual(recipient.parked.length, 4)
      close(other)
      const seen = written(router, recipient)
      drain(recipient, 2) // m2 and m3, refused and taken back: they release nothing
      seen.push(...written(router, recipient))
      drain(recipient, 1)
      seen.push(...written(router, recipient))
      drain(recipient, 1)
      seen.push(...written(router, recipient), ...written(router, recipient))
      assert.deepStrictEqual(seen, ["n0", "n1", "n2", "left sender"])
    }))
})

describe("which hold a recipient had decides whether a return stands for the departure (docs/protocol.md, Discovery and presence)", () => {
  it.effect("the sender's own output parked behind the recipient's full outbox, the sender back on a new connection: the recipient gets the session_left and the new join together, after that output", () =>
    Effect.gen(function*() {
      const { attach, batch, router } = yield* handRouter({ outboxCapacity: 2 })
      let connections = 0
      // The recipient's writer is stuck: it writes only when the test takes its outbox (`written`).
      const session = (sessionId: string, stuck: boolean): Peer => {
        const peer = attach(fakeConnection(++connections, stuck))
        batch(peer, [registerFrame({ sessionId })])
        return peer
      }
      const recipient = session("recipient", true)
      const sender = session("sender", false)
      assert.deepStrictEqual(written(router, recipient), ["joined sender"])
      router.output.writes.takeForWrite(sender)
      // Two fit the recipient's outbox; the third parks the sender's batch, and its unregister with it.
      assert.isTrue(batch(sender, [
        { type: "send", to: "recipient", message: message("m0") },
        { type: "send", to: "recipient", message: message("m1") },
        { type: "send", to: "recipient", message: message("m2") },
        { type: "unregister" }
      ]))
      assert.strictEqual(sender.state, "unregistered")
      const back = session("sender", false)
      assert.deepStrictEqual(written(router, recipient), ["m0", "m1"])
      while (router.output.drain.nextParked(sender) !== undefined) {
        Effect.runSync(router.output.drain.offerParked(sender, router.output.drain.nextParked(sender)!))
      }
      router.membership.notify()
      assert.deepStrictEqual(written(router, recipient), ["m2", "left sender", "joined sender"])
      batch(back, [{ type: "send", to: "recipient", message: message("n0") }])
      assert.deepStrictEqual(written(router, recipient), ["n0"])
    }))

  it.effect("the sender's mail in the recipient's own parked flush, the sender back before the last of it is out: the new join stands for the departure, no session_left", () =>
    Effect.gen(function*() {
      const { close, drain, recipient, router, sender, session } = yield* setUp
      close(sender)
      drain(recipient, 1)
      assert.deepStrictEqual(written(router, recipient), ["m1"])
      session("sender", false)
      drain(recipient, 2)
      assert.deepStrictEqual(written(router, recipient), ["joined sender", "m2", "m3"])
      assert.deepStrictEqual(written(router, recipient), [])
    }))
})
