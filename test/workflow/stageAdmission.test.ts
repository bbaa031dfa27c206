/**
 * Stage generation admission (C-ORD-1…5, C-ORD-34, C-ORD-35): the admission
 * actor of one stage generation over a fake stage session and a foreground
 * handoff the test settles by hand. No test advances the clock: every
 * outcome here is immediate, so an asker never waits out a timeout.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Scope } from "effect"
import * as fc from "fast-check"
import { STAGE_RETIRED_TEXT, type StageRetired } from "../../src/workflow/errors.ts"
import { closeAndPublish, makeStageAdmission, type StageAdmission } from "../../src/workflow/StageAdmission.ts"
import { stageNotice } from "../../src/workflow/StageEntry.ts"
import { ask, fakeSession, type Log, manualHandoff, note, recordingReplyError } from "./support.ts"

const setup = (options: Parameters<typeof fakeSession>[1] = {}) =>
  Effect.gen(function*() {
    const log: Log = []
    const { session, state } = fakeSession(log, options)
    const manual = manualHandoff(log)
    const scope = yield* Scope.make()
    const stage = yield* makeStageAdmission({ session, handoff: manual.handoff, replyError: recordingReplyError(log) }).pipe(
      Scope.provide(scope)
    )
    return { log, state, manual, scope, stage }
  })

describe("StageAdmission", () => {
  it.effect("C-ORD-1: an idle open stage takes an entry into its own session queue", () =>
    Effect.gen(function*() {
      const { log, stage } = yield* setup()
      const admitted = yield* stage.admit(note("m1"))
      const notice = yield* stage.admit(stageNotice({ id: "bash-1", text: "bash done" }))
      assert.deepStrictEqual([admitted, notice], [{ _tag: "Admitted", via: "native" }, { _tag: "Admitted", via: "native" }])
      assert.deepStrictEqual(log, ["insert:m1", "insert:bash-1"])
    }))

  it.effect("C-ORD-2: an entry admitted before close is drained before the terminal snapshot; one after close is not taken", () =>
    Effect.gen(function*() {
      const { log, stage } = yield* setup()
      yield* stage.admit(note("before"))
      const published = yield* closeAndPublish(stage, Effect.sync(() => log.push("snapshot")))
      const after = yield* stage.admit(note("after"))
      assert.strictEqual(published, 2)
      assert.deepStrictEqual(after, { _tag: "Closed" })
      assert.deepStrictEqual(log, ["insert:before", "snapshot"])
      assert.strictEqual(stage.phase(), "closed")
    }))

  it.effect("C-ORD-3: a busy stage reserves before the handshake, so close waits for the in-flight message", () =>
    Effect.gen(function*() {
      const { log, manual, stage } = yield* setup({ busy: true })
      const entry = note("m1")
      const admitting = yield* Effect.forkChild(stage.admit(entry), { startImmediately: true })
      yield* manual.started(entry)
      // The handshake has started; the entry is already reserved in the stage.
      assert.deepStrictEqual(log, ["handoff:m1"])
      assert.strictEqual(stage.pending(), 1)
      const closing = yield* Effect.forkChild(closeAndPublish(stage, Effect.sync(() => log.push("snapshot"))), {
        startImmediately: true
      })
      // The actor takes commands in order: once a later admit is answered `Closed`, close has been taken.
      assert.deepStrictEqual(yield* stage.admit(note("late")), { _tag: "Closed" })
      // Without the reservation, close would have finished and the snapshot overtaken m1.
      assert.strictEqual(stage.phase(), "closing")
      assert.isUndefined(closing.pollUnsafe())
      yield* manual.settle(entry, "delivered")
      assert.deepStrictEqual(yield* Fiber.join(admitting), { _tag: "Admitted", via: "delivered" })
      yield* Fiber.join(closing)
      assert.deepStrictEqual(log, ["handoff:m1", "insert:m1", "snapshot"])
    }))

  it.effect("C-ORD-3/C-ORD-14: an unclaimed entry is still inserted into the stage (never dropped)", () =>
    Effect.gen(function*() {
      const { log, manual, stage } = yield* setup({ busy: true })
      const entry = note("m1")
      const admitting = yield* Effect.forkChild(stage.admit(entry), { startImmediately: true })
      yield* manual.settle(entry, "unclaimed")
      assert.deepStrictEqual(yield* Fiber.join(admitting), { _tag: "Admitted", via: "unclaimed" })
      assert.deepStrictEqual(log, ["handoff:m1", "insert:m1"])
    }))

  it.effect("entries reach the stage in admission order: one waiting on its handshake holds back a later one", () =>
    Effect.gen(function*() {
      const { log, manual, stage, state } = yield* setup({ busy: true })
      const first = note("m1")
      const a = yield* Effect.forkChild(stage.admit(first), { startImmediately: true })
      yield* manual.started(first)
      state.busy = false
      const b = yield* Effect.forkChild(stage.admit(note("m2")), { startImmediately: true })
      yield* Effect.yieldNow
      assert.deepStrictEqual(log, ["handoff:m1"])
      yield* manual.settle(first, "unclaimed")
      yield* Fiber.join(a)
      yield* Fiber.join(b)
      assert.deepStrictEqual(log, ["handoff:m1", "insert:m1", "insert:m2"])
    }))

  it.effect("C-ORD-4: abandoned during first refusal fails a non-ask with the contract's text, releasing it for retry", () =>
    Effect.gen(function*() {
      const { log, manual, stage } = yield* setup({ busy: true })
      const entry = note("m1")
      const admitting = yield* Effect.forkChild(stage.admit(entry), { startImmediately: true })
      yield* manual.settle(entry, "abandoned")
      const exit = yield* Fiber.await(admitting)
      assert.isTrue(Exit.isFailure(exit))
      const error = yield* Effect.flip(Fiber.join(admitting))
      assert.strictEqual(error._tag, "StageRetired")
      assert.strictEqual(error.message, "Workflow stage retired during foreground-owner admission")
      assert.deepStrictEqual(log, ["handoff:m1"])
    }))

  it.effect("C-ORD-4/C-ORD-5: an ask abandoned during first refusal gets the correlated replyError at once", () =>
    Effect.gen(function*() {
      const { log, manual, stage } = yield* setup({ busy: true })
      const entry = ask("q1")
      const admitting = yield* Effect.forkChild(stage.admit(entry), { startImmediately: true })
      yield* manual.settle(entry, "abandoned")
      assert.deepStrictEqual(yield* Fiber.join(admitting), { _tag: "Rejected", reason: STAGE_RETIRED_TEXT })
      assert.deepStrictEqual(log, [
        "handoff:q1",
        `replyError:q1:Running workflow stage could not admit intercom ask: ${STAGE_RETIRED_TEXT}`
      ])
    }))

  it.effect("C-ORD-5: an ask the stage session refuses gets a correlated replyError; a refused non-ask fails for retry and is taken on retry", () =>
    Effect.gen(function*() {
      let refuse = true
      const { log, stage } = yield* setup({ failInsert: () => refuse ? "session is compacting" : undefined })
      const rejected = yield* stage.admit(ask("q1"))
      assert.strictEqual(rejected._tag, "Rejected")
      const failed = yield* Effect.flip(stage.admit(note("m1")))
      assert.strictEqual(failed._tag, "StageInsertFailed")
      assert.strictEqual(failed.message, "Workflow stage could not take the message: session is compacting")
      refuse = false
      assert.deepStrictEqual(yield* stage.admit(note("m1")), { _tag: "Admitted", via: "native" })
      assert.deepStrictEqual(log, [
        "replyError:q1:Running workflow stage could not admit intercom ask: Workflow stage could not take the message: session is compacting",
        "insert:m1"
      ])
    }))

  it.effect("C-ORD-34: a producer still running does not keep the stage open; its completion after close is not taken", () =>
    Effect.gen(function*() {
      const { log, stage } = yield* setup()
      yield* stage.admit(stageNotice({ id: "child-1", text: "child 1 completed", source: "run-1" }))
      // child-2 is still running: close does not wait for it.
      yield* closeAndPublish(stage, Effect.sync(() => log.push("snapshot")))
      const late = yield* stage.admit(stageNotice({ id: "child-2", text: "child 2 completed", source: "run-1" }))
      assert.deepStrictEqual(late, { _tag: "Closed" })
      assert.deepStrictEqual(log, ["insert:child-1", "snapshot"])
    }))

  it.effect("C-ORD-35: ending the generation interrupts the handshake; waiting admissions fail and a late disposition inserts nothing", () =>
    Effect.gen(function*() {
      const { log, manual, scope, stage } = yield* setup({ busy: true })
      const entry = note("m1")
      const admitting = yield* Effect.forkChild(stage.admit(entry), { startImmediately: true })
      yield* manual.started(entry)
      yield* Scope.close(scope, Exit.void)
      const error = yield* Effect.flip(Fiber.join(admitting))
      assert.strictEqual(error._tag, "StageRetired")
      yield* manual.settle(entry, "delivered")
      yield* Effect.yieldNow
      assert.deepStrictEqual(log, ["handoff:m1"])
      assert.strictEqual((yield* Effect.flip(stage.close))._tag, "StageRetired")
      assert.strictEqual((yield* Effect.flip(stage.admit(note("m2"))))._tag, "StageRetired")
    }))

  it.effect("C-ORD-2/7: an entry still unanswered when a closed generation retires was not admitted before close: it is Closed, and an ask gets no running-stage replyError", () =>
    Effect.gen(function*() {
      const { log, scope, stage } = yield* setup()
      yield* stage.close
      // The ask reaches the mailbox, and the generation retires before the actor answers it.
      const admitting = yield* Effect.forkChild(stage.admit(ask("q1")), { startImmediately: true })
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* Fiber.join(admitting), { _tag: "Closed" })
      assert.deepStrictEqual(yield* stage.admit(note("m1")), { _tag: "Closed" })
      assert.deepStrictEqual(log, [])
    }))

  it.effect("C-ORD-2/3 (property): whatever the interleaving, close drains exactly the entries admitted before it, in order, and takes none after", () =>
    Effect.promise(() => fc.assert(drainProperty(closeAndPublish), { numRuns: 200 })))

  it.effect("broken build: the drain property catches a stage that publishes its snapshot without waiting for admitted entries", () =>
    Effect.promise(async () => {
      const publishAtOnce: CloseWith = (stage, publish) =>
        Effect.andThen(Effect.forkChild(stage.close, { startImmediately: true }), publish)
      const result = await fc.check(drainProperty(publishAtOnce), { numRuns: 200 })
      assert.isTrue(result.failed)
    }))
})

/** How a test closes the stage and publishes its snapshot. */
type CloseWith = (
  stage: StageAdmission,
  publish: Effect.Effect<number>
) => Effect.Effect<number, StageRetired>

