/**
 * `takeover-v1`: a connection whose session id another registration takes
 * over (P16) is told so — `taken_over` with the new registration's pid, as
 * its last frame — before the broker ends it; a base client is ended quietly,
 * as before. Real sockets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { assertDelivered } from "../support/assertions.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { ackFor, message, register, registerFrame, send, withBroker } from "../support/broker.ts"
import { advance, memoryNetwork } from "../support/memory.ts"
import { RELEASE_GRACE_MS } from "../../src/protocol/features.ts"

const TAKEOVER = { features: ["takeover-v1"] }
const RECLAIM = { features: ["takeover-v1", "reclaim-v1"] }
const RELEASED = { features: ["takeover-v1", "reclaim-v1", "reclaim-released-v1"], ifFree: true, ifReleased: true }

describe("takeover-v1: the superseded connection is told", () => {
  it.live("the old connection gets taken_over (the new pid) as its last frame, then the close", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const old = yield* broker.session({ sessionId: "twin", frame: TAKEOVER })
      assert.include(old.registered.features ?? [], "takeover-v1")
      const replacement = yield* broker.connect("replacement")
      // The new holder's own registration says which process it is; the broker passes its pid on.
      yield* register(replacement, { sessionId: "twin", session: { pid: 4242 }, frame: TAKEOVER })
      yield* old.client.waitClosed()
      const told = yield* old.client.next("taken_over")
      assert.deepStrictEqual(told, { type: "taken_over", sessionId: "twin", pid: 4242 })
      assert.strictEqual(old.client.received().at(-1)?.type, "taken_over")
      // The replacement holds the id.
      const sender = yield* broker.session({ label: "sender" })
      assertDelivered(yield* send(sender.client, "twin", message("to the new holder")))
      const got = yield* replacement.next("message")
      assert.strictEqual(got.message.content.text, "to the new holder")
    }))

  it.live("a base client (no takeover-v1) is ended with no new frame", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const old = yield* broker.session({ sessionId: "twin" })
      assert.notInclude(old.registered.features ?? [], "takeover-v1")
      const replacement = yield* broker.connect("replacement")
      yield* register(replacement, { sessionId: "twin", frame: TAKEOVER })
      yield* old.client.waitClosed()
      assert.deepStrictEqual(old.client.received().map((frame) => frame.type), ["registered"])
    }))

  it.live("mail queued for the old connection is not lost: the new holder gets what the old one did not confirm", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const sender = yield* broker.session({ label: "sender" })
      const old = yield* broker.session({ sessionId: "twin", frame: { features: ["takeover-v1", "received-v1"] } })
      // Written to the old connection, never confirmed (`received`): it goes to the next holder.
      const first = message("before the takeover")
      assertDelivered(yield* send(sender.client, "twin", first))
      yield* old.client.next("message", (frame) => frame.message.id === first.id)
      const replacement = yield* broker.connect("replacement")
      yield* register(replacement, { sessionId: "twin", frame: { features: ["takeover-v1", "received-v1"] } })
      yield* old.client.waitClosed()
      yield* old.client.next("taken_over")
      const again = yield* replacement.next("message", (frame) => frame.message.id === first.id)
      assert.strictEqual(again.message.content.text, "before the takeover")
    }))

  // A base client (no received-v1, no takeover-v1) that stopped reading: its socket is full, its outbox holds
  // the rest of a burst. The takeover hands that outbox to the new holder at once, ahead of the sender's next
  // message, rather than when the old writer gets to it (after the close's 2 s grace, behind newer mail).
  it.live("a base client's unwritten mail goes to the new holder at once, ahead of the sender's later mail", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker({ idleExit: null, mailboxCapacity: 4096 })
      const sender = yield* broker.session({ sessionId: "sender" })
      const old = yield* broker.session({ sessionId: "twin" })
      yield* old.client.pause
      // 800 KB: more than the socket's buffers take, so most of it is still queued at the broker.
      const burst = Array.from({ length: 800 }, (_, i) => message(`burst ${i}:`.padEnd(1024, ".")))
      yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
      for (const msg of burst) assert.strictEqual((yield* ackFor(sender.client, msg.id)).type, "delivered")
      const replacement = yield* broker.connect("replacement")
      yield* register(replacement, { sessionId: "twin" })
      const later = message("after the takeover")
      assertDelivered(yield* send(sender.client, "twin", later))
      yield* replacement.next("message", (frame) => frame.message.id === later.id)
      const texts = replacement.received().flatMap((frame) => frame.type === "message" ? [frame.message.content.text] : [])
      // The burst's tail (what the old socket never took) came first, in order, and then the later message.
      assert.isAbove(texts.length, 1, "the later message reached the new holder before the burst's unwritten tail")
      assert.strictEqual(texts.at(-1), "after the takeover")
      const numbers = texts.slice(0, -1).map((text) => Number(/^burst (\d+):/.exec(text)?.[1]))
      assert.deepStrictEqual(numbers, numbers.map((_, i) => numbers[0]! + i), "the handed-over burst is not in order")
      assert.strictEqual(numbers.at(-1), burst.length - 1)
      // The old client reads again: what the old socket had taken reaches it; nothing of the burst is lost.
      yield* old.client.resume
      yield* old.client.waitClosed()
      const reachedOld = old.client.received().filter((frame) => frame.type === "message").length
      assert.isBelow(reachedOld, burst.length, "the old socket took the whole burst (the scenario changed)")
      assert.isAtLeast(reachedOld + numbers.length, burst.length)
    }))

  // The same when the old connection's outbox is full and the sender's reader waits to queue the rest of its
  // batch (backpressure): once the holder changes, what waited is taken back to the new holder at once — not
  // offered to the old connection, to sit there until its close's 2 s grace passes, holding the sender back
  // (its later message unread) meanwhile. In memory: the clock never moves, so the grace never passes.
  it.effect("mail a sender was held back on for a taken-over client goes to the new holder at once", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork({ linkCapacity: 4 })
      yield* world.startBroker({ outboxCapacity: 4 })
      const sender = yield* world.session({ sessionId: "sender" })
      const old = yield* world.session({ sessionId: "twin" })
      yield* old.client.pause
      const burst = Array.from({ length: 40 }, (_, i) => message(`burst ${i}`))
      yield* sender.client.sendRaw(encodeFrames(burst.map((msg) => JSON.stringify({ type: "send", to: "twin", message: msg }))))
      const replacement = yield* world.session({ sessionId: "twin", label: "replacement" })
      const later = message("after the takeover")
      yield* sender.client.send({ type: "send", to: "twin", message: later })
      yield* replacement.client.next("message", (frame) => frame.message.id === later.id)
      const texts = replacement.client.received().flatMap((frame) => frame.type === "message" ? [frame.message.content.text] : [])
      assert.strictEqual(texts.at(-1), "after the takeover")
      const numbers = texts.slice(0, -1).map((text) => Number(/^burst (\d+)$/.exec(text)?.[1]))
      assert.isAbove(numbers.length, 0, "nothing of the burst was handed over (the scenario changed)")
      assert.deepStrictEqual(numbers, numbers.map((_, i) => numbers[0]! + i), "the handed-over burst is not in order")
      assert.strictEqual(numbers.at(-1), burst.length - 1)
    }))

  // Its idle writer drains at once, so its close can run inside the `register` (in memory, accepted and
  // adopted): what it hands back then must find the new holder registered, not the mailbox (whose bound
  // here could not hold the message).
  it.effect.each([["accepted", false], ["adopted", true]] as const)(
    "%s: an idle old connection's unconfirmed mail reaches the new holder, even past the mailbox's bounds",
    ([, adopted]) =>
      Effect.gen(function*() {
        const world = yield* memoryNetwork()
        yield* world.startBroker({ adopted, mailboxBytesPerTarget: 1024 })
        const sender = yield* world.session({ sessionId: "sender" })
        const old = yield* world.session({ sessionId: "twin", frame: { features: ["takeover-v1", "received-v1"] } })
        const unread = message("read, never confirmed: ".padEnd(4096, "."))
        assertDelivered(yield* send(sender.client, "twin", unread))
        assert.strictEqual((yield* old.client.next("message")).message.id, unread.id)
        const replacement = yield* world.session({ sessionId: "twin", label: "replacement", frame: TAKEOVER })
        assert.strictEqual((yield* replacement.client.next("message")).message.id, unread.id)
        yield* old.client.next("taken_over")
        yield* sender.client.roundTrip
        yield* sender.client.expectNothing("message_receipt")
      })
  )

  it.live("a register with ifFree is refused (E_SESSION_HELD) while a live connection holds the id, accepted once it left", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      // Here before the holder: it sees the holder join, and leave.
      const sender = yield* broker.session({ label: "sender" })
      const holder = yield* broker.session({ sessionId: "twin", frame: TAKEOVER })
      const asking = yield* broker.connect("asking")
      yield* asking.send(registerFrame({ sessionId: "twin", frame: { ...RECLAIM, ifFree: true } }))
      const refused = yield* asking.next("registration_failed")
      assert.strictEqual(refused.code, "E_SESSION_HELD")
      assert.match(refused.reason, /held by another live connection/)
      yield* asking.waitClosed()
      // The holder was not displaced: no taken_over, and mail for the id still reaches it.
      assertDelivered(yield* send(sender.client, "twin", message("still the holder")))
      const got = yield* holder.client.next("message")
      assert.strictEqual(got.message.content.text, "still the holder")
      assert.notInclude(holder.client.received().map((frame) => frame.type), "taken_over")
      // The holder's connection closes: the same register is accepted now.
      yield* holder.client.end
      yield* sender.client.next("session_left", (frame) => frame.sessionId === "twin")
      const again = yield* broker.connect("again")
      const registered = yield* register(again, { sessionId: "twin", frame: { ...RECLAIM, ifFree: true } })
      assert.strictEqual(registered.sessionId, "twin")
    }))

  // A client taken over asks so while its taker's process lives: it may take the id only once the
  // holder gave it up here, never while a holder that dropped (or that a restarted broker never saw) is
  // reconnecting, nor in the first RELEASE_GRACE_MS after the release (a holder replacing its client,
  // pi's /reload, registers the id again then). In memory, on TestClock.
  it.effect("a register with ifReleased takes the id only once its last holder unregistered it here, a grace ago", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ idleExit: null })
      const sender = yield* world.session({ label: "sender" })
      const refusedWith = (label: string) =>
        Effect.gen(function*() {
          const asking = yield* world.connect(label)
          yield* asking.send(registerFrame({ sessionId: "twin", frame: RELEASED }))
          const refused = yield* asking.next("registration_failed")
          yield* asking.waitClosed()
          return refused
        })
      // Never held on this broker (as after a restart, before the holder is back): not given up.
      const unseen = yield* refusedWith("unseen")
      assert.strictEqual(unseen.code, "E_SESSION_NOT_RELEASED")
      assert.match(unseen.reason, /was not given up on this broker/)
      // Held: refused as ifFree is, the holder untouched.
      const holder = yield* world.session({ sessionId: "twin", frame: TAKEOVER })
      assert.strictEqual((yield* refusedWith("while held")).code, "E_SESSION_HELD")
      // Its connection closed without unregister (it may reconnect): still not given up.
      yield* holder.client.end
      yield* sender.client.next("session_left", (frame) => frame.sessionId === "twin")
      yield* advance(`${RELEASE_GRACE_MS} millis`)
      assert.strictEqual((yield* refusedWith("after a drop")).code, "E_SESSION_NOT_RELEASED")
      // Held again, then given up with unregister (its client moved on, or is being replaced).
      const mover = yield* world.session({ sessionId: "twin", frame: TAKEOVER })
      yield* mover.client.send({ type: "unregister" })
      yield* sender.client.next("session_left", (frame) => frame.sessionId === "twin")
      // Within the grace: refused, saying when to ask again.
      const early = yield* refusedWith("just given up")
      assert.strictEqual(early.code, "E_SESSION_RELEASED_RECENTLY")
      assert.match(early.reason, /given up less than 2000 ms ago/)
      // (Each wire step takes 1 ms of the simulated time; these few are well within the 100 ms kept.)
      yield* advance(`${RELEASE_GRACE_MS - 100} millis`)
      assert.strictEqual((yield* refusedWith("near the grace's end")).code, "E_SESSION_RELEASED_RECENTLY")
      // The grace over: the same register is accepted.
      yield* advance("100 millis")
      const back = yield* world.connect("back")
      const registered = yield* register(back, { sessionId: "twin", frame: RELEASED })
      assert.include(registered.features ?? [], "reclaim-released-v1")
      assert.strictEqual(registered.sessionId, "twin")
    }))

  it.live("ifFree without reclaim-v1 is not honoured: the register takes the id over, as a broker without it does", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const holder = yield* broker.session({ sessionId: "twin", frame: TAKEOVER })
      const replacement = yield* broker.connect("replacement")
      const registered = yield* register(replacement, { sessionId: "twin", frame: { ...TAKEOVER, ifFree: true } })
      assert.notInclude(registered.features ?? [], "reclaim-v1")
      yield* holder.client.next("taken_over")
      yield* holder.client.waitClosed()
    }))

  it.live("a register without ifFree still takes a live holder's id over", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const holder = yield* broker.session({ sessionId: "twin", frame: TAKEOVER })
      const replacement = yield* broker.connect("replacement")
      yield* register(replacement, { sessionId: "twin", frame: TAKEOVER })
      yield* holder.client.waitClosed()
      yield* holder.client.next("taken_over")
    }))
})
