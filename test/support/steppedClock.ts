/**
 * The world of the tests of a broker whose clock steps within a run (test/broker/stamps-ask-edge,
 * stamps-ask-withdrawn, stamps-clock-step, delivered-at-stamp, ask-expiry-stamps-ahead, revby-oldest-age): a
 * hand-driven broker (`controlWorld`, receiver b with custody) on a clock the test holds, a message stamped at one
 * reading, then the clock set to another. Found by `duplicates`: each of those files built it by hand.
 */
import { Effect } from "effect"
import type { BrokerCoreOptions } from "../../src/broker/options.ts"
import { message } from "./broker.ts"
import { controlWorld, custodyFeatures } from "./controlWorld.ts"

/**
 * A `controlWorld` (b with `custodyFeatures`, broker `options`) whose clock reads `stampedAt` while d sends b `m0`
 * — the stamps reach `stampedAt` — and then reads `then`: earlier, a clock stepped back; or, after a `stampedAt`
 * stepped forward, the clock set right again. Either way the stamps lead the clock by `stampedAt - then`. Returns
 * the clock (the test moves it on), the world and m0.
 */
export const steppedWorld = (stampedAt: number, then: number, options: BrokerCoreOptions = {}) =>
  Effect.gen(function*() {
    const clock = { now: stampedAt }
    const w = yield* controlWorld(custodyFeatures, options, clock)
    const m0 = message("m0")
    w.batch(w.d, [{ type: "send", to: "b", message: m0 }])
    clock.now = then
    return { clock, w, m0 }
  })