/**
 * Entries admitted at random busy/idle moments, handshakes settled in a
 * random order, close at a random point: the stage session gets exactly the
 * entries admitted before close, in admission order, and then the snapshot.
 */
const drainProperty = (closeWith: CloseWith) =>
  fc.asyncProperty(
    fc.array(
      fc.record({
        busy: fc.boolean(),
        disposition: fc.constantFrom("delivered" as const, "unclaimed" as const),
        settleAt: fc.nat(12)
      }),
      { minLength: 1, maxLength: 8 }
    ),
    fc.nat(8),
    async (entries, closeAt) => {
      const program = Effect.gen(function*() {
        const { log, manual, stage, state } = yield* setup()
        const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
        let closing: Fiber.Fiber<unknown, unknown> | undefined
        const close = () =>
          Effect.forkChild(closeWith(stage, Effect.sync(() => log.push("snapshot"))), { startImmediately: true })
        const settles: Array<{ at: number; run: Effect.Effect<boolean> }> = []
        for (const [i, spec] of entries.entries()) {
          if (i === closeAt) closing = yield* close()
          state.busy = spec.busy
          const entry = note(`m${i}`)
          fibers.push(yield* Effect.forkChild(stage.admit(entry), { startImmediately: true }))
          settles.push({ at: spec.settleAt, run: manual.settle(entry, spec.disposition) })
        }
        if (closing === undefined) closing = yield* close()
        for (const settle of settles.sort((a, b) => a.at - b.at)) {
          yield* settle.run
          yield* Effect.yieldNow
        }
        yield* Fiber.join(closing)
        for (const fiber of fibers) yield* Fiber.await(fiber)
        const expected = entries.slice(0, Math.min(closeAt, entries.length)).map((_, i) => `insert:m${i}`)
        const seen = log.filter((line) => line.startsWith("insert:") || line === "snapshot")
        assert.deepStrictEqual(seen, [...expected, "snapshot"])
      })
      await Effect.runPromise(Effect.scoped(program))
    }
  )
