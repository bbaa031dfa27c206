/**
 * The world of the tests across durable restarts on clocks that disagree (test/broker/revby-*,
 * ask-restored-due-bound, ask-expiry-restart-behind, stamps-clock-step, stamps-delivered-restart): one memory
 * network and one simulated disk, on which each run of a durable broker registers alice and bob; a first run on a
 * clock ahead that stores its highest stamp; an ask from alice that bob has read; and the broker's answer to bob's
 * late reply to it. Found by `duplicates`: each of those files built it by hand.
 */
import { type Duration, Effect } from "effect"
import { TestClock } from "effect/testing"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Message } from "../../src/protocol/index.ts"
import { assertDelivered } from "./assertions.ts"
import { message, messageFor, send, type Session } from "./broker.ts"
import { durableBroker } from "./durable.ts"
import { advance, memoryNetwork } from "./memory.ts"

/**
 * A network and a disk shared by every `run`; each run starts a durable broker (broker `options`) on that disk and
 * registers alice, then bob, with it, returning the broker (to crash it) and their sessions. `disk` is there to
 * read, or to seed before the first run.
 */
export const restartWorld = (options: BrokerCoreOptions = {}) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const run = Effect.gen(function*() {
      const broker = yield* durableBroker(world, disk, options)
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      return { broker, alice, bob }
    })
    return { disk, run }
  })

/** The world `restartWorld` makes. */
export type RestartWorld = Effect.Success<ReturnType<typeof restartWorld>>

/** `restartWorld` whose brokers close an ask after `askTimeout`. */
export const askRestartWorld = (askTimeout: Duration.Input) => restartWorld({ askTimeout })

/**
 * A first `run` on the TestClock at `start + ahead`: alice's m0 to bob is delivered and committed with the highest
 * stamp, then the broker crashes and the clock is set to `start` — behind the stored stamps by `ahead`.
 */
export const firstRunAhead = (run: RestartWorld["run"], start: number, ahead: number) =>
  Effect.gen(function*() {
    yield* TestClock.setTime(start + ahead)
    const first = yield* run
    assertDelivered(yield* send(first.alice.client, "bob", message("m0")))
    yield* advance(1_000) // committed, with the highest stamp
    yield* first.broker.crash
    yield* TestClock.setTime(start)
  })

/** Alice asks bob (`q`, expecting a reply), acknowledged `delivered`, and bob's client reads it. */
export const askBob = (alice: Session, bob: Session) =>
  Effect.gen(function*() {
    const q = message("q", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", q))
    yield* messageFor(bob.client, q.id)
    return q
  })

/** The type of the broker's answer to bob's reply to `q` (`delivered`, or `delivery_failed` once q is closed). */
export const lateReply = (bob: Session, q: Message) =>
  Effect.map(send(bob.client, "alice", message("late", { replyTo: q.id })), (answer) => answer.type)
