/**
 * A durable broker that restarted answers a sender's retry from what it
 * stored (P46's replay records), before the sessions it routed to come
 * back: a resend whose target the new broker does not know yet gets the
 * message's stored fate, not `E_TARGET_NOT_FOUND`; a cancel or a
 * supersede of a message delivered before the restart, whose receipt route
 * was not stored, is carried out as it would have been before it — not one
 * of an ask that is over, whose record does not show the receiver has it
 * (refused, the receiver told nothing). Over the in-memory network,
 * with a memory store playing the disk (../support/durable.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import { DEFAULT_REPLACE_WINDOW_MS } from "../../src/broker/options.ts"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { DELIVERY_V1, GROUPS_V1, RECEIVED_V1, REJOIN_V1 } from "../../src/protocol/features.ts"
import { type MailStoreService, makeMemory, makeMemoryMailState, type MemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { ackFor, message, messageFor, send, type Session } from "../support/broker.ts"
import { durableBroker } from "../support/durable.ts"
import { advance, type MemoryNetwork, memoryNetwork, type RunningBroker } from "../support/memory.ts"

/**
 * A durable broker over a memory disk with alice and bob registered, alice's
 * message to bob delivered, read and its mail's delete committed: after a
 * crash only its replay record is left of it.
 */
const deliveredThenCrash = (text: string) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const first = yield* durableBroker(world, disk)
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const msg = message(text)
    assertDelivered(yield* send(alice.client, "bob", msg))
    yield* messageFor(bob.client, msg.id)
    yield* advance(LAZY_FLUSH)
    yield* first.crash
    yield* durableBroker(world, disk)
    return { world, disk, msg }
  })

/** A durable broker over a memory disk with alice registered and bob gone (his client destroyed). */
const bobAway = Effect.gen(function*() {
  const world = yield* memoryNetwork()
  const disk = makeMemoryMailState()
  const first = yield* durableBroker(world, disk)
  const alice = yield* world.session({ sessionId: "alice", name: "alice" })
  const bob = yield* world.session({ sessionId: "bob", name: "bob" })
  yield* bob.client.destroy
  yield* settled([alice.client])
  return { world, disk, first, alice }
})

/**
 * A durable broker over a memory disk with alice (asking for `aliceFeatures`)
 * registered and bob-1 (name "bob", in /tmp) gone: a message to bob-1 goes
 * to P49's other holder of that name and directory, once one registers.
 */
const bob1Gone = (aliceFeatures: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const first = yield* durableBroker(world, disk)
    const alice = yield* world.session({ sessionId: "alice", name: "alice", frame: { features: aliceFeatures } })
    const bob1 = yield* world.session({ sessionId: "bob-1", name: "bob", cwd: "/tmp" })
    yield* bob1.client.destroy
    yield* settled([alice.client])
    return { world, disk, first, alice }
  })

/** `first`'s changes committed, then a crash and a restart over `disk`: alice, bob-1 and bob-2 register again. */
const restartedWithBobs = (world: MemoryNetwork, disk: MemoryMailState, first: RunningBroker) =>
  Effect.gen(function*() {
    yield* advance(LAZY_FLUSH)
    yield* first.crash
    yield* durableBroker(world, disk)
    const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob1Back = yield* world.session({ sessionId: "bob-1", name: "bob", cwd: "/tmp" })
    const bob2Back = yield* world.session({ sessionId: "bob-2", name: "bob", cwd: "/tmp" })
    return { alice2, bob1Back, bob2Back }
  })

/** `sender` cancels `messageId`: answered delivered, the control reaches `holder` and not `other`. */
const cancelReachesOnly = (sender: Session, holder: Session, other: Session, messageId: string) =>
  Effect.gen(function*() {
    yield* sender.client.send({ type: "cancel_message", messageId })
    assert.deepStrictEqual({ ...(yield* ackFor(sender.client, messageId)) }, { type: "delivered", messageId })
    yield* holder.client.next("message_control", (frame) => frame.control.messageId === messageId)
    yield* settled([sender.client], [other.client, holder.client])
    yield* other.client.expectNothing("message_control")
  })

