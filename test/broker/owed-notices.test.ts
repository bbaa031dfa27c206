/**
 * Failure notices survive a broker crash (issue 13, known issue 5): a durable
 * broker stores the `expired` notice of a message it evicts in the commit
 * that drops the message, keeps it until the sender's client read it
 * (`received-v1`) or it was written (a base client), and a restart owes it to
 * its sender again, still for a day from when it was first owed. In memory,
 * the disk played by a memory store (../support/durable.ts); and once over a
 * real SQLite file, two brokers one after the other (`runBroker`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref, type Scope } from "effect"
import { LAZY_FLUSH } from "../../src/broker/StoreWriter.ts"
import { makeMemoryMailState, type MemoryMailState } from "../../src/store/MailStore.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { assertDelivered } from "../support/assertions.ts"
import { settled } from "../support/barrier.ts"
import { brokerPaths, message, register, send, tempDir } from "../support/broker.ts"
import { runBroker } from "../../src/broker/runBroker.ts"
import { durableBroker, gatedStore } from "../support/durable.ts"
import { advance, memoryNetwork, type MemoryNetwork } from "../support/memory.ts"
import { connect, type WireClient } from "../support/wire.ts"

const CONFIRMING = { frame: { features: [RECEIVED_V1] } }

/** A mailbox of one: a second queued message evicts the first. */
const ONE_SLOT = { mailboxCapacity: 1 }

/**
 * alice queues a message for the departed bob and leaves; carol's message for
 * bob evicts it while alice is away, so the broker owes alice an `expired`
 * notice. Returns the evicted message once that eviction is committed.
 */
const evictWhileAway = (world: MemoryNetwork) =>
  Effect.gen(function*() {
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const carol = yield* world.session({ sessionId: "carol", name: "carol" })
    yield* bob.client.destroy
    yield* alice.client.next("session_left")
    const evicted = message("pushed out while alice was away")
    assertDelivered(yield* send(alice.client, "bob", evicted), "queued")
    yield* alice.client.destroy
    yield* carol.client.next("session_left")
    assertDelivered(yield* send(carol.client, "bob", message("the one the mailbox keeps")), "queued")
    yield* advance(LAZY_FLUSH) // anything nothing waited for is committed by now
    return evicted
  })

/** The `expired` notice about `evicted` is the next receipt `client` reads. */
const expectNotice = (client: WireClient, evicted: Message) =>
  Effect.gen(function*() {
    const notice = yield* client.next("message_receipt")
    assert.deepStrictEqual([notice.receipt.messageId, notice.receipt.status], [evicted.id, "expired"])
  })

/** The senders (by id) of the notices on the disk. */
const storedNotices = (disk: MemoryMailState) => [...disk.notices.values()].map((row) => row.senderKey.split("\u0000").at(-1))

/** The notices on the disk owed to alice. */
const aliceNotices = (disk: MemoryMailState) => storedNotices(disk).filter((sender) => sender === "alice").length

