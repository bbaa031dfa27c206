/**
 * The idle queue and the terminal barrier together, under random arrivals,
 * flushes, terminal attempts and partial host failures: a child's messages
 * accepted before its terminal reach the parent before the terminal, nothing
 * is lost and nothing arrives twice (C-DLV-10, C-ORD-25, C-ORD-29).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Ref } from "effect"
import fc from "fast-check"
import { DispatchError } from "../../src/workflow/orderingErrors.ts"
import { makeIdleQueue } from "../../src/workflow/IdleQueue.ts"
import { makeTerminalBarrier } from "../../src/workflow/TerminalBarrier.ts"
import { entry, settle } from "./orderingSupport.ts"

type Step =
  | { readonly kind: "child" }
  | { readonly kind: "peer" }
  | { readonly kind: "flush"; readonly failAt: number | null }
  | { readonly kind: "terminal"; readonly failAt: number | null }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: "child" as const }), weight: 4 },
  { arbitrary: fc.constant({ kind: "peer" as const }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("flush" as const), failAt: fc.option(fc.nat(4)) }), weight: 2 },
  { arbitrary: fc.record({ kind: fc.constant("terminal" as const), failAt: fc.option(fc.nat(4)) }), weight: 1 }
)

describe("idle queue + terminal barrier", () => {
  it.effect("property: pre-terminal child messages precede the terminal; none lost or doubled under partial failures", () =>
    Effect.gen(function*() {
      const programs = fc.sample(fc.array(stepArb, { maxLength: 30 }), { seed: 1014, numRuns: 150 })
      for (const program of programs) {
        const log: Array<string> = []
        const idle = yield* Ref.make(false)
        const failNext: { flush: number | null; terminal: number | null } = { flush: null, terminal: null }
        const queue = yield* makeIdleQueue<string>({
          isIdle: Ref.get(idle),
          deliverBatch: (batch) =>
            Effect.suspend(() => {
              const failAt = failNext.flush
              failNext.flush = null
              const taken = failAt === null || failAt >= batch.length ? batch.length : failAt
              for (const e of batch.slice(0, taken)) log.push(e.payload)
              return taken === batch.length
                ? Effect.void
                : Effect.fail(new DispatchError({ delivered: taken, reason: "flush refused" }))
            })
        })
        const barrier = yield* makeTerminalBarrier<string, string>(queue, {
          dispatch: ({ prelude }) =>
            Effect.suspend(() => {
              const failAt = failNext.terminal
              failNext.terminal = null
              if (failAt !== null && failAt <= prelude.length) {
                for (const e of prelude.slice(0, failAt)) log.push(e.payload)
                return Effect.fail(new DispatchError({ delivered: failAt, reason: "terminal refused" }))
              }
              for (const e of prelude) log.push(e.payload)
              log.push("terminal")
              return Effect.void
            })
        })
        const notice = {
          owner: "parent",
          runId: "run-1",
          requestId: "r1",
          source: "child",
          terminalAt: 1000,
          status: "completed" as const,
          child: { ids: ["child-id"], names: ["child"] },
          notice: "done"
        }
        let n = 0
        let admitted = false
        /** Child messages queued before the terminal was admitted: all must precede it. */
        const before = new Set<string>()
        const all: Array<string> = []
        for (const step of program) {
          if (step.kind === "child" || step.kind === "peer") {
            const id = `${step.kind}-${n++}`
            all.push(id)
            if (step.kind === "child" && !admitted) before.add(id)
            yield* queue.enqueue(
              step.kind === "child"
                ? entry(id, "child-id", { senderName: "child", timestamp: admitted ? 2000 : n, source: { subagentRunId: "run-1" } })
                : entry(id, "peer", { timestamp: n })
            )
          } else if (step.kind === "flush") {
            failNext.flush = step.failAt
            yield* Ref.set(idle, true)
            yield* queue.wake
            yield* settle
            yield* Ref.set(idle, false)
            failNext.flush = null
          } else if (!admitted) {
            failNext.terminal = step.failAt
            const exit = yield* Effect.exit(barrier.admit(notice))
            admitted = Exit.isSuccess(exit)
          }
        }
        if (!admitted) yield* barrier.admit(notice)
        yield* Ref.set(idle, true)
        yield* queue.wake
        yield* settle
        // Nothing lost, nothing twice.
        assert.deepStrictEqual([...log].filter((id) => id !== "terminal").sort(), [...all].sort())
        assert.strictEqual(log.filter((id) => id === "terminal").length, 1)
        // Every child message accepted before the terminal comes before it.
        const terminalAt = log.indexOf("terminal")
        for (const id of before) assert.isBelow(log.indexOf(id), terminalAt, `${id} after its terminal`)
      }
    }))
})
