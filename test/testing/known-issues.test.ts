/**
 * Issues the simulation found in the broker, kept as regression tests: each
 * replays the issue with a script and with the seed of the sweep that first
 * found it, and asserts every invariant now holds. An issue found later and
 * not fixed yet goes in `KNOWN_ISSUES` (Soak.ts) with a test showing it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { defaultClientTimingRanges, Simulation } from "../../src/testing/Simulation.ts"
import { KNOWN_ISSUES, KNOWN_ISSUES_WITH_JOURNAL } from "../../src/testing/Soak.ts"
import { type Op, runSimulation, runWorkload } from "../../src/testing/Workload.ts"

/**
 * The seeds here were found before workloads had pressure (registration
 * storms, floods; docs/testing.md, "Pressure"): they replay their workloads and
 * worlds of then.
 */
const PINNED = { pressure: false } as const

describe("fixed: a sender that is away is told, when it comes back, that its queued message was evicted", () => {
  it.effect("A queues mail for stopped D and stops; C's mail evicts A's (mailbox of 1); A comes back and gets an expired receipt", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", "B", "C", "D"], broker: { mailboxCapacity: 1 } },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const [a, b, c, d] = [sim.session("A"), sim.session("B"), sim.session("C"), sim.session("D")]
          yield* d.stop
          yield* b.stop
          const queued = yield* a.send("D", "for D, later")
          const exit = yield* queued!.result()
          assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Sent" && exit.value.delivery === "queued")
          yield* a.stop
          yield* c.send("B", "for B, later") // evicts A's message while A is not connected
          yield* sim.advance("1 second")
        })
      )
      assert.deepStrictEqual(report.violations, [])
    }))

  it.effect("the seed the random sweep first found it with (327) now holds every invariant", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 327 }, undefined, PINNED)
      assert.deepStrictEqual(report.violations, [])
    }))
})

describe("fixed: an eviction notice owed to an absent sender survives a broker crash (known issue 5, crash-lost-notice)", () => {
  // The notice used to live only in the broker's memory: the store deleted the evicted mail and
  // kept its replay record, so a crash before A came back lost it. The store now keeps owed
  // notices (OwedNotices.ts), written in the commit that drops the mail.
  it.effect("A queues mail for stopped D and stops; C's mail evicts A's (mailbox of 1); the broker crashes; A comes back and gets an expired receipt", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", "B", "C", "D"], broker: { mailboxCapacity: 1 } },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const [a, b, c, d] = [sim.session("A"), sim.session("B"), sim.session("C"), sim.session("D")]
          yield* d.stop
          yield* b.stop
          const queued = yield* a.send("D", "for D, later")
          const exit = yield* queued!.result()
          assert.isTrue(Exit.isSuccess(exit) && exit.value._tag === "Sent" && exit.value.delivery === "queued")
          yield* a.stop
          yield* c.send("B", "for B, later") // evicts A's message while A is not connected
          yield* sim.advance("1 second")
          yield* sim.broker.crashFor("2 seconds")
          yield* sim.advance("3 seconds")
          yield* a.start
          yield* sim.advance("2 seconds")
        })
      )
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      assert.strictEqual(report.durability, "durable")
      assert.strictEqual(report.messages.failedNotified, 1, "A was told its message expired")
    }))

  it.effect("the seed the random sweep first found it with (48) now holds every invariant, in both modes", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 48 }, undefined, PINNED)
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      assert.isAbove(report.messages.failedNotified, 0)
      const memory = yield* runWorkload({ seed: 48, durability: "memory" }, undefined, PINNED)
      assert.deepStrictEqual(memory.violations, [])
    }))
})

describe("fixed: mail requeued from a replaced connection follows the session to its new connection", () => {
  it.effect("the broker stops reading C and writes to it slowly; C's liveness probe fails and C reconnects, taking over its old connection; A's two messages reach the new connection, in order", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        { seed: 1, sessions: ["A", "C"] },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const c = sim.session("C")
          yield* c.stall("broker", "30 seconds") // C's liveness probe (every 10 s) goes unanswered
          yield* c.delayWrites("broker", "1 second") // the broker's writer for C is mid-write when C gives up
          yield* sim.advance("12500 millis")
          yield* a.send("C", "one")
          yield* a.send("C", "two")
          yield* sim.advance("30 seconds") // C reconnected at 13.25 s (a takeover)
          assert.deepStrictEqual((yield* c.inbox).map((inbound) => inbound.message.content.text), ["one", "two"])
        })
      )
      assert.deepStrictEqual(report.violations, [])
      assert.strictEqual(report.messages.stranded, 0)
    }))

  it.effect("the seed the random sweep first found it with (3452) now holds every invariant", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 3452 }, undefined, PINNED)
      assert.deepStrictEqual(report.violations, [])
    }))
})