describe("durable broker: a notice owed to an absent sender survives a crash", () => {
  it.effect("alice's evicted message: the notice is stored, survives the crash, and reaches alice when she registers; read, it leaves the store", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, ONE_SLOT)
      const evicted = yield* evictWhileAway(world)
      assert.strictEqual(disk.notices.size, 1, "the owed notice is on the disk")
      assert.strictEqual(disk.mail.size, 1, "only carol's message is: alice's was dropped")
      yield* first.crash

      yield* durableBroker(world, disk, ONE_SLOT)
      const back = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* expectNotice(back.client, evicted)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.notices.size, 1, "written but not confirmed: still stored")
      yield* back.client.send({ type: "received", frames: back.client.received().length })
      yield* settled([back.client])
      yield* advance(LAZY_FLUSH)
      assert.deepStrictEqual(storedNotices(disk), [], "confirmed: it left the store")
    }))

  it.effect("a base client's notice leaves the store once written; a second crash then owes nothing", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, ONE_SLOT)
      const evicted = yield* evictWhileAway(world)
      yield* first.crash

      const second = yield* durableBroker(world, disk, ONE_SLOT)
      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* expectNotice(back.client, evicted)
      yield* settled([back.client])
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.notices.size, 0)
      yield* second.crash

      yield* durableBroker(world, disk, ONE_SLOT)
      const again = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* again.client.roundTrip
      yield* again.client.expectNothing("message_receipt")
    }))

  it.effect("the commit that drops the evicted message stores its notice", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const gated = yield* gatedStore(disk)
      yield* gated.open
      disk.down = false
      yield* world.startBroker({ ...ONE_SLOT, store: gated.store })
      yield* evictWhileAway(world)
      const commits = yield* Ref.get(gated.commits)
      const withNotice = commits.filter((commit) => (commit.noticePuts ?? []).length > 0)
      assert.strictEqual(withNotice.length, 1)
      const stored = commits.flatMap((commit) => commit.mailPuts).find((put) => put.mail.senderId === "alice")
      assert.isDefined(stored)
      assert.include(withNotice[0]!.mailDeletes, stored!.seq, "the drop and the notice are one transaction")
    }))

  it.effect("a notice owed for more than a day is not sent after a restart, and leaves the store", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, ONE_SLOT)
      yield* evictWhileAway(world)
      yield* first.crash
      yield* advance("25 hours")

      yield* durableBroker(world, disk, ONE_SLOT)
      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_receipt")
      yield* advance(LAZY_FLUSH)
      // (carol's message expired from the mailbox meanwhile: carol is owed a notice of her own)
      assert.strictEqual(aliceNotices(disk), 0)
    }))

  it.effect("a restart keeps the notice's age: owed 23 hours before the crash, it is given up 1 hour after the restart", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, ONE_SLOT)
      yield* evictWhileAway(world)
      yield* first.crash
      yield* advance("23 hours")

      yield* durableBroker(world, disk, ONE_SLOT)
      assert.strictEqual(aliceNotices(disk), 1, "less than a day old: still owed")
      yield* advance("61 minutes")
      // Any registration prunes what is owed for longer than a day.
      const dave = yield* world.session({ sessionId: "dave", name: "dave" })
      yield* dave.client.roundTrip
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(aliceNotices(disk), 0)
      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_receipt")
    }))
})

describe("a notice handed back by a closing connection keeps its age", () => {
  it.effect("owed at 0, written at 23 h to a connection that closes before confirming it: at 24 h it is given up, not kept to 47 h", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker(ONE_SLOT)
      const evicted = yield* evictWhileAway(world)
      const carol = yield* world.session({ sessionId: "carol-watch", name: "carol-watch" })
      yield* advance("23 hours")

      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* expectNotice(alice.client, evicted)
      // Never confirmed read: the closing connection hands the notice back, to be owed again.
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      yield* advance("61 minutes")

      const back = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_receipt")
    }))

  it.effect("a notice handed back within its day is still owed, and reaches the sender's next connection", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker(ONE_SLOT)
      const evicted = yield* evictWhileAway(world)
      const carol = yield* world.session({ sessionId: "carol-watch", name: "carol-watch" })
      yield* advance("23 hours")
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* expectNotice(alice.client, evicted)
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      yield* advance("59 minutes")

      const back = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* expectNotice(back.client, evicted)
    }))
})

describe("an owed notice is kept a day from when it was first owed", () => {
  it.effect("owed a day and a minute ago: not sent to its sender, even when nothing has pruned since", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker(ONE_SLOT)
      yield* evictWhileAway(world)
      yield* advance("1441 minutes")
      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_receipt")
    }))

  it.effect("a younger notice for the same sender does not keep an older one: at 24 h the first goes, the second stays", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      yield* world.startBroker({ mailboxCapacity: 2 })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      yield* bob.client.destroy
      yield* alice.client.next("session_left")
      const first = message("evicted at 0")
      const second = message("evicted at 20 h")
      assertDelivered(yield* send(alice.client, "bob", first), "queued")
      assertDelivered(yield* send(alice.client, "bob", second), "queued")
      yield* alice.client.destroy
      yield* carol.client.next("session_left", (frame) => frame.sessionId === "alice")
      assertDelivered(yield* send(carol.client, "bob", message("evicts the first")), "queued")
      yield* advance("20 hours")
      assertDelivered(yield* send(carol.client, "bob", message("evicts the second")), "queued")
      yield* advance("241 minutes")

      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      yield* expectNotice(back.client, second)
      yield* back.client.roundTrip
      yield* back.client.expectNothing("message_receipt")
    }))
})

