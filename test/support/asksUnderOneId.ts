/**
 * One world for the tests of asks under one reused id whose copies come back (stamps-withdrawn-reused-id,
 * stamps-given-back-mark, withdrawn-two-asks-one-id): alice asks bob X, which bob reads and never confirms; past the
 * replay window (its record pushed out by the `replayRecords` bound) she asks X again, as often as the case says,
 * withdrawing each ask or not; bob leaves, his unconfirmed copies going back. Which withdrawal counts for which copy
 * is what these tests tell apart (AskWithdrawals.withdrawnWithin). Non-durable broker on the TestClock; time passes only as
 * modelled: the stamps' lead (a send ahead, the clock then set back), the replay window, an ask's timeout, and the
 * time to just past the first ask's deadline.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { REPLAY_WINDOW_MS } from "../../src/protocol/constants.ts"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { assertDelivered } from "./assertions.ts"
import { message, messageFor, send } from "./broker.ts"
import { advance, advanceTo, memoryNetwork } from "./memory.ts"

/** Where the world starts on the clock. */
const START = 1_000_000_000

/** One ask under X after the first, sent past the replay window after the one before it. */
export interface LaterAsk {
  /** Its content text (what bob is seen to read). */
  readonly text: string
  /** Alice withdraws it (`cancel_ask`) once bob read it. */
  readonly withdrawn: boolean
  /** The clock moves to just past the first ask's deadline before that withdrawal. */
  readonly pastFirstDeadline?: boolean
}

/** The case: see each field. */
export interface AsksUnderOneId {
  /** How far the stamps lead the clock (ms; 0: they agree). */
  readonly lead?: number
  /** The broker's ask timeout (ms); 60 s unless given (then every deadline passes within the replay window). */
  readonly askTimeoutMs?: number
  /** Alice withdraws the first ask once bob read it. */
  readonly firstWithdrawn: boolean
  /** The asks under X after it, in order. */
  readonly later: ReadonlyArray<LaterAsk>
  /**
   * When the last ask's due time passes: `never` (bob leaves within it), `beforeLeaving` (then bob leaves), or
   * `afterLeaving` (bob leaves, then past it a send of alice's to carol sweeps the edges and the mailbox drops the copy).
   */
  readonly lastDue: "never" | "beforeLeaving" | "afterLeaving"
  /** Bob registers again at the end: the texts under X he is then given are returned (`back`). */
  readonly bobBack?: boolean
}

/** What alice is told about X (`receipts`, statuses in order) and, with `bobBack`, what bob is given back (`back`). */
export interface Outcome {
  readonly receipts: ReadonlyArray<string>
  readonly back: ReadonlyArray<string>
}

/** Runs the case `world` (see `AsksUnderOneId`). */
export const asksUnderOneId = (world: AsksUnderOneId) =>
  Effect.gen(function*() {
    const askTimeoutMs = world.askTimeoutMs ?? 60_000
    yield* TestClock.setTime(START + (world.lead ?? 0))
    const net = yield* memoryNetwork()
    yield* net.startBroker({ askTimeout: askTimeoutMs, replayRecords: 2 })
    const alice = yield* net.session({ sessionId: "alice", name: "alice" })
    const bob = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    if (world.lastDue === "afterLeaving") yield* net.session({ sessionId: "carol", name: "carol" })
    assertDelivered(yield* send(alice.client, "bob", message("m0")))
    yield* TestClock.setTime(START)
    const first = message("first", { expectsReply: true })
    assertDelivered(yield* send(alice.client, "bob", first))
    yield* messageFor(bob.client, first.id) // read, never confirmed
    const withdraw = Effect.gen(function*() {
      yield* alice.client.send({ type: "cancel_ask", messageId: first.id })
      yield* alice.client.roundTrip
    })
    if (world.firstWithdrawn) yield* withdraw
    for (const later of world.later) {
      yield* advance(REPLAY_WINDOW_MS + 1)
      for (const text of ["y1", "y2", "y3"]) assertDelivered(yield* send(alice.client, "bob", message(text)))
      const again = { ...message(later.text, { expectsReply: true }), id: first.id }
      const verdict = yield* send(alice.client, "bob", again)
      assert.strictEqual(verdict.type, "delivered", `setup: the ask '${later.text}' under the id was not taken as new`)
      yield* bob.client.next("message", (f) => f.message.id === first.id && f.message.content.text === later.text)
      if (later.pastFirstDeadline === true) yield* advanceTo(START + askTimeoutMs + 1_000)
      if (later.withdrawn) yield* withdraw
    }
    if (world.lastDue === "beforeLeaving") yield* advance(askTimeoutMs + 1)
    yield* bob.client.destroy
    yield* alice.client.next("session_left", (frame) => frame.sessionId === "bob")
    yield* alice.client.roundTrip
    if (world.lastDue === "afterLeaving") {
      yield* advance(askTimeoutMs + 1)
      assertDelivered(yield* send(alice.client, "carol", message("sweep")))
      yield* alice.client.roundTrip
    }
    const receipts = alice.client.received().flatMap((frame) =>
      frame.type === "message_receipt" && frame.receipt.messageId === first.id ? [frame.receipt.status] : []
    )
    if (world.bobBack !== true) return { receipts, back: [] } satisfies Outcome
    // A round trip on his new connection: what the mailbox gives a registration is written before its answer.
    const back = yield* net.session({ sessionId: "bob", name: "bob", frame: { features: [RECEIVED_V1] } })
    yield* back.client.roundTrip
    const texts = back.client.received().flatMap((frame) =>
      frame.type === "message" && frame.message.id === first.id ? [frame.message.content.text] : []
    )
    return { receipts, back: texts } satisfies Outcome
  })
