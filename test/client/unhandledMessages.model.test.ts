/**
 * The client's replyTo index (UnhandledMessages.ts `byReplyTo`, `isKept`) against a model
 * of the look-back as it was before the index (the oldest unhandled message, not the one the consumer is at, that
 * `take` accepts). Every way a message enters or leaves the unhandled and kept lists is exercised: offer, a new run
 * (kept ones put back first), keep and handled of the message the consumer is at, handled of any message, and
 * `takeWaiting`. A stale index entry would give back a message that left, or miss one that waits. (From review
 * revbv: it finds a missing `unindexed` or `isKept.add`; a missing `isKept.delete` in `requeueKept` it misses,
 * which test/client/unhandledMessages's hand-built case covers.)
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope, Stream } from "effect"
import fc from "fast-check"
import type { InboundMessage } from "../../src/client/events.ts"
import { makeUnhandledMessages } from "../../src/client/UnhandledMessages.ts"

type Op =
  | { readonly _tag: "offer"; readonly replyTo: number | undefined }
  | { readonly _tag: "run" }
  | { readonly _tag: "next" }
  | { readonly _tag: "keepAt" }
  | { readonly _tag: "handledAt" }
  | { readonly _tag: "handledAny"; readonly pick: number }
  | { readonly _tag: "take"; readonly replyTo: number; readonly odd: boolean }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ _tag: fc.constant("offer" as const), replyTo: fc.option(fc.integer({ min: 0, max: 1 }), { nil: undefined }) }),
  fc.constant({ _tag: "run" as const }),
  fc.constant({ _tag: "next" as const }),
  fc.constant({ _tag: "next" as const }),
  fc.constant({ _tag: "keepAt" as const }),
  fc.constant({ _tag: "handledAt" as const }),
  fc.record({ _tag: fc.constant("handledAny" as const), pick: fc.nat() }),
  fc.record({ _tag: fc.constant("take" as const), replyTo: fc.integer({ min: 0, max: 1 }), odd: fc.boolean() })
)

const from = { id: "peer", name: "peer", cwd: "/", model: "m", pid: 1, startedAt: 0, lastActivity: 0 }

describe("UnhandledMessages: the replyTo index answers as a scan of the lists would", () => {
  it("takeWaiting gives what a scan of the unhandled messages gives, over any sequence of list changes", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const buffer = Effect.runSync(makeUnhandledMessages)
        let unhandled: Array<InboundMessage> = []
        let kept: Array<InboundMessage> = []
        let atConsumer: InboundMessage | undefined
        let n = 0
        let run: { readonly scope: Scope.Closeable; readonly pull: Effect.Effect<ReadonlyArray<InboundMessage>, unknown> } | undefined
        const accepts = (replyTo: string, odd: boolean) => (m: InboundMessage) =>
          m.message.replyTo === replyTo && (Number(m.message.id.slice(1)) % 2 === 1) === odd
        for (const o of ops) {
          switch (o._tag) {
            case "offer": {
              const m: InboundMessage = {
                from,
                message: { id: `m${n++}`, timestamp: 0, content: { text: "x" }, ...(o.replyTo === undefined ? {} : { replyTo: `q${o.replyTo}` }) }
              }
              buffer.offer(m)
              unhandled.push(m)
              break
            }
            case "run": {
              // A new run of the stream (the old one ends where it is): kept ones first, the consumer at the head.
              if (unhandled.length + kept.length === 0) break
              if (run !== undefined) Effect.runSync(Scope.close(run.scope, Exit.void))
              const scope = Effect.runSync(Scope.make())
              const pull = Effect.runSync(Scope.provide(scope)(Stream.toPull(buffer.stream)))
              run = { scope, pull }
              unhandled = [...kept, ...unhandled]
              kept = []
              atConsumer = unhandled[0]
              assert.strictEqual(Effect.runSync(pull)[0], atConsumer)
              break
            }
            case "next": {
              // The same run asks for the next message: the one it was at leaves (unless kept or gone already).
              if (run === undefined) break
              const rest = unhandled.filter((m) => m !== atConsumer)
              if (rest.length === 0) break
              const got = Effect.runSync(run.pull)[0]
              unhandled = rest
              atConsumer = unhandled[0]
              assert.strictEqual(got, atConsumer)
              break
            }
            case "keepAt": {
              if (atConsumer === undefined) break
              buffer.keep(atConsumer)
              const at = unhandled.indexOf(atConsumer)
              if (at >= 0) {
                unhandled.splice(at, 1)
                kept.push(atConsumer)
              }
              break
            }
            case "handledAt": {
              if (atConsumer === undefined) break
              buffer.handled(atConsumer)
              unhandled = unhandled.filter((m) => m !== atConsumer)
              kept = kept.filter((m) => m !== atConsumer)
              break
            }
            case "handledAny": {
              const all = [...unhandled, ...kept]
              if (all.length === 0) break
              const m = all[o.pick % all.length]
              if (m === undefined) break
              buffer.handled(m)
              unhandled = unhandled.filter((x) => x !== m)
              kept = kept.filter((x) => x !== m)
              break
            }
            case "take": {
              const replyTo = `q${o.replyTo}`
              const test = accepts(replyTo, o.odd)
              const expected = unhandled.find((m) => m !== atConsumer && test(m))
              const got = buffer.takeWaiting(replyTo, test)
              assert.strictEqual(got?.message.id, expected?.message.id)
              if (expected !== undefined) unhandled = unhandled.filter((m) => m !== expected)
              break
            }
          }
          assert.strictEqual(buffer.size(), unhandled.length + kept.length)
        }
        if (run !== undefined) Effect.runSync(Scope.close(run.scope, Exit.void))
        // Drain: every question's waiting replies, oldest first, and nothing that left.
        for (const q of [0, 1]) {
          for (;;) {
            const test = (m: InboundMessage) => m.message.replyTo === `q${q}`
            const expected = unhandled.find((m) => m !== atConsumer && test(m))
            const got = buffer.takeWaiting(`q${q}`, test)
            assert.strictEqual(got?.message.id, expected?.message.id)
            if (expected === undefined) break
            unhandled = unhandled.filter((m) => m !== expected)
          }
        }
      }),
      { numRuns: 2000 }
    )
  })
})
