/**
 * A cancel of a reply of this client's whose callers stopped waiting — timed
 * out, given up — or whose connection was lost before the broker's answer
 * was read may still have been carried out, the question asked again: so
 * the question's pair stays reopened and a copy passes once (a possible
 * duplicate, never a loss) until the late answer is read, which closes it
 * (ConnectionSends' `cancel`, RecentMessages.cancelEnded; review revag
 * AG1). A cancel waiting for the reply's own answer lets nothing go before
 * its frame is written (RecentMessages.cancelWritten; review revaa AA2); a
 * second caller of the same cancel still waiting after the first gave up
 * gets the broker's answer (review revad AD3). Each runs against a scripted broker on a
 * real socket and waits on a marker it scripted last, never on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import type { InboundMessage } from "../../src/client/events.ts"
import type { Message } from "../../src/protocol/frames.ts"
import { message } from "../support/broker.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./support.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"

/** A `message` frame from alice. */
const fromAlice = (m: Message) => ({ type: "message", from: ALICE, message: m })
const ids = (seen: ReadonlyArray<InboundMessage>) => seen.map((m) => m.message.id)

describe("IntercomClient: a cancel of its reply whose answer was not read in time", () => {
  it.live("timed out: the question asked again ahead of its late answer passes, and a copy after that answer is dropped", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const marker = message("after the late answer")
      let late = false
      // The cancel is not answered in time; later the broker's question asked again, the cancel's late bare
      // `delivered` (the reply was withdrawn), a copy of the question and a marker come ahead of a list's answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        beforeList: () => late ? [fromAlice(ask), { type: "delivered", messageId: reply.id }, fromAlice(ask), fromAlice(marker)] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered in time")
      late = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the question asked again was dropped, or the copy after the answer passed")
    }))

  it.live("timed out: its late refusal, once read, makes a later copy of the question a repeat again", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const reply = message("yes", { replyTo: ask.id })
      const marker = message("after the copy")
      let late = false
      // The cancel is not answered in time; later its bare refusal (the reply stands), a copy of the question and
      // a marker come ahead of a list's answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        beforeList: () =>
          late
            ? [{ type: "delivery_failed", messageId: reply.id, reason: "Message cannot be cancelled by this session" }, fromAlice(ask), fromAlice(marker)]
            : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered in time")
      late = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, marker.id], "the copy after the refusal passed")
    }))

  it.live("timed out, its answer never read: a copy of the question passes once", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const marker = message("after the copy")
      const reply = message("yes", { replyTo: ask.id })
      let copies = false
      // The cancel is never answered; later, two copies of the question and a marker come ahead of a list's answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        beforeList: () => copies ? [fromAlice(ask), fromAlice(ask), fromAlice(marker)] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 300 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered")
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the copy was dropped, or passed twice")
    }))

  it.live("given up by its caller, its answer never read: a copy of the question passes once", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const marker = message("after the copy")
      const reply = message("yes", { replyTo: ask.id })
      let copies = false
      // The cancel is never answered; after its caller gives up, two copies of the question and a marker come
      // ahead of a list's answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        beforeList: () => copies ? [fromAlice(ask), fromAlice(ask), fromAlice(marker)] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 20_000 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.forkScoped(bob.cancel(reply.id), { startImmediately: true })
      yield* fake.until("the cancel", () => fake.ofType("cancel_message").length === 1)
      yield* Fiber.interrupt(cancel)
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the copy was dropped, or passed twice")
    }))

  it.live("its connection ended as the broker reads it: a copy of the question on the next connection passes once", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const marker = message("after the copy")
      const reply = message("yes", { replyTo: ask.id })
      // The broker ends the connection on the cancel; the next one brings the question twice and a marker.
      const fake = yield* fakeBroker({
        afterRegistered: (connection) => connection === 1 ? [fromAlice(ask)] : [fromAlice(ask), fromAlice(ask), fromAlice(marker)],
        cancelAnswer: "end"
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { reconnectBaseMs: 10 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.exit(bob.cancel(reply.id))
      assert.isTrue(cancel._tag === "Failure", "setup: the cancel was answered")
      yield* heard.next((m) => m.message.id === marker.id)
      assert.strictEqual(fake.connections(), 2, "setup: the copy did not come on a second connection")
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the copy was dropped, or passed twice")
    }))

  it.live("its connection lost after the broker read it: a copy of the question on the next connection passes once", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const marker = message("after the copy")
      const reply = message("yes", { replyTo: ask.id })
      const trigger = message("ends the first connection")
      // The cancel is read and never answered; the broker ends the connection on `trigger`'s send, and the
      // next one brings the question twice and a marker.
      const fake = yield* fakeBroker({
        afterRegistered: (connection) => connection === 1 ? [fromAlice(ask)] : [fromAlice(ask), fromAlice(ask), fromAlice(marker)],
        dropOnSend: (connection, id) => connection === 1 && id === trigger.id
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { reconnectBaseMs: 10 }))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* bob.send({ to: ALICE.id, message: reply })
      const cancel = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
      yield* fake.until("the cancel", () => fake.ofType("cancel_message").length === 1)
      yield* bob.send({ to: ALICE.id, message: trigger })
      assert.isTrue((yield* Fiber.join(cancel))._tag === "Failure", "setup: the cancel was answered")
      yield* heard.next((m) => m.message.id === marker.id)
      assert.strictEqual(fake.connections(), 2, "setup: the copy did not come on a second connection")
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the copy was dropped, or passed twice")
    }))
})