describe("durable broker: a notice written to its connected sender and not yet read survives a crash", () => {
  it.effect("alice (received-v1) is told at once but does not confirm; the broker crashes; alice's next connection gets the notice again", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, ONE_SLOT)
      const alice = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* bob.client.destroy
      yield* alice.client.next("session_left")
      const evicted = message("evicted while alice is here")
      assertDelivered(yield* send(alice.client, "bob", evicted), "queued")
      assertDelivered(yield* send(alice.client, "bob", message("kept")), "queued")
      yield* expectNotice(alice.client, evicted)
      yield* advance(LAZY_FLUSH)
      assert.strictEqual(disk.notices.size, 1, "written, unconfirmed: stored")
      yield* first.crash

      yield* durableBroker(world, disk, ONE_SLOT)
      const back = yield* world.session({ sessionId: "alice", name: "alice", ...CONFIRMING })
      yield* expectNotice(back.client, evicted)
    }))
})

describe("durable broker: mail restored for a target that has not come back is still accounted for when dropped", () => {
  it.effect("alice's queued message to bob survives a crash; bob does not come back; carol's mail evicts it; alice is told", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* durableBroker(world, disk, ONE_SLOT)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* bob.client.destroy
      yield* alice.client.next("session_left")
      const evicted = message("for bob, who is not back")
      assertDelivered(yield* send(alice.client, "bob", evicted), "queued")
      yield* first.crash

      yield* durableBroker(world, disk, ONE_SLOT)
      const back = yield* world.session({ sessionId: "alice", name: "alice" })
      const dave = yield* world.session({ sessionId: "dave", name: "dave" })
      const carol = yield* world.session({ sessionId: "carol", name: "carol" })
      yield* dave.client.destroy
      yield* carol.client.next("session_left")
      assertDelivered(yield* send(carol.client, "dave", message("takes the only slot")), "queued")
      yield* expectNotice(back.client, evicted)
    }))
})

describe("over the SQLite database: the owed notice is read back by the next broker on the same file", () => {
  /** A broker on `root`'s intercom dir (durable: `intercom.db`) with a mailbox of one, around `body`. */
  const withBroker = <A, E>(root: string, body: Effect.Effect<A, E, Scope.Scope>) => {
    const { intercomDir, socketPath } = brokerPaths(root)
    return Effect.scoped(
      Effect.andThen(runBroker({ intercomDir, socketPath, idleExit: null, writePidFile: false, ...ONE_SLOT }), body)
    )
  }
  const sessionOn = (root: string, id: string) =>
    Effect.gen(function*() {
      const client = yield* connect(brokerPaths(root).socketPath, id)
      yield* register(client, { sessionId: id, name: id })
      return client
    })

  it.live("alice's message is evicted while she is away; the broker stops; the next one on the same database tells alice", () =>
    Effect.gen(function*() {
      const root = yield* tempDir()
      const evicted = message("evicted, then a restart")
      yield* withBroker(
        root,
        Effect.gen(function*() {
          const alice = yield* sessionOn(root, "alice")
          const bob = yield* sessionOn(root, "bob")
          const carol = yield* sessionOn(root, "carol")
          yield* bob.destroy
          yield* alice.next("session_left")
          assertDelivered(yield* send(alice, "bob", evicted), "queued")
          yield* alice.destroy
          yield* carol.next("session_left", (f) => f.sessionId === "alice")
          assertDelivered(yield* send(carol, "bob", message("kept")), "queued")
        })
      )
      yield* withBroker(
        root,
        Effect.gen(function*() {
          const alice = yield* sessionOn(root, "alice")
          yield* expectNotice(alice, evicted)
        })
      )
    }))
})
