/**
 * P92 idle exit against P49's mailbox: a broker without a store holds mail
 * for absent sessions, and the lost-mail notices owed to absent senders, only
 * in its memory, so it does not idle-exit while it holds any; the idle period
 * starts once the last of it is delivered or has expired. A durable broker
 * exits as before: its mail is on the disk and the next broker restores it.
 * On simulated time (../support/memory.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger, References } from "effect"
import type { BrokerService } from "../../src/broker/index.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { EPHEMERAL_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { makeMemory, makeMemoryMailState } from "../../src/store/MailStore.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, messageFor, send } from "../support/broker.ts"
import { advanceTo, exitsAt, memoryNetwork, type MemoryNetwork, now } from "../support/memory.ts"

const IDLE = 2_000
const RETENTION = 60_000
const DAY = 86_400_000

/** The broker's idle exit, watched from a fiber of the test. */
const watch = (broker: BrokerService) =>
  Effect.map(
    Effect.forkChild(broker.idleExit, { startImmediately: true }),
    (exit) => () => exit.pollUnsafe() !== undefined
  )

/**
 * bob leaves, alice queues a message for him (acknowledged `queued`) and
 * leaves too: no session is left. Returns the message, when it was queued and
 * when the last session left.
 */
const queueForAbsentBob = (world: MemoryNetwork) =>
  Effect.gen(function*() {
    const bob = yield* world.session({ sessionId: "bob", name: "bob" })
    const alice = yield* world.session({ sessionId: "alice", name: "alice" })
    yield* bob.client.send({ type: "unregister" })
    yield* alice.client.next("session_left")
    const kept: Message = message("kept for bob")
    assertDelivered(yield* send(alice.client, "bob", kept), "queued")
    const queuedAt = yield* now
    yield* alice.client.send({ type: "unregister" })
    return { kept, queuedAt, leftAt: yield* now }
  })

/** Runs `body` with the broker's log lines at Info and above collected into `lines`. */
const capturingLogs = <A, E, R>(lines: Array<string>, body: Effect.Effect<A, E, R>) =>
  body.pipe(
    Effect.provide(Logger.layer([Logger.make<unknown, void>(({ message }) => {
      lines.push(Array.isArray(message) ? message.join(" ") : String(message))
    })])),
    Effect.provideService(References.MinimumLogLevel, "Info")
  )

/** The lines that say an idle exit was put off for held mail. */
const deferrals = (lines: ReadonlyArray<string>) => lines.filter((line) => line.includes("but not exiting"))

