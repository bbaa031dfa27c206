/**
 * Known issue 6, for hosts that keep a history (`InboundJournal.handled`): a
 * new process of a session remembers what its agent's history holds, so the
 * copy of a message the broker sends again — because the old process read it
 * and never got to confirm it (`received-v1`), or because the broker crashed
 * before storing the confirmation — is dropped instead of reaching the agent
 * a second time.
 *
 * The old process is played by a wire client registered as bob with
 * `received-v1` that reads the message and goes away without confirming it,
 * so the broker keeps the mail and writes it to bob's next connection: a real
 * `IntercomClient` and session generation, whose host journal says what the
 * agent's history holds. In memory, under TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Queue } from "effect"
import type { IntercomClientService } from "../../src/client/IntercomClient.ts"
import type { Message } from "../../src/protocol/frames.ts"
import type { HandledMessage, HostService, JournalRecord } from "../../src/session/Host.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message, send } from "../support/broker.ts"
import { advance, settle } from "../support/memory.ts"
import { A_ID, readButNeverConfirmed, sessionGeneration, WINDOW_MS } from "./restartSupport.ts"
import { info, makeRecordingHost, type RecordingHost } from "./support.ts"

const identity = { name: "bob", cwd: "/work", model: "test-model" }

/** What bob's restarted host's journal says, besides `handled`. */
interface RestartOptions {
  /** What it holds undelivered (restored first); none by default. */
  readonly undelivered?: ReadonlyArray<JournalRecord>
  /** Yields this many times before it answers `handled` (a journal that reads a file). */
  readonly handledAfterYields?: number
  /** The de-duplication window's capacity. */
  readonly capacity?: number
}

/** bob's new generation, over a host whose journal says `handled` (or nothing, when undefined). */
const restartWith = (
  bob: IntercomClientService,
  handled: ReadonlyArray<HandledMessage> | undefined,
  options: RestartOptions = {}
) =>
  Effect.gen(function*() {
    const host = yield* makeRecordingHost(identity)
    const answer = Effect.succeed(handled ?? [])
    const slow = options.handledAfterYields === undefined
      ? answer
      : Effect.andThen(Effect.forEach(Array.from({ length: options.handledAfterYields }), () => Effect.yieldNow), answer)
    const service: HostService = {
      ...host.service,
      journal: {
        checkpoint: () => Effect.void,
        undelivered: Effect.succeed(options.undelivered ?? []),
        ...(handled === undefined ? {} : { handled: slow })
      }
    }
    yield* sessionGeneration(bob, service, options.capacity)
    yield* settle(bob.connect)
    return host
  })

/** What the host took, by message id, once `later` (sent after the rest) reached it. */
const takenUpTo = (
  host: RecordingHost,
  alice: { readonly client: Parameters<typeof send>[0] },
  bob: IntercomClientService,
  later: Message
) =>
  Effect.gen(function*() {
    assertDelivered(yield* send(alice.client, "bob", later))
    // A round trip on bob after alice's acknowledged send: everything sent before it has reached bob's session.
    yield* settle(bob.list)
    yield* settle(bob.list)
    return (yield* Queue.clear(host.inbox)).map((inbound) => inbound.message.id)
  })

/**
 * The whole scenario: a message bob's old process read and never confirmed;
 * `elapsedMs` later, bob's new generation starts over a journal that says
 * `handled(first)`; then alice sends one more. What bob's new host took, by id.
 */
const afterRestart = (
  handled: (first: Message) => ReadonlyArray<HandledMessage> | undefined,
  elapsedMs = 0
) =>
  Effect.gen(function*() {
    const first = message("read by the old process, never confirmed")
    const { alice, bob } = yield* readButNeverConfirmed(first)
    if (elapsedMs > 0) yield* advance(elapsedMs)
    const host = yield* restartWith(bob, handled(first))
    const later = message("sent after the restart")
    return { first: first.id, later: later.id, taken: yield* takenUpTo(host, alice, bob, later) }
  })

describe("known issue 6: a restarted process does not hand its agent a message its history holds", () => {
  it.effect("the broker's copy of a message the history holds is dropped; a new message still reaches the host", () =>
    Effect.gen(function*() {
      const { later, taken } = yield* afterRestart((first) => [{ fromId: A_ID, messageId: first.id, receivedAt: 0 }])
      assert.deepStrictEqual(taken, [later])
    }))

  it.effect("a journal that does not say what history holds: the copy reaches the new host again (the old behaviour)", () =>
    Effect.gen(function*() {
      const { first, later, taken } = yield* afterRestart(() => undefined)
      assert.deepStrictEqual(taken, [first, later])
    }))

  it.effect("a message history holds from another sender, or with another id, is not mistaken for it", () =>
    Effect.gen(function*() {
      const { first, later, taken } = yield* afterRestart((m) => [
        { fromId: "someone-else", messageId: m.id },
        { fromId: A_ID, messageId: `${m.id}-other` }
      ])
      assert.deepStrictEqual(taken, [first, later])
    }))

  // The session's clock starts at 0 with the broker's; a receive time a window and a millisecond before now is past.
  it.effect("one received longer ago than the de-duplication window is not remembered", () =>
    Effect.gen(function*() {
      const { first, later, taken } = yield* afterRestart(
        (m) => [{ fromId: A_ID, messageId: m.id, receivedAt: 0 }],
        WINDOW_MS + 1
      )
      assert.deepStrictEqual(taken, [first, later])
    }))

  it.effect("one without a receive time is remembered from the generation's start", () =>
    Effect.gen(function*() {
      const { later, taken } = yield* afterRestart((m) => [{ fromId: A_ID, messageId: m.id }], WINDOW_MS + 1)
      assert.deepStrictEqual(taken, [later])
    }))

  // Its window counts from the hand-over, not from the old receive time: a process restarted after a long
  // downtime still gets the broker's copy of what it restored (the broker keeps mail for a day).
  it.effect("a restored message received longer ago than the window is remembered from its hand-over: the broker's copy is dropped", () =>
    Effect.gen(function*() {
      const first = message("checkpointed and read by the old process, restored after a long downtime")
      const { alice, bob } = yield* readButNeverConfirmed(first)
      yield* advance(WINDOW_MS + 1)
      const host = yield* restartWith(bob, [], {
        undelivered: [{ from: info(A_ID, { name: "alice" }), message: first, receivedAt: 0 }]
      })
      const later = message("sent after the restart")
      assert.deepStrictEqual(yield* takenUpTo(host, alice, bob, later), [first.id, later.id])
    }))

  // The window keeps `capacity` messages and forgets the oldest first: what history holds is remembered before
  // a restored message is handed over, so that one, the likeliest to come again, is not the first forgotten.
  it.effect("a restored message is remembered after what history holds, also when the journal answers late", () =>
    Effect.gen(function*() {
      const first = message("checkpointed and read by the old process, never handed over or confirmed")
      const { alice, bob } = yield* readButNeverConfirmed(first)
      const host = yield* restartWith(bob, [{ fromId: "carol", messageId: "older", receivedAt: 0 }], {
        undelivered: [{ from: info(A_ID, { name: "alice" }), message: first, receivedAt: 0 }],
        handledAfterYields: 50,
        capacity: 1
      })
      const later = message("sent after the restart")
      assert.deepStrictEqual(yield* takenUpTo(host, alice, bob, later), [first.id, later.id])
    }))
})
