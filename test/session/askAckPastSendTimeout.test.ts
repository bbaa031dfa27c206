/**
 * An ask whose acknowledgement is held past the client's send timeout, on a
 * connection that stays live (the broker's writes to the asker slow): full
 * sessions on the in-memory broker under TestClock, the asker's inbound
 * frames held from the moment its question is written, then let through one
 * per 100 ms (test/support/slowDialer.ts). Send timeout 3 s, ask timeout 2 s.
 *
 * With `ask-expiry-v1` the send's timeout does not end the ask: the session
 * settles (`settleUnacknowledged`, Ask.ts) — one round trip the broker
 * answers behind the acknowledgement and behind its verdict on the ask.
 * - A reply the broker accepted, held behind the acknowledgement, answers
 *   the ask.
 * - With no reply, the broker's `ask_expired` ends it in `ReplyTimeout` once
 *   the held frames come.
 * - With an ask timeout longer than the send timeout (the broker's edge
 *   still open), the wait goes on: a later reply answers, and without one it
 *   ends in `ReplyTimeout`, not before the broker's deadline.
 * - A connection that drops then, the reply unread in it: the round trip
 *   moves to the next connection, which gives the reply back.
 * - An acknowledgement read, and the connection dropped before the
 *   `ask_expired` behind it is read: the wait ends on its own timer from the
 *   acknowledgement (`ReplyTimeout`), and a reply accepted before the
 *   deadline, lost with the drop, is given back on the next connection and
 *   answers it.
 * Without the extension the send's timeout still ends the ask in
 * `DeliveryUnknown` (the asker cannot hear the broker's verdict).
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Queue } from "effect"
import { TestClock } from "effect/testing"
import { DeliveryUnknown, ReplyTimeout } from "../../src/session/errors.ts"
import { memoryWorld } from "../support/memoryWorld.ts"
import { slowDialer } from "../support/slowDialer.ts"

const TIMEOUT = 2_000
const SEND_TIMEOUT = 3_000
/** An ask timeout longer than the send timeout: the broker's edge is still open when the send times out. */
const LONG_TIMEOUT = 20_000

const failureOf = <A, E>(exit: Exit.Exit<A, E> | undefined) =>
  exit !== undefined && Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined

/** An asker on a slow dialer and an answerer, the asker's question taken by the answerer. */
const asking = (options: { readonly withhold?: string; readonly timeoutMs?: number } = {}) =>
  Effect.gen(function*() {
    const world = yield* memoryWorld()
    const slow = slowDialer(world, options)
    const asker = yield* world.session("asker", { client: { dial: slow.dial, sendTimeoutMs: SEND_TIMEOUT } })
    const answerer = yield* world.session("answerer")
    const ask = yield* Effect.forkChild(asker.session.ask({ to: "answerer", message: "well?", timeoutMs: options.timeoutMs ?? TIMEOUT }))
    yield* Queue.take(answerer.inbound)
    return { asker, answerer, slow, ask }
  })