/** The bare refusal of a cancel (P71). */
const cannotCancel = (messageId: string): { readonly type: "delivery_failed"; readonly messageId: string; readonly reason: string } => ({
  type: "delivery_failed",
  messageId,
  reason: "Message cannot be cancelled by this session"
})

describe("durable broker restarted: a resend to a target it does not know yet", () => {
  it.effect("of a message delivered and read before the crash is answered delivered, and not delivered again", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("exactly once")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      assertDelivered(yield* send(alice.client, "bob", msg))
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* settled([alice.client], [bob.client])
      yield* bob.client.expectNothing("message")
    }))

  it.effect("of a message queued before the crash is answered queued, and bob gets it once", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bobAway
      const msg = message("while you were out")
      assertDelivered(yield* send(alice.client, "bob", msg), "queued")
      yield* first.crash
      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      assertDelivered(yield* send(alice2.client, "bob", msg), "queued")
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* messageFor(bob.client, msg.id)
      yield* settled([alice2.client], [bob.client])
      yield* bob.client.expectNothing("message")
    }))

  it.effect("of a message cancelled before the crash is answered E_DELIVERY_CANCELLED", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bobAway
      const msg = message("never mind")
      assertDelivered(yield* send(alice.client, "bob", msg), "queued")
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      yield* first.crash
      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      assertFailed(yield* send(alice2.client, "bob", msg), "E_DELIVERY_CANCELLED", "Sender cancelled the queued delivery")
    }))

  it.effect("is matched by id and content against the record's own target: another `to` cannot be told apart", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("to bob")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      // Neither name resolves now: the record's target (bob) cannot be compared with `to`.
      assertDelivered(yield* send(alice.client, "carol", msg))
    }))

  it.effect("under a kept id with other content is judged afresh: E_TARGET_NOT_FOUND", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("the first text")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      assertFailed(yield* send(alice.client, "bob", { ...msg, content: { text: "another text" } }), "E_TARGET_NOT_FOUND")
    }))
})

/**
 * `deliveredThenCrash`'s world after the restart: alice back, bob-1's client
 * (`rejoin-v1`) back, then bob registered in group "elsewhere" by client
 * instance `instanceId` — a takeover across groups by another client, or
 * bob-1 moving its own session.
 */
const bobElsewhereAfterRestart = (text: string, instanceId: string) =>
  Effect.gen(function*() {
    const { world, msg } = yield* deliveredThenCrash(text)
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    yield* world.session({ sessionId: "bob", name: "bob", frame: { features: [REJOIN_V1], instanceId: "bob-1" } })
    const bob = yield* world.session({
      sessionId: "bob",
      name: "bob",
      frame: { features: [GROUPS_V1, REJOIN_V1], group: "elsewhere", instanceId }
    })
    yield* settled([alice.client], [bob.client])
    return { alice, msg, bob }
  })

/** `sender` cancels `messageId`: "cannot be cancelled", and `receiver` is sent no control. */
const refusedUnheard = (sender: Session, receiver: Session, messageId: string) =>
  Effect.gen(function*() {
    yield* sender.client.send({ type: "cancel_message", messageId })
    assert.deepStrictEqual({ ...(yield* ackFor(sender.client, messageId)) }, cannotCancel(messageId))
    yield* settled([sender.client], [receiver.client])
    yield* receiver.client.expectNothing("message_control")
  })