describe("IntercomClient: a cancel of its reply whose send waits for its answer", () => {
  it.live("lets nothing go before the cancel is written: a copy of the question read meanwhile is dropped", () =>
    Effect.gen(function*() {
      const ask = message("still need this?", { expectsReply: true })
      const marker = message("after the copy")
      const reply = message("yes", { replyTo: ask.id })
      let copies = false
      // The reply's send is never answered, so its cancel is never written; a copy comes ahead of a list's answer.
      const fake = yield* fakeBroker({
        afterRegistered: () => [fromAlice(ask)],
        leaveSendUnanswered: (id) => id === reply.id,
        beforeList: () => copies ? [fromAlice(ask), fromAlice(marker)] : []
      })
      const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID))
      const heard = yield* subscribe(bob.messages, "bob's messages")
      yield* bob.connect
      yield* heard.next((m) => m.message.id === ask.id)
      yield* Effect.forkScoped(bob.send({ to: ALICE.id, message: reply }), { startImmediately: true })
      yield* fake.until("the reply's send", () => fake.ofType("send").length === 1)
      // Waits for the send's answer before it writes anything.
      yield* Effect.forkScoped(bob.cancel(reply.id), { startImmediately: true })
      copies = true
      yield* bob.list
      yield* heard.next((m) => m.message.id === marker.id)
      assert.lengthOf(fake.ofType("cancel_message"), 0, "setup: the cancel was written")
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, marker.id], "the answered question reached messages twice")
    }))
})

describe("IntercomClient: a cancel of its reply shared by two callers, the first of which gives up (review revad AD3)", () => {
  /** Bob read alice's ask, replied, and cancels the reply twice; the first caller is interrupted while the second
   * waits; a list's answer then comes behind the question asked again, the cancel's bare `delivered` and a marker. */
  const sharedCancel = Effect.gen(function*() {
    const ask = message("still need this?", { expectsReply: true })
    const reply = message("yes", { replyTo: ask.id })
    const marker = message("after the answer")
    let answer = false
    const fake = yield* fakeBroker({
      afterRegistered: () => [fromAlice(ask)],
      beforeList: () => answer ? [fromAlice(ask), { type: "delivered", messageId: reply.id }, fromAlice(marker)] : []
    })
    const { client: bob } = yield* makeClient(fakeClientOptions(fake, BOB_ID, { sendTimeoutMs: 20_000 }))
    const heard = yield* subscribe(bob.messages, "bob's messages")
    yield* bob.connect
    yield* heard.next((m) => m.message.id === ask.id)
    yield* bob.send({ to: ALICE.id, message: reply })
    const first = yield* Effect.forkScoped(bob.cancel(reply.id), { startImmediately: true })
    yield* fake.until("the cancel", () => fake.ofType("cancel_message").length === 1)
    const second = yield* Effect.forkScoped(Effect.exit(bob.cancel(reply.id)), { startImmediately: true })
    yield* Fiber.interrupt(first)
    answer = true
    yield* bob.list
    yield* heard.next((m) => m.message.id === marker.id)
    return { ask, marker, heard, second, fake }
  })

  it.live("the question asked again ahead of the cancel's answer passes while the second caller waits", () =>
    Effect.gen(function*() {
      const { ask, heard, marker } = yield* sharedCancel
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the question asked again was dropped")
    }))

  it.live("the second caller gets the broker's answer, and the cancel was written once", () =>
    Effect.gen(function*() {
      const { fake, second } = yield* sharedCancel
      // The answer was read before the list's answer, so a cancel still waiting for it has it now: the bound (far
      // below the 20 s request timeout) only turns a hang into a failure.
      const exit = yield* Fiber.join(second).pipe(Effect.timeoutOption("2 seconds"))
      assert.isTrue(exit._tag === "Some", "the second cancel did not end with the broker's answer")
      assert.isTrue(exit._tag === "Some" && Exit.isSuccess(exit.value) && exit.value.value, "the second cancel did not get `cancelled`")
      assert.lengthOf(fake.ofType("cancel_message"), 1, "the cancel was written again")
    }))
})