describe("fixed: output taken from an outbox by a writer the close interrupts is sent back, not lost", () => {
  // The writer took B's queued messages from its outbox in one step and recorded them as in
  // flight in the next; B's connection closing in between (the broker dropped it while B's
  // client was not reading) interrupted it there, and the messages were in no outbox, no
  // write and no custody: lost in memory mode, and restored after newer ones by a durable
  // broker's restart (`fifo`). ConnectionActor.ts now takes and records them in one step.
  it.effect("B's client stops reading, A sends and asks B, the broker drops B's connection: both reach B's next connection (memory mode; it was a silent loss)", () =>
    Effect.gen(function*() {
      // Seed 716's shrunk workload without its later broker crash (which hid the loss in memory mode).
      const ops: ReadonlyArray<Op> = [
        { _tag: "ClockJump", after: 2407, ms: 82075 },
        { _tag: "CancelAsk", after: 626, session: 1 },
        { _tag: "Send", after: 1899, from: 0, to: 2 },
        { _tag: "Send", after: 1799, from: 0, to: 2 },
        { _tag: "Stall", after: 2280, session: 1, side: "client", ms: 14266 },
        { _tag: "Ask", after: 394, from: 0, to: 3, timeoutMs: 12000 },
        { _tag: "Ask", after: 1919, from: 0, to: 2, timeoutMs: 5000 },
        { _tag: "List", after: 597, from: 0 },
        { _tag: "List", after: 1277, from: 0 },
        { _tag: "List", after: 1688, from: 1 },
        { _tag: "Send", after: 137, from: 0, to: 1 },
        { _tag: "Status", after: 198, session: 1, busy: false },
        { _tag: "Ask", after: 1311, from: 0, to: 1, timeoutMs: 5000 },
        { _tag: "Drop", after: 1483, session: 1, side: "broker" },
        { _tag: "Send", after: 0, from: 0, to: 1 }
      ]
      const report = yield* runWorkload({ seed: 716, durability: "memory" }, ops, PINNED)
      assert.deepStrictEqual(report.violations, [])
    }))

  it.effect("seed 716 holds every invariant in durable mode (it was a fifo violation after the restart)", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 716 }, undefined, PINNED)
      assert.deepStrictEqual(report.violations, [])
    }))
})

