/** The terminal ordering barrier (C-ORD-25…31, C-ORD-33). */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Ref, Scope } from "effect"
import fc from "fast-check"
import { makeBarrierRegistry, TerminalBarriers } from "../../src/workflow/BarrierRegistry.ts"
import { DispatchError, TerminalAdmissionError } from "../../src/workflow/orderingErrors.ts"
import { makeIdleQueue } from "../../src/workflow/IdleQueue.ts"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"
import {
  makeTerminalBarrier,
  preludeSelector,
  type TerminalBatch,
  terminalIdOf,
  type TerminalNotice
} from "../../src/workflow/TerminalBarrier.ts"
import { entry, ids, settle } from "./orderingSupport.ts"

const terminal = (overrides: Partial<TerminalNotice<string>> = {}): TerminalNotice<string> => ({
  owner: "parent",
  runId: "run-1",
  requestId: "completion-r1",
  source: "child",
  terminalAt: 100,
  status: "completed",
  child: { ids: ["child-id"], names: ["child"] },
  notice: "completed",
  ...overrides
})

/** A child message: sender id `child-id`, name `child`, source run `run-1`. */
const fromChild = (id: string, options: Partial<InboundEntry<string>> = {}) =>
  entry(id, "child-id", { senderName: "child", timestamp: 50, source: { subagentRunId: "run-1" }, ...options })

const setup = (dispatch?: (batch: TerminalBatch<string, string>) => Effect.Effect<void, DispatchError>) =>
  Effect.gen(function*() {
    const batches: Array<ReadonlyArray<string>> = []
    // The parent stays busy: the barrier must never wait for it (C-ORD-31).
    const queue = yield* makeIdleQueue<string>({ isIdle: Effect.succeed(false), deliverBatch: () => Effect.void })
    const record = (batch: TerminalBatch<string, string>) =>
      Effect.sync(() => void batches.push([...ids(batch.prelude), `terminal:${batch.terminal.notice}`]))
    const barrier = yield* makeTerminalBarrier<string, string>(queue, {
      dispatch: (batch) => dispatch === undefined ? record(batch) : Effect.andThen(dispatch(batch), record(batch))
    })
    return { batches, barrier, queue }
  })

