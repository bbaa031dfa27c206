/**
 * A reader's return in the simulation (`control-never-reached-reader`,
 * ledger/instances.ts): B's client reads A's message and its connection
 * drops (the same client, so the same instance, comes back by itself);
 * A's cancel, answered `delivered`, must reach that return.
 *
 * - kept control: B stops reading, A cancels (the broker writes the control,
 *   unconfirmed), B's connection drops — the control comes back alone, its
 *   message confirmed, and is kept for B's instance (src/broker/KeptControls.ts);
 * - cancelled copy: B's writes are slow (its confirmation of the message
 *   does not reach the broker), its connection drops, then A cancels — the
 *   copy stays in the mailbox for B's instance, with its cancel
 *   (src/broker/WithdrawnCopies.ts).
 *
 * Intact, each return gets its control and the run passes, the paths
 * counted in `report.paths`; a broker that drops the controls a
 * registration gets at once (`dropControlsAtReturn`) fails with the rule.
 * Then the generated op that builds these orders (`--reader-return`): its own
 * draw stream (`leave` drawn last), and a pinned seed for each path — the
 * kept control both at a drop and at an `unregister` after which a new
 * process resumes the same client instance (Custody.handBack, helper unregctl).
 * And seed 12 of `--reader-return --client-timings`, whose resumed process is
 * handed again what the process before it read and confirmed too late: a new
 * process of the same instance, so known issue 6, not a duplicate (helper sim12).
 * And seed 111 of the same, whose D unregisters while A's cancel of m14 is
 * parked behind D's full outbox with m14 unwritten in it: no instance of D
 * was given m14, so its return gets no cancel of it (helper sim111).
 * And seed 192 of the same, whose A asks C as the broker crashes: the ask
 * lost on the way is refused as not found by its record on the next broker
 * until its timeout runs out, and ends as the grace's end would end it
 * (`DeliveryUnknown`), not as a question asked and left unanswered (helper sim192).
 * And seed 52213 of the same with `--strict`, whose A cancels m12 after D's
 * connection dropped with it unread, the copy kept for D then lost with a
 * broker crash: withdrawn, not lost in flight (helper sweepd).
 * And seed 7022 of `--reader-return --host-refusals`, whose A unregisters in
 * the middle of its journal's checkpoint of m15, which C superseded: the
 * broker, given m15 back unconfirmed, does not queue it again, and the new
 * process of A's instance is handed m16 alone — withdrawn, not a silent
 * loss (helper sim7022).
 * Last, the op counts itself (`SimReport.insertedOps["reader return"]`): reached
 * when its receiver's client read the message in time (and, in the `control`
 * shape, wrote its confirmation) — also while a busy host refuses the hand-off
 * (`--host-refusals`) — short of its case (skipped) when it did not and the op
 * went on without that read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { dropControlsAtReturn } from "../../src/testing/BrokenBuilds.ts"
import { drawReaderReturn, type ReaderReturnDraw } from "../../src/testing/simulation/readerReturn.ts"
import { defaultClientTimingRanges, defaultHostJournal, defaultHostRefusals } from "../../src/testing/Simulation.ts"
import { KNOWN_ISSUES, KNOWN_ISSUES_WITH_JOURNAL } from "../../src/testing/Soak.ts"
import { generateWorkload, runWorkload, type Op } from "../../src/testing/Workload.ts"

/** Two sessions (A, B), nothing varied, no pressure, no other controls. */
const plain = { vary: false, pressure: false, sessions: 2, controls: false } as const

const keptControl: ReadonlyArray<Op> = [
  { _tag: "Send", after: 100, from: 0, to: 1 },
  { _tag: "Stall", after: 10, session: 1, side: "client", ms: 5000 },
  { _tag: "Control", after: 10, from: 0, action: "cancel", back: 0 },
  { _tag: "Drop", after: 10, session: 1, side: "client" }
]

const cancelledCopy: ReadonlyArray<Op> = [
  { _tag: "DelayWrites", after: 100, session: 1, side: "client", delayMs: 2000, forMs: 3000 },
  { _tag: "Send", after: 10, from: 0, to: 1 },
  { _tag: "Drop", after: 20, session: 1, side: "client" },
  { _tag: "Control", after: 10, from: 0, action: "cancel", back: 0 }
]

const kinds = (report: { readonly violations: ReadonlyArray<{ readonly kind: string }> }) =>
  report.violations.map((violation) => violation.kind)