describe("fixed: mail its client confirmed is not sent again, and mail a leaving client read is not confirmed (known issue 8)", () => {
  // Two causes of one symptom, a message sent to its receiver again after the broker read a
  // `received` covering it. 14539 and 17364: held back by backpressure, the confirmation waited
  // among the held frames and died with the connection (the broker now applies it at once;
  // script test: test/broker/custody.test.ts). 12412 and 16308: the client went on confirming
  // after it had sent `unregister`, mail that reached no host since its session was leaving; the
  // broker refused the frame (a protocol error), dropped the connection and sent the mail to the
  // session's next connection, which saved it. The client now stops confirming once it closes.
  it.effect("A's broker stops reading A and writes to it slowly; B sends to A; A stops: the message A's client read while leaving reaches A's next client, unconfirmed, once", () =>
    Effect.gen(function*() {
      // Seed 12412's shrunk workload.
      const ops: ReadonlyArray<Op> = [
        { _tag: "Drop", after: 560, session: 2, side: "client" },
        { _tag: "DelayWrites", after: 16, session: 0, side: "broker", delayMs: 566, forMs: 6753 },
        { _tag: "Stall", after: 0, session: 0, side: "broker", ms: 8685 },
        { _tag: "Ask", after: 2083, from: 2, to: 0, timeoutMs: 4000 },
        { _tag: "Send", after: 937, from: 1, to: 0 },
        { _tag: "Send", after: 0, from: 0, to: 3 },
        { _tag: "Send", after: 1380, from: 1, to: 1 },
        { _tag: "Ask", after: 0, from: 2, to: 0, timeoutMs: 17000 },
        { _tag: "Stop", after: 2316, session: 0 }
      ]
      const report = yield* runWorkload({ seed: 12412 }, ops, PINNED)
      assert.deepStrictEqual(report.violations, [])
      assert.strictEqual(report.messages.lostInFlight, 0)
    }))

  // 12412 again, once a request's timeout covered its write (docs/client.md, `sendTimeoutMs`): A's
  // liveness probe waited behind a write the broker did not read, timed out while A's close waited
  // (within its 2 s, C-BRK-30) for the broker to read A's confirmations, and dropped the socket, so
  // the confirmations never went out and A's next client got the messages again. A probe no longer
  // drops a connection whose close has begun.
  it.effect("A's broker stops reading A while A's probe waits; A stops; the broker reads again after the probe's timeout, within A's close: A's confirmation reaches it, and A's next client gets nothing twice", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation(
        // A link of one frame: A's confirmation fills it, and the probe's `list` (10 s, 3 s to answer) waits.
        { seed: 1, sessions: ["A", "C"], linkCapacity: 1 },
        Effect.gen(function*() {
          const sim = yield* Simulation
          const a = sim.session("A")
          const c = sim.session("C")
          yield* sim.advance("9 seconds")
          // Until 13.2 s: after the probe's timeout (13.0 s), before the close gives up (11.5 s + 2 s).
          yield* a.stall("broker", "4200 millis")
          yield* c.send("A", "read while the broker does not read A")
          yield* sim.advance("2500 millis")
          yield* a.stop
          yield* sim.advance("3 seconds")
          yield* a.start
          yield* sim.advance("2 seconds")
        })
      )
      assert.deepStrictEqual(report.violations, [], report.trace.join("\n"))
      assert.strictEqual(report.messages.resent, 0, "the broker read A's confirmation: nothing went out again")
      assert.strictEqual(report.messages.delivered, 1)
    }))

  for (const seed of [12412, 14539, 16308, 17364]) {
    it.effect(`seed ${seed} holds every invariant in durable mode, and loses nothing in flight`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed }, undefined, PINNED)
        assert.deepStrictEqual(report.violations, [])
        assert.strictEqual(report.messages.lostInFlight, 0)
      }))
  }
})

describe("fixed: mail read while a killed session's generation closes is not confirmed (known issue 9)", () => {
  // Seed 14894: D is killed while its ask waits; closing its generation cancels the ask, which waits
  // for D's client to reconnect; the reconnected client read A's message and confirmed it, though no
  // generation was left to take it. A client now holds its confirmations from the moment its
  // generation starts to close, so the mail stays the broker's and reaches D's next client.
  it.effect("D's broker writes slowly; D asks B; A sends to D; D is killed: A's message is not lost in flight", () =>
    Effect.gen(function*() {
      // Seed 14894's shrunk workload.
      const ops: ReadonlyArray<Op> = [
        { _tag: "DelayWrites", after: 0, session: 3, side: "broker", delayMs: 516, forMs: 7616 },
        { _tag: "Ask", after: 0, from: 3, to: 1, timeoutMs: 4000 },
        { _tag: "Ask", after: 347, from: 2, to: 0, timeoutMs: 14000 },
        { _tag: "Send", after: 0, from: 0, to: 3 },
        { _tag: "Kill", after: 288, session: 3 }
      ]
      const report = yield* runWorkload({ seed: 14894 }, ops, PINNED)
      assert.deepStrictEqual(report.violations, [])
      assert.strictEqual(report.messages.lostInFlight, 0)
    }))

  it.effect("seed 14894 holds every invariant in durable mode, and loses nothing in flight", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 14894 }, undefined, PINNED)
      assert.deepStrictEqual(report.violations, [])
      assert.strictEqual(report.messages.lostInFlight, 0)
    }))
})

