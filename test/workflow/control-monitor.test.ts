/**
 * `ControlMonitor` (C-WFD-9): the 60 s / 240 s / 3-failure thresholds as
 * settings, each signal once per occurrence, on a TestClock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Exit, Scope } from "effect"
import * as TestClock from "effect/testing/TestClock"
import { type ControlSignal, DEFAULT_CONTROL_SETTINGS, makeControlMonitor } from "../../src/workflow/ControlMonitor.ts"

const setup = (settings = {}) =>
  Effect.gen(function*() {
    const signals: Array<ControlSignal & { readonly at: number }> = []
    const monitor = yield* makeControlMonitor(
      (signal) => Effect.map(Clock.currentTimeMillis, (at) => void signals.push({ ...signal, at })),
      settings
    )
    yield* Effect.yieldNow
    return { signals, monitor }
  })

const tick = (ms: number) => TestClock.adjust(ms).pipe(Effect.andThen(Effect.yieldNow))

describe("ControlMonitor", () => {
  it("C-WFD-9: the defaults are 60 s, 240 s and 3 failures", () => {
    assert.deepStrictEqual(DEFAULT_CONTROL_SETTINGS, { attentionAfterMs: 60_000, longRunningAfterMs: 240_000, maxFailedTools: 3 })
  })

  it.effect("C-WFD-9: needs attention after 60 s without activity, once per idle spell; activity starts a new spell", () =>
    Effect.gen(function*() {
      const { signals, monitor } = yield* setup()
      yield* tick(59_999)
      assert.deepStrictEqual(signals, [])
      yield* tick(1)
      assert.deepStrictEqual(signals, [{ event: "needs_attention", cause: "inactive", idleMs: 60_000, at: 60_000 }])
      yield* tick(60_000)
      assert.strictEqual(signals.length, 1, "one notice per idle spell")
      yield* monitor.activity
      yield* tick(30_000)
      yield* monitor.activity
      yield* tick(59_999)
      assert.strictEqual(signals.length, 1, "activity postponed the deadline")
      yield* tick(1)
      assert.deepStrictEqual(signals.map((s) => [s.event, s.at]), [["needs_attention", 60_000], ["needs_attention", 210_000]])
    }))

  it.effect("C-WFD-9: the long-running notice comes once, 240 s after the start, however active the child is", () =>
    Effect.gen(function*() {
      const { signals, monitor } = yield* setup()
      for (let i = 0; i < 10; i++) {
        yield* tick(30_000)
        yield* monitor.activity
      }
      const long = signals.filter((s) => s.event === "active_long_running")
      assert.deepStrictEqual(long, [{ event: "active_long_running", runningMs: 240_000, at: 240_000 }])
      assert.deepStrictEqual(signals.filter((s) => s.event === "needs_attention"), [])
    }))

  it.effect("C-WFD-9: three failed tool attempts in a row need attention; a success starts the count over", () =>
    Effect.gen(function*() {
      const { signals, monitor } = yield* setup()
      yield* monitor.toolFailed
      yield* monitor.toolFailed
      yield* monitor.toolSucceeded
      yield* monitor.toolFailed
      yield* monitor.toolFailed
      yield* Effect.yieldNow
      assert.deepStrictEqual(signals, [])
      yield* monitor.toolFailed
      yield* Effect.yieldNow
      assert.deepStrictEqual(signals, [{ event: "needs_attention", cause: "failed_tools", failures: 3, at: 0 }])
      yield* monitor.toolFailed
      yield* Effect.yieldNow
      assert.strictEqual(signals.length, 1, "once per run of failures")
    }))

  it.effect("C-WFD-9: the thresholds are settings", () =>
    Effect.gen(function*() {
      const { signals, monitor } = yield* setup({ attentionAfterMs: 5_000, longRunningAfterMs: 7_000, maxFailedTools: 1 })
      yield* monitor.toolFailed
      yield* tick(5_000)
      yield* tick(2_000)
      assert.deepStrictEqual(signals.map((s) => [s.event, s.at]), [["needs_attention", 0], ["needs_attention", 5_000], [
        "active_long_running",
        7_000
      ]])
    }))

  it.effect("settled, or the Scope closed, means no more signals; bad settings are refused by name", () =>
    Effect.gen(function*() {
      const { signals, monitor } = yield* setup()
      yield* monitor.settled
      yield* tick(300_000)
      assert.deepStrictEqual(signals, [])
      const scope = yield* Scope.make()
      const other = yield* setup().pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      yield* tick(300_000)
      assert.deepStrictEqual(other.signals, [])
      const bad = yield* Effect.flip(makeControlMonitor(() => Effect.void, { maxFailedTools: 0 }))
      assert.include(bad.message, "maxFailedTools")
    }))
})