describe("P92/P49 idle exit with mail held for absent sessions", () => {
  it.effect("memory mode: no exit while mail is queued; once it is delivered, exit exactly idleExit after the last leave", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const { core } = yield* world.startBroker({ idleExit: IDLE })
      const exited = yield* watch(core)
      const { kept, leftAt } = yield* queueForAbsentBob(world)
      yield* advanceTo(leftAt + 3_600_000)
      assert.isFalse(exited(), "idle-exited holding acknowledged mail for bob (lost with the process)")

      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* messageFor(bob.client, kept.id)
      yield* bob.client.send({ type: "unregister" })
      yield* exitsAt(exited, (yield* now) + IDLE)
    }))

  it.effect("memory mode: mail that expires unread is owed to its absent sender as a notice; the broker stays until she has it, then exits", () => {
    const lines: Array<string> = []
    return capturingLogs(lines, Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const { core } = yield* world.startBroker({ idleExit: IDLE, mailboxRetention: RETENTION })
      const exited = yield* watch(core)
      const { kept, queuedAt } = yield* queueForAbsentBob(world)
      const expiry = queuedAt + RETENTION + 1
      // Past the expiry, and an idle period on: the mail is gone, the notice about it is held.
      yield* advanceTo(expiry + 2 * IDLE)
      assert.isFalse(exited(), "idle-exited holding the expired notice owed to alice")
      // Said once when the last session left holding mail, not again when the mail expired into a notice.
      assert.strictEqual(deferrals(lines).length, 1, deferrals(lines).join("\n"))
      assert.include(deferrals(lines)[0], "1 queued message(s) for absent sessions, 0 lost-mail notice(s) owed to absent senders and 0 cancel")

      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const notice = yield* alice.client.next("message_receipt")
      assert.deepStrictEqual([notice.receipt.messageId, notice.receipt.status], [kept.id, "expired"])
      yield* alice.client.send({ type: "unregister" })
      yield* exitsAt(exited, (yield* now) + IDLE)
    }))
  })

  it.effect("memory mode: with nobody back, the idle period starts when the last of it expires (mail, then the owed notice a day on)", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const { core } = yield* world.startBroker({ idleExit: IDLE, mailboxRetention: RETENTION })
      const exited = yield* watch(core)
      const { queuedAt } = yield* queueForAbsentBob(world)
      const expiry = queuedAt + RETENTION + 1
      // The notice is owed from the expiry for a day; the idle period starts when it is given up.
      yield* exitsAt(exited, expiry + DAY + 1 + IDLE)
    }))

  it.effect("memory mode: a notice for a one-shot sender that ended by unregister is not owed, so it holds nothing: exit idleExit after the expiry", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const { core } = yield* world.startBroker({ idleExit: IDLE, mailboxRetention: RETENTION })
      const exited = yield* watch(core)
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* bob.client.send({ type: "unregister" })
      yield* bob.client.roundTrip
      // What a CLI command is (src/cli/client/run.ts): a short-lived session under a fresh id.
      const cli = yield* world.session({
        sessionId: "cli-1",
        name: "cli",
        frame: { features: [EPHEMERAL_V1, RECEIVED_V1], ephemeral: true }
      })
      assertDelivered(yield* send(cli.client, "bob", message("from the CLI")), "queued")
      const queuedAt = yield* now
      yield* cli.client.send({ type: "unregister" })
      yield* cli.client.roundTrip
      // The mail is held until it expires; its notice would be owed to nobody, so the idle period starts there.
      yield* exitsAt(exited, queuedAt + RETENTION + 1 + IDLE)
    }))

  it.effect("memory mode: nor for one that ended more than a day before its mail expired (retention 2 days; the broker forgets ended sessions after a day): exit idleExit after the expiry", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const retention = 2 * DAY
      const { core } = yield* world.startBroker({ idleExit: IDLE, mailboxRetention: retention })
      const exited = yield* watch(core)
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* bob.client.send({ type: "unregister" })
      yield* bob.client.roundTrip
      const cli = yield* world.session({
        sessionId: "cli-2",
        name: "cli",
        frame: { features: [EPHEMERAL_V1, RECEIVED_V1], ephemeral: true }
      })
      assertDelivered(yield* send(cli.client, "bob", message("from the CLI, two days on")), "queued")
      const queuedAt = yield* now
      yield* cli.client.send({ type: "unregister" })
      yield* cli.client.roundTrip
      // A day on, the broker no longer knows cli-2 ended; its message still says so, and expires owing nothing.
      yield* exitsAt(exited, queuedAt + retention + 1 + IDLE)
    }))

  it.effect("durable mode: the broker exits idleExit after the last leave with mail queued; the next broker restores it and delivers it", () =>
    Effect.gen(function*() {
      const world = yield* memoryNetwork()
      const disk = makeMemoryMailState()
      const first = yield* world.startBroker({ idleExit: IDLE, store: makeMemory(disk) })
      const exited = yield* watch(first.core)
      const { kept, leftAt } = yield* queueForAbsentBob(world)
      yield* exitsAt(exited, leftAt + IDLE)
      // What the CLI does on idle exit: close the broker's Scope (its shutdown commits what is left).
      yield* first.crash

      yield* world.startBroker({ idleExit: IDLE, store: makeMemory(disk) })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      yield* messageFor(bob.client, kept.id)
    }))
})