describe("TerminalBarrier", () => {
  it.effect("admits the child's pre-terminal messages with its notice as one FIFO batch; others keep their places (C-ORD-25, C-ORD-27, C-ORD-31)", () =>
    Effect.gen(function*() {
      const { barrier, batches, queue } = yield* setup()
      yield* queue.enqueue(fromChild("c1"))
      yield* queue.enqueue(entry("p1", "peer"))
      yield* queue.enqueue(fromChild("c2"))
      yield* queue.enqueue(entry("p2", "peer"))
      // No clock advance and a busy parent: admission does not wait for a turn (C-ORD-31).
      const outcome = yield* barrier.admit(terminal())
      assert.deepStrictEqual(outcome, { _tag: "Admitted", prelude: 2 })
      assert.deepStrictEqual(batches, [["c1", "c2", "terminal:completed"]])
      assert.deepStrictEqual(ids(yield* queue.entries), ["p1", "p2"])
    }))

  it.effect("never claims asks, entries after terminalAt, or entries whose source names another run (C-ORD-24, C-ORD-26)", () =>
    Effect.gen(function*() {
      const { barrier, batches, queue } = yield* setup()
      yield* queue.enqueue(fromChild("ask", { expectsReply: true }))
      yield* queue.enqueue(fromChild("late", { timestamp: 101 }))
      yield* queue.enqueue(fromChild("other-run", { source: { subagentRunId: "run-0" } }))
      yield* queue.enqueue(fromChild("at-terminal", { timestamp: 100 }))
      yield* barrier.admit(terminal())
      assert.deepStrictEqual(batches, [["at-terminal", "terminal:completed"]])
      assert.deepStrictEqual(ids(yield* queue.entries), ["ask", "late", "other-run"])
    }))

  it("matches a legacy entry (no source) by name only when the name maps to one sender id (C-ORD-26)", () => {
    const legacy = (id: string, senderId: string) => entry(id, senderId, { senderName: "child", timestamp: 1 })
    const byName = terminal({ child: { ids: [], names: ["child"] } })
    const unique = [legacy("a", "x1")]
    assert.isTrue(preludeSelector<string>(byName)(unique)(legacy("a", "x1")))
    const ambiguous = [legacy("a", "x1"), legacy("b", "x2")]
    assert.isFalse(preludeSelector<string>(byName)(ambiguous)(legacy("a", "x1")))
    // An exact id match is not a name match: it stays claimable.
    const byId = terminal({ child: { ids: ["x1"], names: ["child"] } })
    assert.isTrue(preludeSelector<string>(byId)(ambiguous)(legacy("a", "x1")))
  })

  it("terminal id drops a completion- prefix, or is <source>:<terminalAt> without a request id (C-ORD-28)", () => {
    assert.strictEqual(terminalIdOf({ requestId: "completion-r1", source: "child", terminalAt: 5 }), "r1")
    assert.strictEqual(terminalIdOf({ requestId: "r1", source: "child", terminalAt: 5 }), "r1")
    assert.strictEqual(terminalIdOf({ requestId: undefined, source: "child", terminalAt: 5 }), "child:5")
  })

  it.effect("a duplicate while the first is in flight joins it: one dispatch, one outcome (C-ORD-28)", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const calls = yield* Ref.make(0)
      const { barrier, batches, queue } = yield* setup(() => Effect.andThen(Ref.update(calls, (n) => n + 1), Deferred.await(gate)))
      yield* queue.enqueue(fromChild("c1"))
      const first = yield* Effect.forkChild(barrier.admit(terminal({ requestId: "completion-r1" })))
      yield* Effect.yieldNow
      const second = yield* Effect.forkChild(barrier.admit(terminal({ requestId: "r1" })))
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      const outcomes = [yield* Fiber.join(first), yield* Fiber.join(second)]
      assert.deepStrictEqual(outcomes, [{ _tag: "Admitted", prelude: 1 }, { _tag: "Admitted", prelude: 1 }])
      assert.strictEqual(yield* Ref.get(calls), 1)
      assert.deepStrictEqual(batches, [["c1", "terminal:completed"]])
    }))

  it.effect("a repeat after success claims no prelude, even when the first had none (C-ORD-28)", () =>
    Effect.gen(function*() {
      const { barrier, batches, queue } = yield* setup()
      assert.deepStrictEqual(yield* barrier.admit(terminal()), { _tag: "Admitted", prelude: 0 })
      yield* queue.enqueue(fromChild("c1"))
      assert.deepStrictEqual(yield* barrier.admit(terminal()), { _tag: "AlreadyAdmitted" })
      assert.deepStrictEqual(batches, [["terminal:completed"]])
      assert.deepStrictEqual(ids(yield* queue.entries), ["c1"])
    }))

  it.effect("remembers at least the last 1000 terminal keys (C-ORD-28)", () =>
    Effect.gen(function*() {
      const { barrier, batches } = yield* setup()
      const many = Array.from({ length: 1000 }, (_, i) => terminal({ requestId: `r${i}` }))
      yield* Effect.forEach(many, barrier.admit, { discard: true })
      const repeats = yield* Effect.forEach(many, barrier.admit)
      assert.isTrue(repeats.every((outcome) => outcome._tag === "AlreadyAdmitted"))
      assert.strictEqual(batches.length, 1000)
    }))

  it("a refused terminal's error names it as owner/run/terminal, with no NUL of its key", () => {
    const error = new TerminalAdmissionError({ terminalKey: "parent\u0000run-1\u0000r1", reason: "host refused" })
    assert.strictEqual(
      error.message,
      "Terminal notice parent/run-1/r1 was not admitted: host refused; its messages went back to the idle queue and the terminal can be retried"
    )
  })

  it.effect("a failed dispatch rolls back from the first undelivered index and the terminal stays retryable (C-ORD-29)", () =>
    Effect.gen(function*() {
      const failNext = yield* Ref.make(true)
      const { barrier, batches, queue } = yield* setup(() =>
        Effect.flatMap(Ref.getAndSet(failNext, false), (fail) =>
          fail ? Effect.fail(new DispatchError({ delivered: 1, reason: "host closed" })) : Effect.void)
      )
      yield* queue.enqueue(fromChild("c1"))
      yield* queue.enqueue(entry("p1", "peer"))
      yield* queue.enqueue(fromChild("c2"))
      yield* queue.enqueue(fromChild("c3"))
      const failed = yield* Effect.flip(barrier.admit(terminal()))
      assert.strictEqual(failed._tag, "TerminalAdmissionError")
      assert.include(failed.message, "host closed")
      // c1 was delivered; c2 and c3 are back in their places, around the peer's entry.
      assert.deepStrictEqual(ids(yield* queue.entries), ["p1", "c2", "c3"])
      yield* queue.enqueue(entry("p2", "peer"))
      assert.deepStrictEqual(yield* barrier.admit(terminal()), { _tag: "Admitted", prelude: 2 })
      assert.deepStrictEqual(batches, [["c2", "c3", "terminal:completed"]])
      assert.deepStrictEqual(ids(yield* queue.entries), ["p1", "p2"])
    }))

  it.effect("a dispatch that throws counts as nothing delivered (C-ORD-29)", () =>
    Effect.gen(function*() {
      const { barrier, queue } = yield* setup(() => Effect.die(new Error("host threw")))
      yield* queue.enqueue(fromChild("c1"))
      yield* queue.enqueue(fromChild("c2"))
      const exit = yield* Effect.exit(barrier.admit(terminal()))
      assert.isTrue(Exit.isFailure(exit))
      assert.deepStrictEqual(ids(yield* queue.entries), ["c1", "c2"])
    }))

  it.effect("a resumed run's later terminal is admitted separately (C-ORD-30)", () =>
    Effect.gen(function*() {
      const { barrier, batches, queue } = yield* setup()
      yield* queue.enqueue(fromChild("before-pause"))
      yield* barrier.admit(terminal({ requestId: undefined, status: "paused", notice: "paused", terminalAt: 100 }))
      yield* queue.enqueue(fromChild("after-resume", { timestamp: 150 }))
      yield* barrier.admit(terminal({ requestId: undefined, terminalAt: 200 }))
      assert.deepStrictEqual(batches, [["before-pause", "terminal:paused"], ["after-resume", "terminal:completed"]])
    }))

  it.effect("the newest registration that is still current admits a terminal (C-ORD-33)", () =>
    Effect.gen(function*() {
      const registry = yield* makeBarrierRegistry<string>()
      const older = yield* setup()
      const newer = yield* setup()
      const newerCurrent = yield* Ref.make(true)
      yield* registry.register(older.barrier, Effect.succeed(true))
      const newerScope = yield* Scope.make()
      yield* registry.register(newer.barrier, Ref.get(newerCurrent)).pipe(Scope.provide(newerScope))
      yield* registry.admit(terminal({ requestId: "a" }))
      assert.deepStrictEqual([older.batches.length, newer.batches.length], [0, 1])
      yield* Ref.set(newerCurrent, false) // its generation was reloaded away
      yield* registry.admit(terminal({ requestId: "b" }))
      assert.deepStrictEqual([older.batches.length, newer.batches.length], [1, 1])
      yield* Scope.close(newerScope, Exit.void)
      const empty = yield* makeBarrierRegistry<string>()
      assert.strictEqual((yield* Effect.flip(empty.admit(terminal())))._tag, "NoTerminalBarrier")
    }))

  it.effect("property: the batch is exactly the model's prelude, and a failure restores the undelivered rest in order (C-ORD-25…29)", () =>
    Effect.gen(function*() {
      const entryArb = fc.record({
        child: fc.boolean(),
        ask: fc.boolean(),
        timestamp: fc.nat(200),
        run: fc.constantFrom("run-1", "run-2")
      })
      const cases = fc.sample(fc.tuple(fc.array(entryArb, { maxLength: 12 }), fc.option(fc.nat(12))), 200)
      for (const [shapes, failAt] of cases) {
        const { barrier, batches, queue } = yield* setup((batch) =>
          failAt !== null && failAt < batch.prelude.length
            ? Effect.fail(new DispatchError({ delivered: failAt, reason: "refused" }))
            : Effect.void
        )
        const all = shapes.map((shape, i) =>
          shape.child
            ? fromChild(`m${i}`, { expectsReply: shape.ask, timestamp: shape.timestamp, source: { subagentRunId: shape.run } })
            : entry(`m${i}`, "peer", { timestamp: shape.timestamp })
        )
        yield* Effect.forEach(all, queue.enqueue, { discard: true })
        const expected = all.filter((e) =>
          e.senderId === "child-id" && !e.expectsReply && e.timestamp <= 100 && e.source?.subagentRunId === "run-1"
        )
        const outcome = yield* Effect.exit(barrier.admit(terminal()))
        if (failAt !== null && failAt < expected.length) {
          assert.isTrue(Exit.isFailure(outcome))
          const delivered = new Set(ids(expected.slice(0, failAt)))
          assert.deepStrictEqual(ids(yield* queue.entries), ids(all).filter((id) => !delivered.has(id)))
        } else {
          assert.deepStrictEqual(batches, [[...ids(expected), "terminal:completed"]])
          const claimed = new Set(ids(expected))
          assert.deepStrictEqual(ids(yield* queue.entries), ids(all).filter((id) => !claimed.has(id)))
        }
      }
    }))
})

