/**
 * Several asks under one id (its replay record pushed out each time), their copies given back when their recipient
 * leaves: a withdrawal counts for the ask it withdrew and for no other under the id (AskWithdrawals.withdrawnWithin, which
 * matches a withdrawal to its ask by the ask's message, AskWithdrawals.askOf).
 * - One withdrawal remembered per key: a later ask's withdrawal replaced the earlier ask's, and that ask's copy, given
 *   back past its deadline, was judged by the later withdrawal alone — made after that deadline — so its asker was
 *   told `expired` about an ask it had withdrawn. A withdrawal now keeps the one it replaced (AskWithdrawals.withdraw, a few a
 *   key) (task stamps4 item 3).
 * - A withdrawal was tied to the key, not the ask: a later ask's withdrawal made within an earlier, never withdrawn
 *   ask's life silenced that ask's copy (review revdc DC3, with three asks), and so did one made past its due time
 *   while the stamps led the clock and held still at its receipt (review revdc DC2).
 * Runs in the shared world test/support/asksUnderOneId.ts (non-durable broker on the TestClock; time passes only as
 * modelled: the stamps' lead, the replay window, and the time to just past the first ask's deadline).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { asksUnderOneId } from "../support/asksUnderOneId.ts"

const HOUR = 60 * 60 * 1000

/**
 * Alice asks bob X and withdraws it; past its deadline (the replay window) she asks X again and, with
 * `withdrawSecond`, withdraws that too. Bob read both and confirmed neither; he leaves, and with `bobBack` registers
 * again.
 */
const twoAsksOneId = (withdrawSecond: boolean, bobBack = false) =>
  asksUnderOneId({ firstWithdrawn: true, later: [{ text: "second", withdrawn: withdrawSecond }], lastDue: "never", bobBack })

describe("two asks under one id, the first withdrawn, the first's copy given back past its deadline", () => {
  it.effect("only the first withdrawn: its copy goes silently, the second's goes back to the mailbox and to bob on his return", () =>
    Effect.gen(function*() {
      const outcome = yield* twoAsksOneId(false, true)
      assert.deepStrictEqual(outcome.receipts, [])
      assert.deepStrictEqual(outcome.back, ["second"])
    }))

  it.effect("the second withdrawn too, after the first's deadline: both copies go silently", () =>
    Effect.gen(function*() {
      const outcome = yield* twoAsksOneId(true, true)
      assert.deepStrictEqual(outcome.receipts, [])
      assert.deepStrictEqual(outcome.back, [])
    }))
})

describe("an ask never withdrawn, a later ask under its id withdrawn, the first's copy given back past its deadline", () => {
  /** The first never withdrawn; the second withdrawn past the first's due time (the replay window); bob leaves. */
  const secondWithdrawn = (lead: number) =>
    Effect.map(
      asksUnderOneId({ lead, firstWithdrawn: false, later: [{ text: "second", withdrawn: true }], lastDue: "never" }),
      (outcome) => outcome.receipts
    )

  it.effect("the clocks agreeing: its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* secondWithdrawn(0), ["expired"])
    }))

  it.effect("the stamps an hour ahead (the later withdrawal on the first ask's receipt stamp): its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* secondWithdrawn(HOUR), ["expired"])
    }))

  it.effect("a ten-minute timeout, a second withdrawn within the first's life, a third past it: its asker is told expired", () =>
    Effect.gen(function*() {
      const outcome = yield* asksUnderOneId({
        askTimeoutMs: 600_000,
        firstWithdrawn: false,
        later: [{ text: "second", withdrawn: true }, { text: "third", withdrawn: true, pastFirstDeadline: true }],
        lastDue: "never"
      })
      assert.deepStrictEqual(outcome.receipts, ["expired"])
    }))
})
