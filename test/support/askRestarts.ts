/**
 * The world of the tests of an ask across durable restarts on clocks that disagree (test/broker/revby-*,
 * ask-restored-due-bound, ask-expiry-restart-behind): one memory network and one simulated disk, on which each
 * run of a durable broker with the given ask timeout registers alice and bob; an ask from alice that bob has
 * read; and the broker's answer to bob's late reply to it. Found by `duplicates --change`.
 */
import { type Duration, Effect } from "effect"
import { makeMemoryMailState } from "../../src/store/MailStore.ts"
import type { Message } from "../../src/protocol/index.ts"
import { assertDelivered } from "./assertions.ts"
import { message, messageFor, send, type Session } from "./broker.ts"
import { durableBroker } from "./durable.ts"
import { memoryNetwork } from "./memory.ts"

/**
 * A network and a disk shared by every `run`; each run starts a durable broker (ask timeout `askTimeout`) on that
 * disk and registers alice and bob with it, returning the broker (to crash it) and their sessions.
 */
export const askRestartWorld = (askTimeout: Duration.Input) =>
  Effect.gen(function*() {
    const world = yield* memoryNetwork()
    const disk = makeMemoryMailState()
    const run = Effect.gen(function*() {
      const broker = yield* durableBroker(world, disk, { askTimeout })
      const alice = yield* world.session({ sessionId: "alice", name: "alice" })
      const bob = yield* world.session({ sessionId: "bob", name: "bob" })
      return { broker, alice, bob }
    })
    return { run }
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