describe("TerminalBarrier and a flush in progress", () => {
  it.effect("a terminal arriving during a flush waits for that hand-over, so a refused flush's child messages still precede it (C-ORD-25, C-ORD-29)", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const log: Array<string> = []
      const queue = yield* makeIdleQueue<string>({
        isIdle: Effect.succeed(true),
        // The host is slow, then refuses the whole batch.
        deliverBatch: () => Effect.andThen(Deferred.await(gate), Effect.fail(new DispatchError({ delivered: 0, reason: "busy again" })))
      })
      const barrier = yield* makeTerminalBarrier<string, string>(queue, {
        dispatch: (batch) => Effect.sync(() => void log.push(...ids(batch.prelude), "terminal"))
      })
      yield* queue.enqueue(fromChild("c1"))
      yield* queue.wake
      yield* settle // the flush has taken c1 and waits on the host
      assert.deepStrictEqual(yield* queue.entries, [])
      const admitting = yield* Effect.forkChild(barrier.admit(terminal()))
      yield* settle
      assert.deepStrictEqual(log, []) // not handed over in the middle of the flush
      yield* Deferred.succeed(gate, undefined)
      assert.deepStrictEqual(yield* Fiber.join(admitting), { _tag: "Admitted", prelude: 1 })
      assert.deepStrictEqual(log, ["c1", "terminal"])
    }))
})

