/**
 * Review revad probes (merge fixaa, 607cda30): a second cancel of the same
 * reply shares the first one's answer (ClientConnection's `cancel`). fixaa's
 * `Effect.onExit(unanswered)` takes the shared answer out of `cancels` when
 * the FIRST caller is interrupted, though the second still waits on it.
 * Each test FAILS on main as of 607cda30. Against a scripted broker on a
 * real socket; waits on a list's answer, never on a sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber } from "effect"
import type { InboundMessage } from "../src/client/events.ts"
import type { Message } from "../src/protocol/frames.ts"
import { fakeBroker, fakeClientOptions, makeClient, subscribe } from "./client/support.ts"
import { message } from "./support/broker.ts"

const ALICE = { id: "aaaaaaaa-5555-4000-8000-00000000000a", cwd: "/w", model: "m", pid: 2, startedAt: 0, lastActivity: 0 }
const BOB_ID = "bbbbbbbb-5555-4000-8000-00000000000b"
const fromAlice = (m: Message) => ({ type: "message", from: ALICE, message: m })
const ids = (seen: ReadonlyArray<InboundMessage>) => seen.map((m) => m.message.id)

describe("review revad: a shared cancel whose first caller gives up", () => {
  /** Bob read alice's ask, replied, and cancels the reply twice; the first caller is interrupted; a list's answer
   * then comes behind the question asked again, the cancel's bare `delivered` and a marker. */
  const scenario = Effect.gen(function*() {
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
    // The first caller gives up (an abort, its own timeout); the second still waits for the same answer.
    yield* Fiber.interrupt(first)
    answer = true
    yield* bob.list
    yield* heard.next((m) => m.message.id === marker.id)
    return { ask, marker, heard, second }
  })

  it.live("AD3a: the question asked again ahead of the cancel's answer passes while the second caller waits", () =>
    Effect.gen(function*() {
      const { ask, heard, marker } = yield* scenario
      assert.deepStrictEqual(ids(heard.seen()), [ask.id, ask.id, marker.id], "the question asked again was dropped")
    }))

  it.live("AD3b: the second caller gets the broker's answer", () =>
    Effect.gen(function*() {
      const { second } = yield* scenario
      // The answer was read before the list's answer: a cancel still waiting has it now (1 s is a poll's bound).
      const exit = yield* Fiber.await(second).pipe(Effect.timeoutOption("1 second"))
      assert.isTrue(exit._tag === "Some" && Exit.isSuccess(exit.value) && Exit.isSuccess(exit.value.value) && exit.value.value.value === true,
        "the second cancel did not get the broker's answer read before the list's")
    }))
})
