/**
 * A mailbox flush rewrites its message's replay record `socket_delivered` when that record is the flushed mail's
 * (DeliveryRecords.rewrite's `owner`, task flushrw), also for a `replace`-staged message handed over without the
 * `supersedes` its sender settled while it waited (Send.ts `withoutSupersedes`), whose record keeps the send's
 * fingerprint, `supersedes` included. d's m1 (supersedes m0, staged) is delivered to b-1 after d cancelled m0; b's
 * connection drops unconfirmed, m1 goes back to the mailbox, b-1 returns and is flushed m1: a retry of m1 is then
 * answered delivered to the socket, not `queued`. On a Router driven by hand, the clock in the test's hands; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { RECEIVED_V1 } from "../../src/protocol/features.ts"
import { replace, stagedSettledGivenBack } from "../support/stagedSettledSupersedes.ts"

describe("a mailbox flush of a staged message handed over without its settled supersedes", () => {
  it.effect("rewrites its own replay record: a retry of it is answered socket_delivered, not queued", () =>
    Effect.gen(function*() {
      const { batch, connect, d, framesOf, m1 } = yield* stagedSettledGivenBack
      const back = connect(3, "b", [RECEIVED_V1], "b-1")
      assert.strictEqual(framesOf(back).filter((f) => f.type === "message" && f.message?.id === m1.id).length, 1, "b-1's return was not flushed m1: the test sets up nothing")
      const from = framesOf(d).length
      batch(d, [{ type: "send", to: "b", message: m1, ...replace }])
      const answers = framesOf(d).slice(from).filter((f) => f.messageId === m1.id).map((f) => `${f.type} ${f.delivery ?? f.code ?? ""}`.trimEnd())
      assert.deepStrictEqual(answers, ["delivered socket_delivered"], "d's retry of the flushed m1 was not answered delivered to the socket")
    }))
})