describe("a reader's return gets the cancel its sender was answered delivered for", () => {
  it.effect("a control given back alone is kept and given at the return (intact: no violation, the path counted)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, keptControl, plain)
      const trace = report.trace.join("\n")
      assert.match(trace, /A's cancel of m1 acknowledged/, trace)
      assert.match(trace, /B told m1 cancelled \(after 0 read\(s\) of it on this connection, 1 in all\)/, trace)
      assert.isAtLeast(report.paths.controlsKept, 1, trace)
      assert.isAtLeast(report.paths.controlsKeptGiven, 1, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
    }))

  it.effect("a cancelled copy is kept and given, with its cancel, at the return (intact: no violation, the path counted)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, cancelledCopy, plain)
      const trace = report.trace.join("\n")
      assert.match(trace, /A's cancel of m1 acknowledged/, trace)
      assert.match(trace, /B told m1 cancelled/, trace)
      assert.isAtLeast(report.paths.withdrawnCopiesKept, 1, trace)
      assert.isAtLeast(report.paths.withdrawnCopiesGiven, 1, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
    }))

  for (const [name, ops] of [["kept control", keptControl], ["cancelled copy", cancelledCopy]] as const) {
    it.effect(`a broker that drops the controls given at a registration fails the ${name} run with control-never-reached-reader`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed: 1, brokerFault: dropControlsAtReturn() }, ops, plain)
        const trace = report.trace.join("\n")
        assert.include(kinds(report), "control-never-reached-reader", trace)
      }))
  }
})

describe("the ReaderReturn op (--reader-return, simulation/readerReturn.ts)", () => {
  it("is drawn from a stream of its own: the other ops of a seed stay as they were", () => {
    const without = generateWorkload(28004, 4, {})
    const withIt = generateWorkload(28004, 4, { readerReturn: true })
    assert.isFalse(without.some((op) => op._tag === "ReaderReturn"))
    const drawn = drawReaderReturn(28004, 4, without.length).map(([, op]) => op)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "ReaderReturn"), drawn)
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "ReaderReturn"), without)
  })

  it("draws `leave` last: every other field of a seed's op is as drawn before it existed, and only a control shape unregisters", () => {
    // Seed 28004's op as the draw gave it before `leave` (helper simunreg): that draw now leaves by `unregister`.
    const [[at, op] = [-1, undefined]] = drawReaderReturn(28004, 4, 40)
    assert.strictEqual(at, 11)
    assert.deepStrictEqual(op, {
      _tag: "ReaderReturn",
      after: 2241,
      sender: 1,
      receiver: 3,
      shape: "control",
      readMs: 2550,
      confirmMs: 370,
      delayMs: 2745,
      dropMs: 43,
      side: "client",
      action: "cancel",
      leave: "unregister",
      notSession: []
    })
    const leaves = new Set<string>()
    for (let seed = 28000; seed < 28200; seed++) {
      for (const [, drawn] of drawReaderReturn(seed, 4, 40)) {
        leaves.add(`${drawn.shape} ${drawn.leave}`)
        if (drawn.shape !== "control") assert.strictEqual(drawn.leave, "drop", `seed ${seed}`)
      }
    }
    assert.isTrue(leaves.has("control unregister") && leaves.has("control drop"), [...leaves].join(", "))
  })

  // Seeds of `--reader-return` that reach each path: 28093 (a control given back alone at R's drop, kept
  // and given at its return; 28004 was this path's seed until `leave`), 28002 (a copy R read but never
  // confirmed, given back at the drop, then cancelled: kept and given with its cancel) and 28004 (D stops
  // reading, B cancels, D unregisters and a new process of D resumes its client instance: the control,
  // handed back at the `unregister`, is kept and given at that return). With KeptControls.keep, resp.
  // WithdrawnCopies.keep, made a no-op (not committed) the first two fail with control-never-reached-reader;
  // 28004 does with unregctl's broker change (bdb3b37c) reverted (helper simunreg, not committed).
  const cases = [
    [28093, "kept control", "controlsKept", "controlsKeptGiven"],
    [28002, "cancelled copy", "withdrawnCopiesKept", "withdrawnCopiesGiven"],
    [28004, "kept control at an unregister", "controlsKept", "controlsKeptGiven"]
  ] as const
  for (const [seed, path, kept, given] of cases) {
    it.effect(`seed ${seed} reaches the ${path} path, and the run passes`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed, tolerate: KNOWN_ISSUES }, undefined, { readerReturn: true })
        const trace = report.trace.join("\n")
        assert.notMatch(trace, /reader return: skipped/, trace)
        if (seed === 28004) {
          assert.match(trace, /reader return: D unregisters with B's control unconfirmed/, trace)
          assert.match(trace, /D client D\/c1 started again \(the same instance\)/, trace)
          assert.match(trace, /D told m10 cancelled \(after 0 read\(s\) of it on this connection, 1 in all\)/, trace)
        } else assert.notMatch(trace, /reader return: \w+ unregisters/, trace)
        assert.isAbove(report.paths[kept], 0, trace)
        assert.isAbove(report.paths[given], 0, trace)
        assert.isTrue(report.ok, trace)
      }))

    it.effect(`seed ${seed} (${path}) fails with control-never-reached-reader on a broker that drops the controls given at a registration`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload(
          { seed, tolerate: KNOWN_ISSUES, brokerFault: dropControlsAtReturn() },
          undefined,
          { readerReturn: true }
        )
        assert.include(kinds(report), "control-never-reached-reader", report.trace.join("\n"))
      }))
  }
})

