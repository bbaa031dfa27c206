/**
 * The `ParkedFlush` op (`--parked-flush`, simulation/parkedFlush.ts): a
 * recipient comes back to more mail than its outbox takes, reading slowly,
 * while its senders send on and leave. Scripted, it must reach the broker's
 * machinery for a recipient's own parked mail — the flush parked on the
 * recipient's reader, a sender's new mail behind it, a departure withheld
 * behind it (BrokerStats' counters, summed in `report.paths`) — with the
 * ledger's order, no-loss and C-BRK-33 checks holding; then the generated
 * workloads carry it only with the flag, and a generated seed reaches it.
 * And seed 53118 of `--parked-flush --unregister --delivery --strict`, whose
 * C cancels m21 before B's connection drops with it unread and again after:
 * withdrawn, not lost in flight (helper sweepe). And seed 53143 of the same
 * flags, whose D asks B in the batch that parks D's flood to slow C, so the
 * question waits on D's reader while A's later message to B goes straight to
 * B's outbox, and B is killed before D's drainer reaches it: it goes back,
 * withdrawn by D's `cancel_ask`, not a silent loss (helper sim53143). And
 * seed 53031 of the same flags, whose A cancels m6 as C's parked flush is
 * written to C's new connection: C reads m6 there, the connection drops
 * before the control behind it, and C's client reads the control on its
 * next connection — heard, not `cancel-unheard` (helper sim53031). And
 * seeds 3 and 45 of `--parked-flush --host-refusals --client-timings`,
 * whose D reads B's reply to its ask behind messages its host journal takes
 * up to 1.5 s each to checkpoint: the reply resolves the ask as D's client
 * reads it (C-ORD-32), not behind those checkpoints, where it once held the
 * ask past its timeout (helper simht excused it; helper corr fixed it).
 * And seed 63420 of `--parked-flush --unregister --delivery
 * --durability memory --strict`, whose C's m18 is written to B's connection
 * after B stopped reading: that connection ends, the memory-mode broker
 * crashes before B comes back, and B's custody copy goes with it — lost to
 * the crash, not lost in flight; its shrunk workload has the crash before the
 * connection's end (helper simlt; the ledger's rule is `custodyCrashed`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { drawParkedFlush, type ParkedFlushDraw } from "../../src/testing/simulation/parkedFlush.ts"
import { defaultClientTimingRanges, defaultHostJournal, defaultHostRefusals, type SimulationConfig } from "../../src/testing/Simulation.ts"
import { KNOWN_ISSUES } from "../../src/testing/Soak.ts"
import { generateWorkload, runWorkload } from "../../src/testing/Workload.ts"

/** B stops; A and C send it 4 × 2,500 characters each; B comes back, its writes 400 ms each; A sends 2 more; C unregisters. */
const scripted: ParkedFlushDraw = {
  _tag: "ParkedFlush",
  after: 100,
  recipient: 1,
  away: "stop",
  senders: [0, 2],
  count: 4,
  size: 2500,
  delayMs: 400,
  more: 2,
  gapMs: 20,
  churn: ["none", "unregister"]
}

/** A world of four sessions with nothing varied and no pressure: outboxes of 4,096 characters from the flag alone. */
const plain = { vary: false, pressure: false, parkedFlush: true } as const