describe("fixed: a client reads on while its confirmation waits to be written (known issues 11 and 12)", () => {
  // Seed 39653: the broker stopped reading B (its held limit: B's flood waited for C, who read slowly)
  // and waited for B to read the answers it had written; B's client waited to write a `received`
  // confirmation before it read again, so neither moved and B's `list` was never answered. Seed 44113
  // was the same wait, in a run that then never ended. The client now writes its confirmations from a
  // fiber of their own, and its reader never waits for one.
  const ops: ReadonlyArray<Op> = [
    { _tag: "CrashBroker", after: 0, downMs: 2870 },
    { _tag: "Send", after: 2118, from: 2, to: 1 },
    { _tag: "Flood", after: 1655, from: 1, to: 2, count: 10, size: 5265, delayMs: 306 },
    { _tag: "Stall", after: 1421, session: 1, side: "broker", ms: 1000 },
    { _tag: "Ask", after: 100, from: 3, to: 1, timeoutMs: 4000 }
  ]
  for (const durability of ["durable", "memory"] as const) {
    for (const brokerConnections of ["adopted", "accepted"] as const) {
      it.effect(`B floods C, who reads slowly, and the broker stops reading B for 1 s: B's list is answered (${durability}, ${brokerConnections})`, () =>
        Effect.gen(function*() {
          // Seed 39653's shrunk workload.
          const report = yield* runWorkload({ seed: 39653, durability, brokerConnections }, ops)
          assert.deepStrictEqual(report.violations, [])
          assert.strictEqual(report.messages.lostInFlight, 0)
        }))
    }
  }

  it.effect("seed 44113 ends and holds every invariant in durable mode", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 44113 })
      // B's connection ends with m35 queued for A; B is back before A's writer collects it. A reads m35, then
      // B's session_left and new join (Rejoins.ts); before, the pair came first (then `left-then-rejoined`).
      assert.deepStrictEqual(report.violations, [])
      assert.strictEqual(report.messages.lostInFlight, 0)
    }))
})

describe("fixed: a client sends what its lost connection carried again in the order it first sent it (known issue 10)", () => {
  // Seed 36433: A's connection dropped with m6 (read and stored by the broker), m7 and m8 (lost on the
  // way) unanswered. Each send retried on its own fiber, so the next connection carried m8, then m6 and
  // m7, and C received m8 before m7. The connection now keeps the sends it lost, oldest first, and the
  // client writes them as one batch on its next connection before anything else (PendingSends.ts).
  const ops: ReadonlyArray<Op> = [
    { _tag: "Flood", after: 0, from: 0, to: 2, count: 8, size: 5768, delayMs: 735 },
    { _tag: "Start", after: 1718, session: 0 },
    { _tag: "Send", after: 189, from: 2, to: 0 },
    { _tag: "Drop", after: 209, session: 0, side: "broker" },
    { _tag: "CrashBroker", after: 563, downMs: 5148 }
  ]
  for (const brokerConnections of ["adopted", "accepted"] as const) {
    it.effect(`A floods C and its connection drops with three sends unanswered: C gets them in A's order (${brokerConnections})`, () =>
      Effect.gen(function*() {
        // Seed 36433's shrunk workload.
        const report = yield* runWorkload({ seed: 36433, brokerConnections }, ops)
        assert.deepStrictEqual(report.violations, [])
      }))
  }

  it.effect("seed 36433 holds every invariant in durable mode", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 36433 })
      assert.deepStrictEqual(report.violations, [])
    }))
})

describe("fixed: a reply that comes while its ended ask's cancel_ask is on its way reaches the session (known issue 13)", () => {
  // Seed 50641: B asks A while B's writes are slow, and B's generation is replaced. The ask, interrupted,
  // writes its cancel_ask (529 ms) while still holding the reply slot; A's reply comes meanwhile, the slot
  // takes it for a wait that has ended, and it reached no one although A was told it was delivered. The
  // ask now frees the slot before the cancel_ask, so the reply goes to the session as a late reply does.
  const ops: ReadonlyArray<Op> = [
    { _tag: "Ask", after: 0, from: 2, to: 0, timeoutMs: 6000 },
    { _tag: "DelayWrites", after: 0, session: 1, side: "client", delayMs: 529, forMs: 9729 },
    { _tag: "Ask", after: 0, from: 1, to: 0, timeoutMs: 3000 },
    { _tag: "DelayWrites", after: 616, session: 0, side: "broker", delayMs: 132, forMs: 1600 },
    { _tag: "Ask", after: 6, from: 2, to: 1, timeoutMs: 5000 },
    { _tag: "Ask", after: 112, from: 0, to: 3, timeoutMs: 4000 },
    { _tag: "ReplaceGeneration", after: 851, session: 1 }
  ]
  it.effect("B's ask is interrupted while its cancel_ask waits to be written: A's reply reaches B's session", () =>
    Effect.gen(function*() {
      // Seed 50641's shrunk workload.
      const report = yield* runWorkload({ seed: 50641 }, ops)
      assert.deepStrictEqual(report.violations, [])
    }))

  it.effect("seed 50641 holds every invariant in durable mode", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 50641 })
      assert.deepStrictEqual(report.violations, [])
    }))
})

