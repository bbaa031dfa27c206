/**
 * Generation Scopes (C-ORD-16, C-ORD-35): work of a retired generation is
 * interrupted, and a late callback of it writes nothing, in particular not
 * into its replacement.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Option, Scope } from "effect"
import { makeGenerationSlot } from "../../src/workflow/GenerationScope.ts"

describe("GenerationScope", () => {
  it.effect("C-ORD-16: opening the next generation interrupts the work of the previous one", () =>
    Effect.gen(function*() {
      const slot = yield* makeGenerationSlot
      const first = yield* slot.next
      // A retry loop that never ends on its own (the TestClock never moves): only the generation's close stops it.
      const retry = yield* first.fork(Effect.sleep("100 millis").pipe(Effect.forever))
      const second = yield* slot.next
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(retry)))
      assert.deepStrictEqual([first.isCurrent(), second.isCurrent(), slot.current()?.generation], [false, true, 2])
    }))

  it.effect("C-ORD-35: a late callback of a retired generation does nothing and never writes into its replacement", () =>
    Effect.gen(function*() {
      const slot = yield* makeGenerationSlot
      const first = yield* slot.next
      const transcript: Array<string> = []
      const settled = yield* Deferred.make<void>()
      // A host callback that settles outside Effect's control, later.
      const late = Deferred.await(settled).pipe(
        Effect.andThen(first.whenCurrent(Effect.sync(() => transcript.push("late write"))))
      )
      const callback = yield* Effect.forkDetach(late)
      const second = yield* slot.next
      yield* Deferred.succeed(settled, undefined)
      assert.isTrue(Option.isNone(yield* Fiber.join(callback)))
      const current = yield* second.whenCurrent(Effect.sync(() => transcript.push("current write")))
      assert.isTrue(Option.isSome(current))
      assert.deepStrictEqual(transcript, ["current write"])
    }))

  it.effect("closing the owner's Scope retires the current generation", () =>
    Effect.gen(function*() {
      const owner = yield* Scope.make()
      const slot = yield* makeGenerationSlot.pipe(Scope.provide(owner))
      const generation = yield* slot.next
      const work = yield* generation.fork(Effect.never)
      yield* Scope.close(owner, Exit.void)
      assert.isFalse(generation.isCurrent())
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(work)))
    }))
})