describe("durable broker restarted: a cancel of a message delivered before the crash", () => {
  it.effect("with both sides back, reaches the receiver as message_control and is answered delivered; a resend then hears E_DELIVERY_CANCELLED", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("take it back")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      const control = yield* bob.client.next("message_control", (frame) => frame.control.messageId === msg.id)
      assert.strictEqual(control.control.action, "cancel")
      assert.strictEqual(control.from.id, "alice")
      // Its replay record now says so.
      assertFailed(yield* send(alice.client, "bob", msg), "E_DELIVERY_CANCELLED", "Sender cancelled the delivery")
    }))

  it.effect("while the receiver is away, cannot be cancelled, as before the restart, and a resend still hears delivered", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("too late")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, cannotCancel(msg.id))
      assertDelivered(yield* send(alice.client, "bob", msg))
    }))

  it.effect("after another client instance took the receiver's session over since the restart, cannot be cancelled, and the new instance gets no control", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("not yours")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* world.session({ sessionId: "bob", name: "bob", frame: { instanceId: "bob-1" } })
      // Another client registers bob while bob-1 holds it: a takeover, a new instance that never got msg.
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob", frame: { instanceId: "bob-2" } })
      yield* refusedUnheard(alice, bob2, msg.id)
    }))

  it.effect("after another client instance took the receiver's session over from another group since the restart, cannot be cancelled, and the new instance gets no control", () =>
    Effect.gen(function*() {
      // Another client registers bob in another group while bob-1 holds it: a takeover across groups.
      const { alice, msg, bob: bob2 } = yield* bobElsewhereAfterRestart("not yours either", "bob-2")
      yield* refusedUnheard(alice, bob2, msg.id)
    }))

  it.effect("after the receiver's own client instance moved its session to another group since the restart, reaches it there", () =>
    Effect.gen(function*() {
      const { alice, msg, bob: moved } = yield* bobElsewhereAfterRestart("still yours", "bob-1")
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      yield* moved.client.next("message_control", (frame) => frame.control.messageId === msg.id)
    }))

  it.effect("reaches the receiver's id registered again in another group of the scope (one session per id in a scope)", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("wherever you are")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob", frame: { features: [GROUPS_V1], group: "elsewhere" } })
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      yield* bob.client.next("message_control", (frame) => frame.control.messageId === msg.id)
    }))

  it.effect("delivered to P49's other holder of its target's name reaches that holder, not a session of the target's id", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bob1Gone()
      const bob2 = yield* world.session({ sessionId: "bob-2", name: "bob", cwd: "/tmp" })
      // Addressed to the departed bob-1; the only other live holder of its name and directory takes it (P49).
      const msg = message("for whichever bob")
      assertDelivered(yield* send(alice.client, "bob-1", msg))
      yield* messageFor(bob2.client, msg.id)
      const { alice2, bob1Back, bob2Back } = yield* restartedWithBobs(world, disk, first)
      yield* cancelReachesOnly(alice2, bob2Back, bob1Back, msg.id)
    }))

  it.effect("delivered from the mailbox to P49's other holder when it registered, reaches that holder, not a session of the target's id", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bob1Gone()
      // No holder of bob-1's name is live: queued, then flushed to the first that registers (P49).
      const msg = message("for the next bob")
      assertDelivered(yield* send(alice.client, "bob-1", msg), "queued")
      const bob2 = yield* world.session({ sessionId: "bob-2", name: "bob", cwd: "/tmp" })
      yield* messageFor(bob2.client, msg.id)
      const { alice2, bob1Back, bob2Back } = yield* restartedWithBobs(world, disk, first)
      yield* cancelReachesOnly(alice2, bob2Back, bob1Back, msg.id)
    }))

  it.effect("delivered to P49's other holder at a replace window's close, reaches that holder, not a session of the target's id", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bob1Gone([DELIVERY_V1])
      const bob2 = yield* world.session({ sessionId: "bob-2", name: "bob", cwd: "/tmp" })
      // Staged for bob-1's name's sole live holder, and delivered to it when the window closes (C-DLV-5, P49).
      const msg = message("an update for whichever bob")
      yield* alice.client.send({ type: "send", to: "bob-1", message: msg, delivery: "queue", queueMode: "replace", threadId: "t" })
      yield* alice.client.next("delivery_queued", (frame) => frame.messageId === msg.id)
      yield* advance(DEFAULT_REPLACE_WINDOW_MS)
      yield* messageFor(bob2.client, msg.id)
      const { alice2, bob1Back, bob2Back } = yield* restartedWithBobs(world, disk, first)
      yield* cancelReachesOnly(alice2, bob2Back, bob1Back, msg.id)
    }))

  it.effect("handled but not committed before the crash, reaches neither side; retried after it, is carried out and answered delivered", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const memory = makeMemory(disk)
      const gate = yield* Deferred.make<void>()
      const waiting = yield* Deferred.make<void>()
      let stalled = false
      // From `stalled` on, commits wait for `gate`, opened only once the disk is down: the cancel's record is
      // not stored when the broker dies. `waiting` says a commit began waiting: the broker handled the cancel.
      const store: MailStoreService = {
        ...memory,
        commit: (batch) =>
          stalled
            ? Deferred.succeed(waiting, undefined).pipe(
              Effect.andThen(Deferred.await(gate)),
              Effect.andThen(Effect.suspend(() => memory.commit(batch)))
            )
            : memory.commit(batch)
      }
      const first = yield* world.startBroker({ store })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const msg = message("withdrawn twice")
      assertDelivered(yield* send(alice.client, "bob", msg))
      yield* messageFor(bob.client, msg.id)
      yield* advance(LAZY_FLUSH)
      stalled = true
      yield* alice.client.send({ type: "cancel_message", messageId: msg.id })
      yield* Deferred.await(waiting)
      disk.down = true
      yield* Deferred.succeed(gate, undefined)
      yield* first.crash
      // Neither bob's control nor alice's answer was written before the commit that never came: bob never
      // hears of a cancel whose record died with the broker (StoreJournal's promise). Read on close: exact.
      yield* Effect.all([alice.client.waitClosed(), bob.client.waitClosed()])
      yield* alice.client.expectNothing(["delivered", "delivery_failed"])
      yield* bob.client.expectNothing("message_control")

      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* alice2.client.send({ type: "cancel_message", messageId: msg.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice2.client, msg.id)) }, { type: "delivered", messageId: msg.id })
      const control = yield* bob2.client.next("message_control", (frame) => frame.control.messageId === msg.id)
      assert.strictEqual(control.control.action, "cancel")
    }))
})