describe("fixed: mail flushed to a connection that closes before it could take it goes back (known issue 14)", () => {
  // Seed 55970: C's connection waited for admission behind a storm of connections that did not register,
  // and dropped while it waited; once admitted, its held `register` ran, and the broker flushed C's
  // mailbox (A's queued m1) to it. The outbox was full, so m1 was parked on C's own reader, and when the
  // reader closed, `OutputEnd.forceParked` skipped a reader's own parked output: m1 was dropped, and A had
  // been told it was queued. It is now taken back, to C's next connection or the mailbox. Since a
  // waiting connection's close is seen while it waits (Waiting.ts), C's dead connection is dropped
  // unregistered and this workload no longer reaches `forceParked`; seed 57649's, below, still does.
  const ops: ReadonlyArray<Op> = [
    { _tag: "Storm", after: 0, connections: 3, holdMs: 2188, drops: [2] },
    { _tag: "Send", after: 0, from: 0, to: 2 },
    { _tag: "Drop", after: 752, session: 2, side: "client" }
  ]
  for (const durability of ["durable", "memory"] as const) {
    for (const brokerConnections of ["adopted", "accepted"] as const) {
      it.effect(`C drops while it waits for admission with mail queued: C gets it on its next connection (${durability}, ${brokerConnections})`, () =>
        Effect.gen(function*() {
          // Seed 55970's shrunk workload.
          const report = yield* runWorkload({ seed: 55970, durability, brokerConnections }, ops)
          assert.deepStrictEqual(report.violations, [])
          assert.strictEqual(report.messages.delivered, 1)
        }))
    }
  }

  // Seed 57649: the same, with four messages flushed to B's dead connection: m1 was being written, m2-m4
  // parked. Taken back, the parked ones went first and B got m2, m3, m4, then m1; they now go back after
  // what the connection's outbox and unfinished write held, in their order.
  const flood: ReadonlyArray<Op> = [
    { _tag: "Storm", after: 0, connections: 4, holdMs: 1684, drops: [1] },
    { _tag: "Flood", after: 1012, from: 3, to: 1, count: 4, size: 4833, delayMs: 697 },
    { _tag: "Kill", after: 849, session: 1 }
  ]
  for (const durability of ["durable", "memory"] as const) {
    it.effect(`four messages flushed to B's dead connection come back in their order (${durability})`, () =>
      Effect.gen(function*() {
        // Seed 57649's shrunk workload.
        const report = yield* runWorkload({ seed: 57649, durability }, flood)
        assert.deepStrictEqual(report.violations, [])
        assert.strictEqual(report.messages.delivered, 4)
      }))
  }

  it.effect("seeds 55970 and 57649 hold every invariant in durable mode", () =>
    Effect.gen(function*() {
      for (const seed of [55970, 57649]) {
        const report = yield* runWorkload({ seed })
        assert.deepStrictEqual(report.violations, [], `seed ${seed}`)
      }
    }))
})

describe("fixed: a client's writes from many fibers wait their turn (known issue 16)", () => {
  // Seed 3, once the in-memory transport refused a second write while one waited and the simulation
  // counted defects: B floods D while the broker is down; on the reconnect B's resent sends and the
  // flood's next sends were written at once, over a link with no room. Over a Unix socket every such
  // write but the last waited for ever (the socket keeps one waiter); the in-memory link now makes
  // it a defect, which the simulation reports (`defect`). The client now writes one at a time.
  const ops: ReadonlyArray<Op> = [
    { _tag: "CrashBroker", after: 0, downMs: 3588 },
    { _tag: "Flood", after: 0, from: 1, to: 3, count: 7, size: 4431, delayMs: 598 }
  ]
  for (const durability of ["durable", "memory"] as const) {
    it.effect(`B floods D across a broker crash: every send completes and none dies (${durability})`, () =>
      Effect.gen(function*() {
        const report = yield* runWorkload({ seed: 3, durability }, ops)
        assert.deepStrictEqual(report.violations, [])
        assert.strictEqual(report.messages.delivered, 7)
      }))
  }
})