describe("the ParkedFlush op", () => {
  it.effect("parks the returning recipient's flush on its own reader, holds a sender's new mail and a leaving sender's session_left behind it; the ledger's checks hold", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1 }, [scripted], plain)
      const trace = report.trace.join("\n")
      assert.deepStrictEqual(report.violations, [], trace)
      // B's registration parked the flush that did not fit its outbox on B's own reader.
      assert.isAtLeast(report.paths.ownParks, 1, trace)
      // A's new mail for B waited behind A's mail in that list (its drainer, or parked behind it).
      assert.isAtLeast(report.paths.waitsBehindOwn + report.paths.parkedBehindOwn, 1, trace)
      // C left with mail of its in B's parked list: its session_left was withheld from B until that was offered.
      assert.isAtLeast(report.paths.departuresHeld, 1, trace)
      // Every message sent reached its recipient (the ledger judged each: no loss, per-sender order).
      assert.isAtLeast(report.messages.sent, 2 * 4 + 2, trace)
      assert.strictEqual(report.messages.delivered, report.messages.sent, trace)
    }))

  it("is in a generated workload only with the flag, drawn from a stream of its own", () => {
    const without = generateWorkload(7, 4)
    const withIt = generateWorkload(7, 4, { parkedFlush: true })
    assert.isFalse(without.some((op) => op._tag === "ParkedFlush"))
    const drawn = drawParkedFlush(7, 4, without.length).map(([, op]) => op)
    assert.deepStrictEqual(withIt.filter((op) => op._tag === "ParkedFlush"), drawn)
    // The other ops are those of the workload without it, in order.
    assert.deepStrictEqual(withIt.filter((op) => op._tag !== "ParkedFlush"), without)
  })

  it.effect("seed 1's generated workload with the flag reaches a parked flush and a withheld departure, and passes (known issues tolerated, as a sweep does)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 1, tolerate: KNOWN_ISSUES }, undefined, { parkedFlush: true })
      const trace = report.trace.join("\n")
      assert.isTrue(report.ok, trace)
      assert.isAtLeast(report.paths.ownParks, 1, trace)
      assert.isAtLeast(report.paths.departuresHeld, 1, trace)
    }))

  // A gap this op found, closed by the writer's placement of a returned sender's departure (Rejoins.ts). B
  // comes back to D's mail; what does not fit its outbox is parked on B's reader, and B's first write is
  // slow. Meanwhile the drainer offers the rest of the flush (D's m5, m7, m9) into B's outbox, now empty: no
  // hold is taken when D leaves, as none of D's mail is parked any more, and D registers again at once. B's
  // writer collects D's departure as one of a session that is back (MembershipFeed.collect); it used to
  // write `session_left` and the new `session_joined` before the queued items, so D's old mail reached B
  // after D's `session_left` (C-BRK-33, `left-before-mail`: this mail was flushed from the mailbox).
  it.effect("a sender that leaves and rejoins while its flushed mail waits in the recipient's outbox has that mail reach it before its session_left", () =>
    Effect.gen(function*() {
      // Seed 4's world (varied, with pressure: outboxes of 8,192 characters), this op alone: D's m5, m7, m9.
      const op: ParkedFlushDraw = {
        _tag: "ParkedFlush",
        after: 938,
        recipient: 1,
        away: "stop",
        senders: [3, 0],
        count: 5,
        size: 2289,
        delayMs: 575,
        more: 3,
        gapMs: 41,
        churn: ["rejoin", "none"]
      }
      const report = yield* runWorkload({ seed: 4 }, [op], { parkedFlush: true })
      assert.isAtLeast(report.paths.ownParks, 1)
      assert.deepStrictEqual(report.violations.filter((violation) => violation.kind === "left-before-mail"), [])
    }))
})