/**
 * A durable broker over a memory disk: alice asked bob (read by bob), then
 * `cancel_ask` withdrew the ask or not (`withdraw`); committed, a crash and a
 * restart, and both registered again.
 */
const askedThenCrash = (withdraw: boolean) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const first = yield* durableBroker(world, disk)
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const ask = message("still need this?", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", ask))
    yield* messageFor(bob.client, ask.id)
    if (withdraw) yield* alice.client.send({ type: "cancel_ask", messageId: ask.id })
    yield* settled([alice.client])
    yield* advance(LAZY_FLUSH)
    yield* first.crash
    yield* durableBroker(world, disk)
    const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob2 = yield* world.session({ sessionId: "bob", name: "bob" })
    return { alice2, bob2, ask }
  })

describe("durable broker restarted: a cancel of an ask delivered before the crash", () => {
  // Helper ctlsup: its record says delivered, but for an ask that is over that does not say the receiver has it
  // (a copy that came back unread was dropped silently, the record left as its sender was told), and the
  // session back may be another client: no route says which was given it.
  it.effect("withdrawn unanswered before the crash, cannot be cancelled, and the receiver back is sent no control", () =>
    Effect.gen(function*() {
      const { alice2, ask, bob2 } = yield* askedThenCrash(true)
      yield* refusedUnheard(alice2, bob2, ask.id)
    }))

  it.effect("withdrawn unanswered before the crash, a supersede naming it is E_SUPERSEDE_TARGET, and the receiver back hears nothing", () =>
    Effect.gen(function*() {
      const { alice2, ask, bob2 } = yield* askedThenCrash(true)
      assertFailed(
        yield* send(alice2.client, "bob", message("never mind that", { supersedes: ask.id })),
        "E_SUPERSEDE_TARGET",
        "Supersede target does not match a previous message from this sender to this receiver"
      )
      yield* settled([alice2.client], [bob2.client])
      yield* bob2.client.expectNothing(["message_control", "message"])
    }))

  it.effect("withdrawn unanswered while unconfirmed, its copy dropped when it came back: another client registering the id after the restart is given neither it nor a control", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob1 = yield* world.session({
        sessionId: "bob",
        name: "bob",
        frame: { features: [RECEIVED_V1, REJOIN_V1], instanceId: "bob-1" }
      })
      const ask = message("still need this?", { expectsReply: true })
      assertDelivered(yield* send(alice.client, "bob", ask))
      // Read, never confirmed: the ask stays in bob-1's custody, and comes back when its connection goes.
      yield* messageFor(bob1.client, ask.id)
      yield* alice.client.send({ type: "cancel_ask", messageId: ask.id })
      yield* settled([alice.client])
      yield* bob1.client.destroy
      yield* advance(LAZY_FLUSH)
      yield* first.crash
      yield* durableBroker(world, disk)
      const alice2 = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob2 = yield* world.session({
        sessionId: "bob",
        name: "bob",
        frame: { features: [RECEIVED_V1, REJOIN_V1], instanceId: "bob-2" }
      })
      yield* refusedUnheard(alice2, bob2, ask.id)
      yield* bob2.client.expectNothing("message")
    }))

  it.effect("still open, reaches the receiver back as message_control and is answered delivered", () =>
    Effect.gen(function*() {
      const { alice2, ask, bob2 } = yield* askedThenCrash(false)
      yield* alice2.client.send({ type: "cancel_message", messageId: ask.id })
      assert.deepStrictEqual({ ...(yield* ackFor(alice2.client, ask.id)) }, { type: "delivered", messageId: ask.id })
      yield* bob2.client.next("message_control", (frame) => frame.control.messageId === ask.id)
    }))
})

