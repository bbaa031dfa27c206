/** Foreground parallel groups: one commit releases every active sibling; waiting tasks are skipped (C-ORD-21, C-ORD-22). */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import { makeDetachHandshake } from "../../src/workflow/DetachHandshake.ts"
import { makeDetachResponder } from "../../src/workflow/DetachResponder.ts"
import type { DetachRequest } from "../../src/workflow/DetachRoute.ts"
import { makeParallelGroup, type TaskSlot } from "../../src/workflow/ParallelRelease.ts"
import { entry, settle } from "./orderingSupport.ts"

const tags = (slots: ReadonlyArray<TaskSlot<string, never>>) => slots.map((slot) => slot._tag)

describe("ParallelRelease", () => {
  it.effect("without a release the aggregate waits for every task", () =>
    Effect.gen(function*() {
      const group = yield* makeParallelGroup<string, never>(
        // Each task's n seconds of work, on the TestClock the test moves.
        [1, 2, 3].map((n) => () => Effect.as(Effect.sleep(`${n} seconds`), `t${n}`)),
        { concurrency: 2 }
      )
      const aggregate = yield* Effect.forkChild(group.aggregate)
      yield* settle
      yield* TestClock.adjust("2 seconds")
      assert.isUndefined(aggregate.pollUnsafe())
      yield* TestClock.adjust("2 seconds")
      const slots = yield* Fiber.join(aggregate)
      assert.deepStrictEqual(slots.map((s) => s._tag === "Done" && Exit.isSuccess(s.exit) ? s.exit.value : s._tag), ["t1", "t2", "t3"])
    }))

  it.effect("one member's accepted commit releases every active sibling; waiting tasks are skipped and never launched (C-ORD-21, C-ORD-22)", () =>
    Effect.gen(function*() {
      const launched = yield* Ref.make<ReadonlyArray<number>>([])
      const finish = yield* Deferred.make<void>()
      // Member 0 is a foreground child whose parent's handshake commits; the group's release is its release.
      const detachedMember = yield* Deferred.make<Effect.Effect<void>>()
      const tasks = [0, 1, 2, 3].map((index) => (release: Effect.Effect<void>) =>
        Effect.gen(function*() {
          yield* Ref.update(launched, (list) => [...list, index])
          if (index === 0) yield* Deferred.succeed(detachedMember, release)
          yield* Deferred.await(finish)
          return `t${index}`
        })
      )
      const group = yield* makeParallelGroup<string, never>(tasks, { concurrency: 2 })
      const aggregate = yield* Effect.forkChild(group.aggregate)
      const release = yield* Deferred.await(detachedMember)
      const forward: { onRequest: (request: DetachRequest) => Effect.Effect<void> } = { onRequest: () => Effect.void }
      const handshake = yield* makeDetachHandshake({
        foreground: Effect.succeed({ targets: ["child-0"] }),
        send: (request) => forward.onRequest(request)
      })
      const child = yield* makeDetachResponder({ targets: ["child-0"], release, reply: (ack) => handshake.acknowledge(ack) })
      forward.onRequest = child.onRequest
      yield* handshake.renew("g1")
      assert.strictEqual(yield* handshake.handoff(entry("m1", "child-0")), "delivered")
      // The aggregate returns with placeholders: both running siblings detached, the waiting two skipped.
      assert.deepStrictEqual(tags(yield* Fiber.join(aggregate)), ["Detached", "Detached", "Skipped", "Skipped"])
      // The siblings keep running; their completions replace the placeholders.
      yield* Deferred.succeed(finish, undefined)
      const settled = yield* group.settled
      assert.deepStrictEqual(tags(settled), ["Done", "Done", "Skipped", "Skipped"])
      assert.deepStrictEqual(yield* Ref.get(launched), [0, 1])
    }))

  it.effect("release is idempotent: a second member's commit changes nothing", () =>
    Effect.gen(function*() {
      const group = yield* makeParallelGroup<string, never>([() => Effect.never, () => Effect.never, () => Effect.never], {
        concurrency: 1
      })
      yield* settle
      yield* group.release
      const first = tags(yield* group.slots)
      yield* group.release
      assert.deepStrictEqual(first, ["Detached", "Skipped", "Skipped"])
      assert.deepStrictEqual(tags(yield* group.slots), first)
    }))
})