// Known issue 17 (a confirmation dropped with the batch its connection closed in) is tested in
// test/broker/custody.test.ts: since the client's outbox (stop 33) its simulation workload no longer
// reaches the window (docs/testing.md, known issue 17).

describe("known issue 22 (takeover-late-write) fixed for a client's own rejoin (rejoin-v1): the old connection's unread mail comes first", () => {
  // Seed 13399 (`--client-timings`): the broker stopped reading A and wrote to it slowly; m7 was in the
  // old connection's write in progress when A's client gave up on it and registered again. Before
  // `rejoin-v1` that was a takeover: the old outbox's m8..m13 went to the new connection at once, and
  // m7, which the socket never took, came back only when the old connection closed, after them. Now the
  // register carries the client instance's id, the broker sees its own rejoin, ends the old connection
  // at once and puts what it wrote there and was never confirmed (and the write's untaken rest) first.
  // A takeover by another instance, or by a client without the extension, kept it too once the old client
  // had custody (`received-v1`): the new connection holds the sender's mail until the old close gives back
  // what it wrote and the write's untaken rest (CustodyHold.ts). For a base client it is still known issue 22.
  /** The texts C received, in order. */
  const received = Effect.gen(function*() {
    const sim = yield* Simulation
    const a = sim.session("A")
    const c = sim.session("C")
    yield* c.stall("broker", "30 seconds") // C's liveness probe goes unanswered: C reconnects at 13.25 s
    yield* c.delayWrites("broker", "1 second")
    yield* sim.advance("11900 millis")
    yield* a.send("C", "one") // still in the old connection's write at the rejoin
    yield* sim.advance("1050 millis")
    yield* a.send("C", "two") // in the old outbox at the rejoin: handed over at once, after "one"
    yield* sim.advance("150 millis")
    yield* a.send("C", "three")
    yield* sim.advance("30 seconds")
    return (yield* c.inbox).map((inbound) => inbound.message.content.text)
  })
  const script = Effect.gen(function*() {
    assert.deepStrictEqual(yield* received, ["one", "two", "three"])
  })

  it.effect("the broker stops reading C and writes to it slowly; C rejoins while \"one\" is in the old write: it still comes first, and a run that tolerates nothing passes", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation({ seed: 1, sessions: ["A", "C"], tolerate: [] }, script)
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [])
      assert.isTrue(report.ok, report.trace.join("\n"))
      assert.strictEqual(report.messages.delivered, 3)
    }))

  it.effect("the seed the random sweep found it with (13399, client timings) passes tolerating nothing", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 13399, clientTimings: defaultClientTimingRanges, tolerate: [] })
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [])
      assert.isTrue(report.ok)
    }))

  it.effect("seed 2257 (--unregister --delivery): B gave up on its old connection (a list timed out behind 592 ms writes); m25, in its write, now comes first: it passes tolerating nothing", () =>
    Effect.gen(function*() {
      const report = yield* runWorkload({ seed: 2257, tolerate: [] }, undefined, { delivery: true, unregister: true })
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [])
      assert.isTrue(report.ok)
    }))

  it.effect("--withhold-rejoin: C's client drawn without rejoin-v1 (seed 1) takes its session over instead; the new connection holds A's mail until the old close gives \"one\" back: it still comes first, tolerating nothing", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation({ seed: 1, sessions: ["A", "C"], withholdRejoin: true, tolerate: [] }, script)
      assert.include(report.trace.join("\n"), "C client C/c1 registers without rejoin-v1")
      assert.deepStrictEqual(report.violations.map((violation) => violation.kind), [])
      assert.isTrue(report.ok, report.trace.join("\n"))
    }))

  it.effect("--withhold-rejoin: with both clients drawn with rejoin-v1 (seed 7) the script keeps its order", () =>
    Effect.gen(function*() {
      const report = yield* runSimulation({ seed: 7, sessions: ["A", "C"], withholdRejoin: true, tolerate: [] }, script)
      assert.notInclude(report.trace.join("\n"), "registers without rejoin-v1")
      assert.isTrue(report.ok, report.trace.join("\n"))
    }))

  it("the tolerance stays, with host journals too, for a takeover by another process or a client without rejoin-v1", () => {
    assert.include(KNOWN_ISSUES, "takeover-late-write")
    assert.include(KNOWN_ISSUES_WITH_JOURNAL, "takeover-late-write")
  })
})