describe("a message cancelled before its receiver's connection died with it unread, and cancelled again after (--parked-flush --unregister --delivery --strict, seed 53118)", () => {
  // C's m21 was written to B's link #11 after B's client stopped reading; C's cancel was acknowledged at once,
  // then B unregistered and link #11 ended with m21 unread, so the broker did not queue it again. C cancelled
  // m21 again 1.8 s later and the broker answered `delivered` again (docs/protocol.md: a repeated cancel). The
  // ledger had kept the second answer's time, after the close, and called m21 lost in flight.
  it.effect("m21 is withdrawn, not lost-in-flight, and the run passes strict", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 53118, strictInFlight: true, tolerate: KNOWN_ISSUES },
        undefined,
        { delivery: true, unregister: true, parkedFlush: true }
      )
      const trace = report.trace.join("\n")
      assert.match(trace, /C's cancel of m21 acknowledged[\s\S]*frame\(s\) toward B lost with link #11 \(messages m21\)[\s\S]*C's cancel of m21 acknowledged/, trace)
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("a question parked on its sender's reader, passed by another sender's message to its target, whose connection then ended (--parked-flush --unregister --delivery --strict, seed 53143)", () => {
  // D's ask m39 to B came in one batch after m31–m38 to C, whose outbox was full (C reading its parked flush
  // slowly): the broker parked m39 on D's reader behind them (Output.ts) and acknowledged it socket_delivered
  // at its commit. A's m40, read later, went straight into B's outbox on link #3 and B read it; B was killed
  // before D's drainer offered m39, which its closed connection refused and the mailbox took back, and D's
  // cancel_ask (its ask ended ReplyPeerDisconnected) dropped it there. The ledger took A's m40 on #3 as proof
  // that m39 had left #3's outbox, and called m39 a silent loss.
  it.effect("m39 is withdrawn, not a silent loss, and the run passes strict", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 53143, strictInFlight: true, tolerate: KNOWN_ISSUES },
        undefined,
        { delivery: true, unregister: true, parkedFlush: true }
      )
      const trace = report.trace.join("\n")
      assert.match(
        trace,
        /D ask B "question 20 D→B"[\s\S]*B ← m40 from A[\s\S]*B is killed[\s\S]*D ask B "question 20 D→B" → ReplyPeerDisconnected/,
        trace
      )
      assert.notMatch(trace, /B ← m39 /, trace)
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.strictEqual(report.messages.withdrawn, 1, trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("a cancel acknowledged as its message was on its way, whose control reached the receiver only on its next connection (--parked-flush --unregister --delivery --strict, seed 53031)", () => {
  // C came back reading slowly (261 ms a write on link #9) and its parked flush put A's m6 in #9's outbox; A's
  // cancel of m6 was acknowledged 9 ms later, before C read m6, so the broker put the control behind m6. C read
  // and confirmed m6 on #9, whose connection dropped before the control; C's client read the control first
  // thing on #15 (m6 not sent again) and its session answered cancellation_requested. The ledger counted a
  // control only on the connection that read the message, and called the cancel unheard.
  it.effect("C hears the cancel on its next connection, and the run passes strict", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(
        { seed: 53031, strictInFlight: true, tolerate: KNOWN_ISSUES },
        undefined,
        { delivery: true, unregister: true, parkedFlush: true }
      )
      const trace = report.trace.join("\n")
      assert.match(
        trace,
        /A's cancel of m6 acknowledged \(0 read\(s\)[\s\S]*C ← m6 from A[\s\S]*C's connection drops[\s\S]*C connected: link #15[\s\S]*C told m6 cancelled \(after 0 read\(s\) of it on this connection, 1 in all\)/,
        trace
      )
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("mail written to a received-v1 receiver that stopped reading, its memory-mode broker crashing before the receiver came back (--parked-flush --unregister --delivery --durability memory --strict, seed 63420)", () => {
  const flags = { delivery: true, unregister: true, parkedFlush: true }
  const config: SimulationConfig = { seed: 63420, durability: "memory", strictInFlight: true, tolerate: KNOWN_ISSUES }

  // B stopped reading, C's passive m18 was written to B's link #3 and acknowledged, B unregistered and its
  // client dropped #3 with m18 unread; broker #1 crashed 0.4 s later, before B came back to broker #2. One sweep
  // called it lost in flight (a build of the ledger without custodyCrashed, helper simlt).
  it.effect("the seed: m18, written to B's connection that ended unread before the crash, is lost to the crash", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(config, undefined, flags)
      const trace = report.trace.join("\n")
      assert.match(
        trace,
        /B's client stops reading[\s\S]*C send B "passive 16\.0 C→B" \(passive\) → m18 socket_delivered[\s\S]*frame\(s\) toward B lost with link #3 \(messages m18\)[\s\S]*broker #1 crashed[\s\S]*B connected: link #29 to broker #2/,
        trace
      )
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.strictEqual(report.messages.lostInFlight, 0, trace)
      assert.strictEqual(report.messages.lostToCrash, 1, trace)
      assert.isTrue(report.ok, trace)
    }))

  // The failing sweep's shrunk workload: the broker crashes while #3 still holds m1, and B's client drops #3
  // (unread) only two seconds later, before B registers with broker #2.
  it.effect("its shrunk workload: the broker crashes first, B's connection ends after with m1 unread; lost to the crash", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload(config, [
        { _tag: "Unregister", after: 0, session: 1, lingerOps: 2 },
        { _tag: "DeliverySend", after: 0, from: 2, to: 1, mode: "passive", thread: 0, count: 1, gapMs: 0 },
        { _tag: "CrashBroker", after: 0, downMs: 2054 }
      ], flags)
      const trace = report.trace.join("\n")
      assert.match(
        trace,
        /→ m1 socket_delivered[\s\S]*broker #1 crashed[\s\S]*frame\(s\) toward B lost with link #3 \(messages m1\)[\s\S]*B connected: link #9 to broker #2/,
        trace
      )
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.strictEqual(report.messages.lostInFlight, 0, trace)
      assert.strictEqual(report.messages.lostToCrash, 1, trace)
      assert.isTrue(report.ok, trace)
    }))
})

describe("an ask whose reply its asker's client read behind messages its host journal checkpointed slowly (--parked-flush --host-refusals --client-timings, seeds 3 and 45)", () => {
  // Seed 3: D asks B (3 s); B's reply m22 is written to D's link #19 at 128.077 s, while D's session is still
  // checkpointing m11–m19 (0.1–1.5 s each, its host refusing some). Seed 45: the same for D's ask1 and B's m29.
  // Routed only when the message fiber reached them, the replies came after the asks' liveness-bounded wait for
  // the reads before the settling answer, and the asks ended ReplyTimeout (C-ORD-32): now each reply is the
  // ask's result as it is read, and never reaches D's host.
  const run = (seed: number) =>
    runWorkload(
      { seed, hostJournal: { ...defaultHostJournal, refusals: defaultHostRefusals }, clientTimings: defaultClientTimingRanges, tolerate: ["takeover-late-write"] },
      undefined,
      { parkedFlush: true }
    )

  it.effect("seed 3: D's ask2 is answered by m22 as D's client reads it, which never reaches D's host, and the run passes", () =>
    Effect.gen(function*() {
      const report = yield* run(3)
      const trace = report.trace.join("\n")
      assert.match(trace, /128\.077s {2}D ask2 \(m20\) replied by m22 from B "re: question 36 D→B"/, trace)
      assert.notMatch(trace, /D ask2 ended: ReplyTimeout/, trace)
      assert.notMatch(trace, /D ← m22 from B/, trace)
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.isTrue(report.ok, trace)
    }))

  it.effect("seed 45: D's ask1 is answered by m29 as D's client reads it, which never reaches D's host, and the run passes", () =>
    Effect.gen(function*() {
      const report = yield* run(45)
      const trace = report.trace.join("\n")
      assert.match(trace, /10\.426s {2}D ask1 \(m17\) replied by m29 from B "re: question 8 D→B"/, trace)
      assert.notMatch(trace, /D ask1 ended: ReplyTimeout/, trace)
      assert.notMatch(trace, /D ← m29 from B/, trace)
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [], trace)
      assert.isTrue(report.ok, trace)
    }))
})