describe("TerminalBarriers service", () => {
  it.effect("one registry per layer: a barrier registered through the service admits what any companion sends (C-ORD-33)", () =>
    Effect.gen(function*() {
      const queue = yield* makeIdleQueue<string>({ isIdle: Effect.succeed(false), deliverBatch: () => Effect.void })
      const notices: Array<unknown> = []
      const barrier = yield* makeTerminalBarrier<string, unknown>(queue, {
        dispatch: (batch) => Effect.sync(() => void notices.push(batch.terminal.notice))
      })
      yield* TerminalBarriers.use((registry) => registry.register(barrier, Effect.succeed(true)))
      // A separately written companion reaches the same registry through the service.
      yield* TerminalBarriers.use((registry) => registry.admit(terminal()))
      assert.deepStrictEqual(notices, ["completed"])
    }).pipe(Effect.provide(TerminalBarriers.layer)))
})

describe("TerminalBarrier lifetime", () => {
  it.effect("admissions still waiting when the generation's Scope closes fail instead of hanging, and claim nothing", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const gate = yield* Deferred.make<void>()
      const queue = yield* makeIdleQueue<string>({ isIdle: Effect.succeed(false), deliverBatch: () => Effect.void })
      const barrier = yield* makeTerminalBarrier<string, string>(queue, { dispatch: () => Deferred.await(gate) }).pipe(
        Scope.provide(scope)
      )
      yield* queue.enqueue(fromChild("c1"))
      const first = yield* Effect.forkChild(barrier.admit(terminal({ requestId: "a" })))
      const second = yield* Effect.forkChild(barrier.admit(terminal({ requestId: "b" })))
      yield* Effect.yieldNow
      yield* Scope.close(scope, Exit.void)
      const exits = [yield* Fiber.await(first), yield* Fiber.await(second)]
      assert.isTrue(exits.every(Exit.isFailure))
      assert.deepStrictEqual(ids(yield* queue.entries), ["c1"]) // the interrupted dispatch was rolled back
      assert.strictEqual((yield* Effect.flip(barrier.admit(terminal({ requestId: "c" }))))._tag, "TerminalAdmissionError")
    }))
  it.effect("a terminal whose dispatch was under way as the Scope closed is admitted, not reported retryable (a retry would deliver it twice)", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const started = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      const dispatched: Array<ReadonlyArray<string>> = []
      const queue = yield* makeIdleQueue<string>({ isIdle: Effect.succeed(false), deliverBatch: () => Effect.void })
      const barrier = yield* makeTerminalBarrier<string, string>(queue, {
        dispatch: (batch) =>
          Effect.gen(function*() {
            yield* Deferred.succeed(started, undefined)
            // The hand-over is uninterruptible: the closing Scope waits for it.
            yield* Deferred.await(gate)
            dispatched.push([...ids(batch.prelude), "terminal"])
          })
      }).pipe(Scope.provide(scope))
      yield* queue.enqueue(fromChild("c1"))
      const admitting = yield* Effect.forkChild(barrier.admit(terminal()), { startImmediately: true })
      yield* Deferred.await(started)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void), { startImmediately: true })
      yield* settle
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(dispatched, [["c1", "terminal"]])
      assert.deepStrictEqual(yield* Fiber.join(admitting), { _tag: "Admitted", prelude: 1 })
    }))
})

