/**
 * Review revch CH2: an ask under the id of one withdrawn earlier must not be judged by that withdrawal. What told them
 * apart was kept against the ask's `Mail` object, and a copy of it (`{ ...mail }`: given back to the mailbox by
 * MailReturns.requeue, put back by MailDelivery.askAgain, kept or given by WithdrawnCopies) lost it: the new ask's
 * copy, given back before its due time and dropped past it, went silently as withdrawn instead of telling its asker
 * `expired`. A withdrawal now names the ask it withdrew by the ask's message (AskWithdrawals.askOf), which every copy shares.
 * While the stamps lead the clock they hold still, so the withdrawal and the new ask share one stamp and only that
 * tells them apart. Runs in the shared world test/support/asksUnderOneId.ts (non-durable broker on the TestClock;
 * time passes only as modelled: the lead, the replay window, and the ask's timeout).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { asksUnderOneId } from "../support/asksUnderOneId.ts"

const HOUR = 60 * 60 * 1000

/**
 * Alice asks bob X and withdraws it; later she asks X again (its record pushed out). Bob reads that ask without
 * confirming it and leaves before its due time: its copy goes back to the mailbox. Past the due time a send of
 * alice's sweeps the edges, and the mailbox drops the copy. The receipts alice gets for X.
 */
const givenBackBeforeDue = (lead: number) =>
  Effect.map(
    asksUnderOneId({ lead, firstWithdrawn: true, later: [{ text: "second", withdrawn: false }], lastDue: "afterLeaving" }),
    (outcome) => outcome.receipts
  )

describe("an ask under the id of one withdrawn earlier, its copy given back before its due time", () => {
  it.effect("the clocks agreeing: dropped past its due time, its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* givenBackBeforeDue(0), ["expired"])
    }))

  it.effect("the stamps an hour ahead (the withdrawal and the new ask on one stamp): its asker is told expired", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* givenBackBeforeDue(HOUR), ["expired"])
    }))
})
