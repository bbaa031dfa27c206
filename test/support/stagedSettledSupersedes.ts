/**
 * The set-up two tests share: d's `replace`-staged m1 (supersedes m0) handed over to b-1 without that field, after d
 * cancelled m0 while m1 waited (Send.ts `withoutSupersedes`), then b's connection dropping unconfirmed, so m1 goes
 * back to the mailbox with its record still keeping the send's fingerprint, `supersedes` included. On a Router
 * driven by hand, the clock in the test's hands; no sleep. Shared by test/broker/flush-staged-settled-supersedes
 * .test.ts and test/broker/mailbox-cancel-staged-settled-supersedes.test.ts.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { DELIVERY_V1, RECEIVED_V1 } from "../../src/protocol/features.ts"
import { message } from "./broker.ts"
import { recordedSessions } from "./controlWorld.ts"
import { handRouter } from "./handRouter.ts"

/** The staging window the world's Router is given (ms). */
const WINDOW_MS = 1_000

/** The delivery fields of a `replace`-mode send on one thread. */
export const replace = { delivery: "queue", queueMode: "replace", threadId: "status" }

/**
 * The world after m1, handed over to b-1 without its settled `supersedes`, went back to the mailbox with m0's
 * cancelled copy (checked: the set-up's own asserts): its hand-driven Router, `connect`, `framesOf`, d and m1.
 */
export const stagedSettledGivenBack = Effect.gen(function*() {
  const clock = { now: 1_000_000 }
  const hand = yield* handRouter({ replaceWindow: WINDOW_MS }, () => clock.now)
  const { batch, router } = hand
  const { connect, framesOf } = recordedSessions(hand)
  const b = connect(1, "b", [RECEIVED_V1], "b-1")
  const d = connect(2, "d", [DELIVERY_V1])
  const m0 = message("status: building")
  const m1 = message("status: done", { supersedes: m0.id })
  batch(d, [{ type: "send", to: "b", message: m0 }])
  batch(d, [{ type: "send", to: "b", message: m1, ...replace }])
  batch(d, [{ type: "cancel_message", messageId: m0.id }])
  clock.now += WINDOW_MS
  router.staging.flushDue(clock.now)
  const m1ToB = framesOf(b).filter((f) => f.type === "message" && f.message?.id === m1.id)
  assert.strictEqual(m1ToB.length, 1, "m1 was not delivered to b: the test sets up nothing")
  assert.strictEqual(m1ToB[0]?.message?.supersedes, undefined, "m1 was delivered naming m0: the test sets up nothing")
  hand.closeAbandoning(b)
  // Back in the mailbox: m1, and m0's cancelled copy kept for b-1, which read it.
  assert.strictEqual(router.heldMail()?.messages ?? 0, 2, "m1 did not go back to the mailbox: the test sets up nothing")
  return { batch, connect, framesOf, d, m1 }
})