describe("durable broker restarted: a supersede of a message delivered before the crash", () => {
  it.effect("with both sides back, tells the receiver before the new message, as before the restart; the old id then replays as superseded", () =>
    Effect.gen(function*() {
      const { world, msg } = yield* deliveredThenCrash("the draft")
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const second = message("the final", { supersedes: msg.id })
      assertDelivered(yield* send(alice.client, "bob", second))
      const control = yield* bob.client.next("message_control", (frame) => frame.control.messageId === msg.id)
      assert.strictEqual(control.control.action, "supersede")
      assert.strictEqual(control.control.supersededBy, second.id)
      yield* messageFor(bob.client, second.id)
      assertFailed(yield* send(alice.client, "bob", msg), "E_DELIVERY_SUPERSEDED", `Superseded by ${second.id}`)
    }))

  it.effect("delivered to P49's other holder, addressed to the target's id now back, is E_SUPERSEDE_TARGET and tells no one", () =>
    Effect.gen(function*() {
      const { world, disk, first, alice } = yield* bob1Gone()
      const bob2 = yield* world.session({ sessionId: "bob-2", name: "bob", cwd: "/tmp" })
      const msg = message("for whichever bob")
      assertDelivered(yield* send(alice.client, "bob-1", msg))
      yield* messageFor(bob2.client, msg.id)
      const { alice2, bob1Back, bob2Back } = yield* restartedWithBobs(world, disk, first)
      assertFailed(
        yield* send(alice2.client, "bob-1", message("not yours", { supersedes: msg.id })),
        "E_SUPERSEDE_TARGET",
        "Supersede target does not match a previous message from this sender to this receiver"
      )
      yield* settled([alice2.client], [bob1Back.client, bob2Back.client])
      yield* bob1Back.client.expectNothing(["message_control", "message"])
      yield* bob2Back.client.expectNothing("message_control")
      // The session that did get it is superseded in it as before the restart.
      const second = message("yours", { supersedes: msg.id })
      assertDelivered(yield* send(alice2.client, "bob-2", second))
      yield* bob2Back.client.next("message_control", (frame) => frame.control.messageId === msg.id)
      yield* messageFor(bob2Back.client, second.id)
    }))
})
