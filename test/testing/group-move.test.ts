/**
 * The `GroupMove` op (`--group-move`, simulation/groupMove.ts): B's client
 * reads and confirms A's message, stops reading, A cancels (the control
 * written to B, unconfirmed), and B's client instance moves the session to
 * another group and back (`SimSession.moveGroup`: its process dies, a new
 * process of the same instance registers it there). The control, given back
 * alone at the close, must be kept for B's instance and given to it back in
 * the first group (`control-never-reached-reader`; the broker side in
 * test/broker/control-kept-group-move.test.ts, review revbk BK1). The op
 * counts itself (`SimReport.insertedOps["group move"]`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { dropControlsAtReturn } from "../../src/testing/BrokenBuilds.ts"
import { drawGroupMove, type GroupMoveDraw } from "../../src/testing/simulation/groupMove.ts"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { generateWorkload, type Op, runWorkload } from "../../src/testing/Workload.ts"

/** Two sessions (A, B) of one group, nothing varied, no pressure, no other controls. */
const plain = { vary: false, pressure: false, sessions: 2, controls: false } as const

const op: GroupMoveDraw = {
  _tag: "GroupMove",
  after: 100,
  sender: 0,
  receiver: 1,
  readMs: 500,
  confirmMs: 50,
  dropMs: 20,
  stayMs: 1000,
  action: "cancel",
  notSession: []
}

const kinds = (report: { readonly violations: ReadonlyArray<{ readonly kind: string }> }) =>
  report.violations.map((violation) => violation.kind)

describe("the GroupMove op (--group-move, simulation/groupMove.ts)", () => {
  it.effect("B moves to another group and back as the same instance, and is given A's cancel back in the first group", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, [op], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.insertedOps["group move"], { reached: 1, skipped: 0 }, trace)
      assert.match(trace, /A's cancel of m1 acknowledged/, trace)
      const moved = report.trace.findIndex((line) => line.includes("B moves to group elsewhere"))
      const back = report.trace.findIndex((line) => line.includes("B moves to group default"))
      const told = report.trace.findIndex((line) => / B told m1 cancelled/.test(line))
      assert.isTrue(moved !== -1 && back > moved, trace)
      assert.match(trace, /B client B\/c1 started again \(the same instance\)/, trace)
      assert.isTrue(told > back, trace)
      assert.isAtLeast(report.paths.controlsKept, 1, trace)
      assert.isAtLeast(report.paths.controlsKeptGiven, 1, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.isTrue(report.ok, trace)
    }))

  it.effect("a broker that drops the controls given at a registration fails it with control-never-reached-reader", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, brokerFault: dropControlsAtReturn() }, [op], plain)
      assert.include(kinds(report), "control-never-reached-reader", report.trace.join("\n"))
    }))

  // Seed 1 of `--groups --group-move`, shrunk: D (run-1) moves to default and back; then B (default) sends D by
  // id. The broker queues it for D's session in default, away now (correct: it is the same group as B, and the
  // session may come back there). The ledger called that send cross-group-accepted until it judged a moved
  // session as sharing the groups it was in (`SessionMeta.movedFrom`), and the end found it still in the mailbox
  // (mailbox-not-empty, then silent-loss) until `finish` registered D once more in default.
  const movedAndSentById: ReadonlyArray<Op> = [
    { ...op, after: 0, sender: 1, receiver: 3, readMs: 1019, confirmMs: 137, dropMs: 51, stayMs: 2776, action: "supersede", notSession: [0, 2] },
    { _tag: "Send", after: 0, from: 1, to: 3, byId: true }
  ]
  it.effect("mail sent to a moved session in the group it left reaches it when the end registers it there again", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: KNOWN_ISSUES }, movedAndSentById, { groups: true, groupMove: true })
      const trace = report.trace.join("\n")
      assert.match(trace, /B send sim-4-d "msg 2 B→D" → m3 queued/, trace)
      const revisit = report.trace.findIndex((line, index) => index > 0 && line.includes("D moves to group default") && /^\s*6\d\./.test(line))
      const handed = report.trace.findIndex((line) => / D ← m3 from B/.test(line))
      assert.isTrue(revisit !== -1 && handed > revisit, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.isTrue(report.ok, trace)
    }))

  it("is drawn from a stream of its own: the other ops of a seed stay as they were", () => {
    const without = generateWorkload(28004, 4, { groups: true })
    const withIt = generateWorkload(28004, 4, { groups: true, groupMove: true })
    const drawn = drawGroupMove(28004, 4, without.length, [0, 2]).map(([, draw]) => draw)
    assert.deepStrictEqual(withIt.filter((each) => each._tag === "GroupMove"), drawn)
    assert.deepStrictEqual(withIt.filter((each) => each._tag !== "GroupMove"), without)
  })
})