describe("TerminalBarrier broken builds", () => {
  type Selector = typeof preludeSelector<string>
  /** How many random queues a selector claims differently from the contract's model (C-ORD-26). */
  const mismatches = (selector: Selector): number => {
    const shapeArb = fc.record({
      sender: fc.constantFrom("child-id", "peer", "twin"),
      ask: fc.boolean(),
      timestamp: fc.nat(200),
      run: fc.option(fc.constantFrom("run-1", "run-2"))
    })
    let wrong = 0
    for (const shapes of fc.sample(fc.array(shapeArb, { maxLength: 10 }), { seed: 14, numRuns: 300 })) {
      // "twin" shares the child's name under another id: a legacy entry from either is ambiguous.
      const all = shapes.map((shape, i) =>
        entry(`m${i}`, shape.sender, {
          senderName: shape.sender === "peer" ? "peer" : "child",
          expectsReply: shape.ask,
          timestamp: shape.timestamp,
          source: shape.run === null ? undefined : { subagentRunId: shape.run }
        })
      )
      const notice = terminal({ child: { ids: [], names: ["child"] } })
      const ambiguous = new Set(all.filter((e) => e.senderName === "child").map((e) => e.senderId)).size > 1
      const model = all.filter((e) =>
        e.senderName === "child" && !e.expectsReply && e.timestamp <= 100 &&
        (e.source !== undefined ? e.source.subagentRunId === "run-1" : !ambiguous)
      )
      const accept = selector(notice)(all)
      if (ids(all.filter(accept)).join() !== ids(model).join()) wrong++
    }
    return wrong
  }

  it("the real selector agrees with the model; selectors that drop one C-ORD-26 rule are caught", () => {
    assert.strictEqual(mismatches(preludeSelector), 0)
    const broken: Record<string, Selector> = {
      "claims asks": (t) => (q) => (e) => preludeSelector<string>(t)(q)({ ...e, expectsReply: false }),
      "claims after terminalAt": (t) => (q) => (e) => preludeSelector<string>(t)(q)({ ...e, timestamp: 0 }),
      "ignores the source run": (t) => (q) => (e) =>
        preludeSelector<string>(t)(q)(e.source === undefined ? e : { ...e, source: { subagentRunId: t.runId } }),
      "trusts ambiguous legacy names": (t) => () => (e) =>
        preludeSelector<string>(t)([e])(e)
    }
    for (const [name, selector] of Object.entries(broken)) {
      assert.isAbove(mismatches(selector), 0, `broken build not caught: ${name}`)
    }
  })
})
