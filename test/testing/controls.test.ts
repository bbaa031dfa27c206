/**
 * Cancels and supersedes in generated workloads (simulation/controls.ts):
 * the `CustodyHold` op's control about a message its hold keeps reaches the
 * receiver after that message, with the ledger's control checks holding;
 * and the `Control` op is drawn from a stream of its own, after sends only,
 * leaving the other ops as they were.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { CustodyHoldDraw } from "../../src/testing/simulation/custodyHold.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"
import { scriptedCustodyHold } from "../support/custodyHoldOp.ts"

/** As custody-hold.test.ts's: D sends B two, B is taken over, D cancels its latest, sends one (held), stops, is back 10 ms later. */
const scripted: CustodyHoldDraw = { ...scriptedCustodyHold, control: "cancel", controlBack: 0 }

/** A world of four sessions with nothing varied and no pressure. */
const plain = { vary: false, pressure: false, custodyHold: true } as const

describe("cancels and supersedes in the simulation", () => {
  for (const controlBack of [0, 1]) {
    const which = controlBack === 0 ? "latest" : "first"
    it.effect(`a cancel of D's ${which} message (in the old custody) during a custody hold reaches B after it; the ledger's checks hold`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed: 1 }, [{ ...scripted, control: "cancel", controlBack }], plain)
        const trace = report.trace.join("\n")
        assert.deepStrictEqual(report.violations, [], trace)
        assert.strictEqual(report.paths.custodyHoldsTaken, 1, trace)
        assert.strictEqual(report.messages.controlsRead, 1, trace)
      }))

    // A supersede does not wait for the old close (review revb D1, SupersedeStage.ts): B's new instance is sent no
    // control about a message it may never get, and the superseded one, given back at the close, is withdrawn.
    it.effect(`a supersede of D's ${which} message (in the old custody) during a custody hold: B reads no control, and the ledger's checks hold`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed: 1 }, [{ ...scripted, control: "supersede", controlBack }], plain)
        const trace = report.trace.join("\n")
        assert.deepStrictEqual(report.violations, [], trace)
        assert.strictEqual(report.paths.custodyHoldsTaken, 1, trace)
        assert.strictEqual(report.messages.controlsRead, 0, trace)
      }))
  }

  it("a Control follows only sends, by their sender, from a stream of its own; without it the ops are those of before", () => {
    const withIt = generateWorkload(7, 4)
    const without = generateWorkload(7, 4, { controls: false })
    assert.isFalse(without.some((op) => op._tag === "Control"))
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "Control"), without)
    const controls = withIt.flatMap((op, index) => op._tag === "Control" ? [index] : [])
    assert.isAbove(controls.length, 0)
    for (const index of controls) {
      const before = withIt[index - 1]
      const op = withIt[index]
      assert.strictEqual(before?._tag, "Send")
      if (before?._tag === "Send" && op?._tag === "Control") assert.strictEqual(op.from, before.from)
    }
  })
})

describe("a receiver's answer to a supersede", () => {
  // Seed 7825 of `--parked-flush --unregister --delivery`: D supersedes m17, a replace-mode message (staged,
  // then delivered to B, whose client reconnects to the restarted broker); B's session answers the control
  // with a `superseded` receipt, which the ledger once took for the broker's replacement of a staged message
  // and so reported m17 `replace-not-latest`. (Seed 7910 was the first: its supersede reached a client that
  // never read the message, taken for the unknown instance, which review revc L1 ended.) If the seed no
  // longer reaches it, the first assertion fails: restate it with a seed that does.
  it.effect("is not the broker's replacement of a staged message (seed 7825, parked flush, delivery)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 7825 }, undefined, { parkedFlush: true, unregister: true, delivery: true })
      const trace = report.trace.join("\n")
      assert.match(trace, /told m\d+ superseded/, "the seed no longer supersedes a message its receiver was given")
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
    }))
})

describe("a cancel acknowledged during a custody hold whose receiver leaves before it ends", () => {
  // D cancels m2, in B's old custody, while B's new connection holds D (docs/testing.md, "Cancels and
  // supersedes"): the broker puts the cancel off until the hold ends (review revb D1). B stops before the
  // old close ends the hold: m2, given back unconfirmed with B away, goes to the mailbox, and the cancel,
  // handled then, takes it out there and is answered `delivered`. (Before, m2 went to the mailbox and reached
  // B when it started again, and B never heard of the cancel D was told had worked: `cancel-unheard`.)
  it.effect("withdraws the message: it never reaches the receiver, and the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, [
        { ...scripted, leave: "none", control: "cancel", controlBack: 0 },
        { _tag: "Stop", after: 1, session: 1 },
        { _tag: "Start", after: 5000, session: 1 }
      ], plain)
      const trace = report.trace.join("\n")
      assert.strictEqual(report.messages.cancelsAcknowledged, 1, trace)
      assert.strictEqual(report.messages.controlsRead, 0, trace)
      // m1, not cancelled, reaches B when it starts again; m2 never does.
      assert.match(trace, /B ← m1 from D/, trace)
      assert.notMatch(trace, /B ← m2 from D/, trace)
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
    }))
})