describe("a new process that resumes a reader's client instance (--reader-return --client-timings, seed 12)", () => {
  // C's broker side stops reading at 0.5 s for 13.8 s, so it never reads C's confirmations of m3 and m4, nor
  // the `unregister` behind them; C's client gives the unregister up and closes, and a new process of C
  // registers as the same client instance. The broker sends m3 and m4 again (and D's cancel of m4): the new
  // process's repeat filter is empty, and with no host journal in this world its host is handed both again
  // (known issue 6, `unconfirmed-redelivery`, tolerated). The ledger took that process for the one before,
  // its key being the instance's, and called it `duplicate-delivery` until `Ledger.clientResumed`.
  it.effect("the copies handed again are unconfirmed-redelivery, and the run passes with the known issues tolerated", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 12, clientTimings: defaultClientTimingRanges, tolerate: KNOWN_ISSUES },
        undefined,
        { readerReturn: true }
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /reader return: C unregisters with D's control unconfirmed/, trace)
      assert.match(trace, /C client C\/c1 started again \(the same instance\)/, trace)
      assert.match(trace, /m3 re-sent to C: the connection it went out on closed before the broker read its client's confirmation/, trace)
      assert.deepStrictEqual(
        report.violations.map((violation) => `${violation.kind}: ${violation.message.split(" (")[0]}`),
        ["unconfirmed-redelivery: m3 was handed to C 2 times", "unconfirmed-redelivery: m4 was handed to C 2 times"],
        trace
      )
      assert.isTrue(report.ok, trace)
    }))
})

