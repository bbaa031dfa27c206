/**
 * The model-based test of one message id's life (test/support/oneIdModel.ts says what it models and what not):
 * a seeded fast-check run of generated op lists on the hand-driven Router; a failure prints its shrunk op list.
 * The clock is a plain number the ops move; no sleep.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { type Op, opArb, runOps } from "../support/oneIdModel.ts"

/** The seed the suite runs with; a failure prints its shrunk op list and what each connection was written. */
const SEED = 2
/** Runs of the seed: 6.5 s alone here, with 2,000 runs 43 s inside the whole broker suite on two loaded cores. */
const RUNS = 1000

/**
 * The shrunk op lists the model found (each run first, as given), and review revrec's R1 as op list.
 */
const FOUND: ReadonlyArray<ReadonlyArray<Op>> = [
  // An older message under the id, never withdrawn, lost at its give-back: a later one to another receiver was
  // superseded, and the give-back asked the key alone whether it was withdrawn.
  [{ op: "send", to: "y" }, { op: "fill", count: 2 }, { op: "send", to: "b" }, { op: "supersede", to: "b" }],
  [{ op: "send", to: "b" }, { op: "fill", count: 2 }, { op: "send", to: "z" }, { op: "supersede", to: "z" }, { op: "leave", who: "b" }],
  // Review revrec R1: m0 superseded at b, a later message queued for away z, a third send to y.
  [
    { op: "leave", who: "z" },
    { op: "send", to: "b" },
    { op: "fill", count: 2 },
    { op: "send", to: "z" },
    { op: "supersede", to: "b" },
    { op: "fill", count: 3 },
    { op: "send", to: "y" }
  ],
  // Review revmailkey2 probe 2: an older message waits for away b, a later one under the id is delivered to z; the
  // cancel names z's (it withdrew b's, and z was told nothing).
  [{ op: "leave", who: "b" }, { op: "send", to: "b" }, { op: "fill", count: 2 }, { op: "send", to: "z" }, { op: "cancel" }],
  // The older message given back to the mailbox after the later one was delivered: the give-back rewrote the later
  // one's replay record `queued`, and the cancel withdrew the older one (seed 43, task cancel2).
  [{ op: "send", to: "y" }, { op: "fill", count: 2 }, { op: "send", to: "b" }, { op: "leave", who: "y" }, { op: "cancel" }],
  // Review rvc2 probe 1: the newest, for away z, withdrawn from the mailbox; the cancel again (its record says
  // cancelled) withdrew the older one waiting for away b.
  [
    { op: "leave", who: "b" },
    { op: "leave", who: "z" },
    { op: "send", to: "b" },
    { op: "fill", count: 2 },
    { op: "send", to: "z" },
    { op: "cancel" },
    { op: "cancel" }
  ],
  // Review rvc2 probe 2: the newest, delivered to z, cancelled along its route; its record pushed out, the cancel
  // again (the route keeps the withdrawal) withdrew the older one waiting for away b.
  [
    { op: "leave", who: "b" },
    { op: "send", to: "b" },
    { op: "fill", count: 2 },
    { op: "send", to: "z" },
    { op: "cancel" },
    { op: "fill", count: 2 },
    { op: "cancel" }
  ]
]

describe("one message id's life, model-based (DD1, CG2)", () => {
  it.effect("no message never withdrawn is lost, and none whose withdrawal was confirmed is delivered bare after it", () =>
    Effect.sync(() => {
      fc.assert(
        fc.property(fc.array(opArb, { minLength: 1, maxLength: 30 }), (ops) => {
          const { trace, violations } = Effect.runSync(runOps(ops))
          assert.deepStrictEqual(violations, [], `${JSON.stringify(ops)}\n${trace.join("\n")}`)
        }),
        { seed: SEED, numRuns: RUNS, examples: FOUND.map((ops) => [ops]) }
      )
    }), 120_000)
})