describe("an ask whose acknowledgement is held past the send timeout", () => {
  it.effect("ask-expiry-v1: a reply the broker accepted, held behind the acknowledgement, answers the ask", () =>
    Effect.gen(function*() {
      const { answerer, ask, asker, slow } = yield* asking()
      assert.include((yield* asker.client.status).features, "ask-expiry-v1")
      yield* TestClock.adjust(TIMEOUT - 500)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      // Past the send timeout, the acknowledgement still unread.
      yield* TestClock.adjust(SEND_TIMEOUT)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended with its acknowledgement unread")
      yield* slow.release
      yield* TestClock.adjust(1_000)
      const exit = ask.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask did not end answered: ${String(failureOf(exit))}`)
      if (exit !== undefined && Exit.isSuccess(exit)) assert.include(exit.value.text, "just in time")
    }))

  it.effect("ask-expiry-v1: with no reply it ends in ReplyTimeout once the held frames come", () =>
    Effect.gen(function*() {
      const { ask, slow } = yield* asking()
      yield* TestClock.adjust(SEND_TIMEOUT + 500)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended with its acknowledgement unread")
      yield* slow.release
      yield* TestClock.adjust(1_000)
      const exit = ask.pollUnsafe()
      assert.isDefined(exit, "the ask still waits after the held frames were read")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("ask-expiry-v1, an ask timeout longer than the send timeout: the wait goes on past the send timeout, and a later reply answers it", () =>
    Effect.gen(function*() {
      const { answerer, ask, slow } = yield* asking({ timeoutMs: LONG_TIMEOUT })
      yield* TestClock.adjust(SEND_TIMEOUT + 500)
      yield* slow.release
      // The acknowledgement and the settling round trip's answer read: the broker's edge is still open.
      yield* TestClock.adjust(1_000)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended though the broker's edge is open")
      const replied = yield* answerer.session.reply({ message: "later" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      yield* TestClock.adjust(1_000)
      const exit = ask.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask did not end answered: ${String(failureOf(exit))}`)
      if (exit !== undefined && Exit.isSuccess(exit)) assert.include(exit.value.text, "later")
    }))

  it.effect("ask-expiry-v1, an ask timeout longer than the send timeout, no reply: ReplyTimeout within the send timeout, its round trip and the ask's timeout", () =>
    Effect.gen(function*() {
      const { ask, slow } = yield* asking({ timeoutMs: LONG_TIMEOUT })
      yield* TestClock.adjust(SEND_TIMEOUT + 500)
      yield* slow.release
      // Before the broker's deadline (sentAt + LONG_TIMEOUT) the ask waits on.
      yield* TestClock.adjust(LONG_TIMEOUT - SEND_TIMEOUT - 1_000)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended before the broker's deadline")
      // The held frames came within a second of the release; from the round trip's answer, the ask's timeout and
      // its closing round trip.
      yield* TestClock.adjust(SEND_TIMEOUT + 1_000)
      const exit = ask.pollUnsafe()
      assert.isDefined(exit, "the ask still waits past its bound")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("ask-expiry-v1: the connection drops at the send timeout with the acknowledgement and a reply unread: the next connection gives the reply back and it answers", () =>
    Effect.gen(function*() {
      const { answerer, ask, slow } = yield* asking()
      yield* TestClock.adjust(TIMEOUT - 500)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      yield* TestClock.adjust(SEND_TIMEOUT)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended with its acknowledgement unread")
      // The settling round trip waits behind the held frames; the connection drops before any is read.
      yield* slow.dropAfter(0)
      yield* slow.release
      yield* TestClock.adjust(2_000)
      const exit = ask.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask did not end answered: ${String(failureOf(exit))}`)
      if (exit !== undefined && Exit.isSuccess(exit)) assert.include(exit.value.text, "just in time")
    }))

  it.effect("without ask-expiry-v1 the send timeout ends the ask in DeliveryUnknown", () =>
    Effect.gen(function*() {
      const { ask, asker } = yield* asking({ withhold: "ask-expiry-v1" })
      assert.notInclude((yield* asker.client.status).features, "ask-expiry-v1")
      yield* TestClock.adjust(SEND_TIMEOUT + 500)
      const exit = ask.pollUnsafe()
      assert.isDefined(exit, "the ask still waits past the send timeout")
      assert.instanceOf(failureOf(exit), DeliveryUnknown)
    }))

  it.effect("ack read late, the connection dropped before the ask_expired behind it: ReplyTimeout within the timeout from the acknowledgement", () =>
    Effect.gen(function*() {
      const { ask, slow } = yield* asking()
      // The broker's deadline passed; its acknowledgement, then its ask_expired, still held.
      yield* TestClock.adjust(TIMEOUT + 500)
      // The acknowledgement is read; the connection drops before the next held frame.
      yield* slow.dropAfter(1)
      yield* slow.release
      // The ask_expired went with the connection (read, it would have ended the ask by now): the wait goes on.
      yield* TestClock.adjust(300)
      assert.isUndefined(ask.pollUnsafe(), "the ask ended though its ask_expired was lost with the connection")
      yield* TestClock.adjust(TIMEOUT - 100)
      const exit = ask.pollUnsafe()
      assert.isDefined(exit, "the ask still waits a timeout after its acknowledgement was read")
      assert.instanceOf(failureOf(exit), ReplyTimeout)
    }))

  it.effect("ack read late, the reply behind it lost with the connection: the next connection gives it back and it answers the ask", () =>
    Effect.gen(function*() {
      const { answerer, ask, slow } = yield* asking()
      yield* TestClock.adjust(TIMEOUT - 500)
      const replied = yield* answerer.session.reply({ message: "just in time" })
      assert.strictEqual(replied.delivery, "socket_delivered")
      yield* TestClock.adjust(1_000)
      yield* slow.dropAfter(1)
      yield* slow.release
      yield* TestClock.adjust(TIMEOUT + 200)
      const exit = ask.pollUnsafe()
      assert.isTrue(exit !== undefined && Exit.isSuccess(exit), `the ask did not end answered: ${String(failureOf(exit))}`)
      if (exit !== undefined && Exit.isSuccess(exit)) assert.include(exit.value.text, "just in time")
    }))
})