describe("a cancel parked behind a full outbox while its receiver unregisters (--reader-return --client-timings, seed 111)", () => {
  // D's broker writes take 614 ms and A floods it, so D's outbox is full; A's cancel of m14 (m14 still unwritten
  // in that outbox) parks at A's reader. D unregisters: its hand-back drops m14, withdrawn on its way. The
  // cancel reached D's old connection only after, and its close gave it back alone: it was kept for D's
  // instance, whose return read a cancel of a message it never received (control-before-message) until
  // MailReturns dropped a control about a message no client read, dropped never written (Receipts.droppedUnread).
  it.effect("D's return is not told m14 cancelled, and the run passes with the known issues tolerated", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 111, clientTimings: defaultClientTimingRanges, tolerate: KNOWN_ISSUES },
        undefined,
        { readerReturn: true }
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /reader return: D unregisters with A's control unconfirmed/, trace)
      assert.match(trace, /A's cancel of m14 acknowledged/, trace)
      assert.notMatch(trace, /D told m14 cancelled/, trace)
      assert.notMatch(trace, /D ← m14 /, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("an ask lost with a broker crash, refused on every retry until its timeout (--reader-return --client-timings, seed 192)", () => {
  // A asks C (20 s) as broker #1 crashes; broker #1 refused the exact send (C mid-rejoin) and stored that
  // refusal. A's client sends it again on the next broker, which answers from the record: not found, retried
  // in the rejoin grace (C "may not be back yet") until the ask's timeout ran out, when the ask ended
  // ReplyTimeout (`refused-as-timeout`). Its retries now end on the failure that stands (Resending.ts).
  it.effect("A's ask ends DeliveryUnknown, not ReplyTimeout, and the run passes with the known issues tolerated", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 192, clientTimings: defaultClientTimingRanges, tolerate: KNOWN_ISSUES },
        undefined,
        { readerReturn: true }
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /A ask C "question 16 A→C"/, trace)
      assert.match(trace, /broker #1 crashed/, trace)
      assert.match(trace, /A ask4 ended: DeliveryUnknown/, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("a cancel of a copy back in the mailbox, then lost with its broker's crash (--reader-return --client-timings --strict, seed 52213)", () => {
  // D's client dropped its stalled connection (its liveness probe timed out) with A's m12 written to it and
  // unread; A's cancel came 1.5 s later, acknowledged, which kept the copy for D's instance in memory only
  // (WithdrawnCopies.ts), and broker #1 crashed before D came back: the copy went with it (docs/protocol.md).
  // A was told m12 was cancelled and no client read it: withdrawn; the ledger had called it lost in flight.
  it.effect("m12 is withdrawn, not lost-in-flight, and the run passes strict", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 52213, clientTimings: defaultClientTimingRanges, strictInFlight: true, tolerate: KNOWN_ISSUES },
        undefined,
        { readerReturn: true }
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /frame\(s\) toward D lost with link #7 \(messages m11, m12\)/, trace)
      assert.match(trace, /A cancels m12 \(to D\) → cancelled/, trace)
      assert.match(trace, /broker #1 crashed/, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("a superseded message whose reader unregistered mid-checkpoint (--reader-return --host-refusals, seed 7022)", () => {
  // A read C's m15, and its journal's checkpoint of it (so its hand-off and confirmation) was still running
  // when C superseded m15 by m16 and A unregistered: the checkpoint was interrupted, m15 went back to the
  // broker unconfirmed, superseded, and was not queued again (docs/protocol.md); a new process of A's client
  // instance registered and was handed m16 alone. The ledger took the read for one by A's live client (the
  // instance's key lives on) and called m15 a silent loss until it counted a process a new one resumed as
  // ended (ledger/fates.ts, `readByEndedProcess`).
  it.effect("m15 is withdrawn, not a silent loss, and the run passes", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        {
          seed: 7022,
          hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals },
          tolerate: KNOWN_ISSUES_WITH_JOURNAL
        },
        undefined,
        { readerReturn: true }
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /C's supersede of m15 by m16 acknowledged/, trace)
      assert.match(trace, /reader return: A unregisters with C's control unconfirmed/, trace)
      assert.match(trace, /A: journal: checkpoint of m15 interrupted/, trace)
      assert.match(trace, /A client A\/c2 started again \(the same instance\)/, trace)
      assert.match(trace, /A ← m16 from C/, trace)
      assert.notMatch(trace, /A ← m15 /, trace)
      assert.strictEqual(report.messages.withdrawn, 1, trace)
      assert.deepStrictEqual(kinds(report), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("the ReaderReturn op counts whether it reached its case (SimReport.insertedOps)", () => {
  const op: ReaderReturnDraw = {
    _tag: "ReaderReturn",
    after: 100,
    sender: 0,
    receiver: 1,
    shape: "control",
    readMs: 500,
    confirmMs: 50,
    delayMs: 0,
    dropMs: 20,
    side: "client",
    action: "cancel",
    leave: "drop",
    notSession: []
  }
  const tallyOf = (ops: ReadonlyArray<Op>) =>
    runWorkload({ seed: 1 }, ops, plain).pipe(
      Effect.map((report) => ({ tally: report.insertedOps["reader return"], trace: report.trace.join("\n") }))
    )

  it.effect("a receiver whose client read and confirmed the message in time: reached", () =>
    Effect.gen(function*() {
      const { tally, trace } = yield* tallyOf([op])
      assert.deepStrictEqual(tally, { reached: 1, skipped: 0 }, trace)
      assert.match(trace, /reader return: reached its case \(B's client did read and confirm "reader-return \d+ A→B" before its control or drop\)/, trace)
    }))

  // With --host-refusals a busy host refuses the hand-off while B's client has read the message and confirmed it
  // (its journal's checkpoint landed): the case needs that read, not the host's. Here every host is busy for 5 s
  // from a message's first hand-off, longer than the op's readMs; waiting on B's inbox counted it short.
  it.effect("a receiver whose client read and confirmed the message while its busy host refuses it: reached", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 1, hostJournal: { ...defaultHostJournal, refusals: { chance: 1, busyMs: [5000, 5000] } } },
        [op],
        plain
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /host refused m1: busy/, trace)
      assert.deepStrictEqual(report.insertedOps["reader return"], { reached: 1, skipped: 0 }, trace)
      assert.match(trace, /reader return: reached its case \(B's client did read and confirm "reader-return \d+ A→B"/, trace)
      // Counted before B's host was handed m1 (if it ever was): the read the op waited on was its client's.
      const counted = report.trace.findIndex((line) => line.includes("reader return: reached its case"))
      const handed = report.trace.findIndex((line) => / B ← m1 /.test(line))
      assert.isTrue(handed === -1 || handed > counted, trace)
    }))

  it.effect("a receiver whose client reads nothing for longer than readMs: short of its case, and the op goes on", () =>
    Effect.gen(function*() {
      const { tally, trace } = yield* tallyOf([{ _tag: "Stall", after: 0, session: 1, side: "client", ms: 5000 }, op])
      assert.deepStrictEqual(tally, { reached: 0, skipped: 1 }, trace)
      assert.match(trace, /reader return: short of its case: B's client did not read and confirm "reader-return \d+ A→B" within 500 ms/, trace)
      assert.match(trace, /A's cancel of m1 /, trace)
    }))
})
