/**
 * Entries that reach a stage after close (C-ORD-6…9, C-ORD-34): the
 * closed-stage router with a fake parent chat and retained conversation,
 * and the shared late-ask claim record.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Logger, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { makeClosedStage, type ParentChat, RUN_ENDED_REASON, type RetainedConversation } from "../../src/workflow/ClosedStage.ts"
import { PostMortemUnavailable } from "../../src/workflow/errors.ts"
import { makeLateAskClaims } from "../../src/workflow/LateAskClaims.ts"
import { stageNotice } from "../../src/workflow/StageEntry.ts"
import { ask, label, type Log, note, PEER, recordingReplyError } from "./support.ts"

const parentChat = (log: Log, failures = 0): ParentChat => {
  let left = failures
  return {
    deliver: (entry) =>
      Effect.suspend(() => {
        if (left > 0) {
          left -= 1
          log.push(`parent-failed:${label(entry)}`)
          return Effect.fail("parent busy")
        }
        log.push(`parent:${label(entry)}`)
        return Effect.void
      })
  }
}

const conversation = (log: Log, gate?: Deferred.Deferred<void>): RetainedConversation => ({
  runTurn: (askMessage) =>
    Effect.gen(function*() {
      log.push(`turn-start:${askMessage.message.id}`)
      if (gate !== undefined) yield* Deferred.await(gate)
      log.push(`turn-end:${askMessage.message.id}`)
    })
})

/** Collects the text of every warning logged while `effect` runs. */
const warningsOf = <A, E, R>(warnings: Array<string>, effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.provide(Logger.layer([Logger.make(({ logLevel, message }) => {
    if (logLevel !== "Warn") return
    const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
    warnings.push(parts.filter((part) => typeof part === "string").join(" "))
  })])))

describe("ClosedStage", () => {
  it.effect("C-ORD-6/C-ORD-34: a notification after close goes once to the parent chat, retried every 100 ms", () =>
    Effect.gen(function*() {
      const log: Log = []
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: parentChat(log, 2),
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      })
      const completion = stageNotice({ id: "child-2", text: "child 2 completed", source: "run-1" })
      const routing = yield* Effect.forkChild(router.route(completion), { startImmediately: true })
      assert.deepStrictEqual(log, ["parent-failed:child-2"])
      yield* TestClock.adjust("99 millis")
      assert.deepStrictEqual(log, ["parent-failed:child-2"])
      yield* TestClock.adjust("1 millis")
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* Fiber.join(routing), { _tag: "Notified" })
      assert.deepStrictEqual(yield* router.route(completion), { _tag: "AlreadyNotified" })
      assert.deepStrictEqual(yield* router.route(note("m1")), { _tag: "Notified" })
      assert.deepStrictEqual(log, ["parent-failed:child-2", "parent-failed:child-2", "parent:child-2", "parent:m1"])
    }))

  it.effect("C-ORD-6: a notification whose delivery was interrupted is not marked delivered; its redelivery is tried again", () =>
    Effect.gen(function*() {
      const log: Log = []
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: parentChat(log, 1),
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      })
      const first = yield* Effect.forkChild(router.route(note("m1")), { startImmediately: true })
      yield* Fiber.interrupt(first)
      assert.deepStrictEqual(yield* router.route(note("m1")), { _tag: "Notified" })
      assert.deepStrictEqual(log, ["parent-failed:m1", "parent:m1"])
    }))

  it.effect("C-ORD-6/C-DLV-12: when the run's Scope closes, a parent-chat retry makes one last attempt and ends Abandoned with a warning, even for an uninterruptible caller", () => {
    const warnings: Array<string> = []
    return warningsOf(warnings, Effect.gen(function*() {
      const log: Log = []
      const scope = yield* Scope.make()
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: parentChat(log, Number.POSITIVE_INFINITY),
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      }).pipe(Scope.provide(scope))
      // The session runtime runs Host.deliver uninterruptibly: the router must end the wait itself.
      const routing = yield* Effect.forkChild(Effect.uninterruptible(router.route(note("m1"))), { startImmediately: true })
      yield* TestClock.adjust("250 millis")
      assert.strictEqual(log.length, 3)
      yield* Scope.close(scope, Exit.void)
      const outcome = yield* Fiber.join(routing)
      assert.strictEqual(outcome._tag, "Abandoned")
      assert.strictEqual(log.length, 4, "exactly one more attempt after the run ended")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(log.length, 4, "never retried after the run ended")
      assert.deepStrictEqual(warnings, [
        `Message m1 from ${PEER.id} to completed stage stage-a, for the parent chat, was given up: ` +
        "the stage's run has ended and the last attempt failed (parent busy)"
      ])
      // Routed after the Scope closed: one attempt at once, never a retry.
      assert.strictEqual((yield* router.route(note("m2")))._tag, "Abandoned")
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(log.slice(4), ["parent-failed:m2"])
    }))
  })

  it.effect("C-ORD-6: a defect of the parent chat is retried like a failure, not a route that dies with the notification marked delivered", () =>
    Effect.gen(function*() {
      const log: Log = []
      let defects = 1
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: {
          deliver: (entry) =>
            Effect.suspend(() => {
              if (defects-- > 0) return Effect.die(new Error("parent chat bug"))
              log.push(`parent:${label(entry)}`)
              return Effect.void
            })
        },
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      })
      const routing = yield* Effect.forkChild(router.route(note("m1")), { startImmediately: true })
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* Fiber.join(routing), { _tag: "Notified" })
      assert.deepStrictEqual(log, ["parent:m1"])
    }))

  it.effect("C-ORD-8: a post-mortem turn still waiting when the run's Scope closes is interrupted, and its asker gets the correlated replyError", () =>
    Effect.gen(function*() {
      const log: Log = []
      const scope = yield* Scope.make()
      const gate = yield* Deferred.make<void>()
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: parentChat(log),
        retained: conversation(log, gate),
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      }).pipe(Scope.provide(scope))
      const running = yield* Effect.forkChild(Effect.uninterruptible(router.route(ask("q1"))), { startImmediately: true })
      const waiting = yield* Effect.forkChild(Effect.uninterruptible(router.route(ask("q2"))), { startImmediately: true })
      yield* Effect.yieldNow
      assert.deepStrictEqual(log, ["turn-start:q1"])
      yield* Scope.close(scope, Exit.void)
      assert.deepStrictEqual(yield* Fiber.join(running), { _tag: "Rejected", reason: RUN_ENDED_REASON })
      assert.deepStrictEqual(yield* Fiber.join(waiting), { _tag: "Rejected", reason: RUN_ENDED_REASON })
      // After the Scope closed, a new late ask is answered at once without a turn.
      assert.deepStrictEqual(yield* router.route(ask("q3")), { _tag: "Rejected", reason: RUN_ENDED_REASON })
      const told = `Completed workflow stage could not process intercom ask: ${RUN_ENDED_REASON}`
      assert.deepStrictEqual(log, ["turn-start:q1", `replyError:q1:${told}`, `replyError:q2:${told}`, `replyError:q3:${told}`])
    }))

  it.effect("C-ORD-6: a parent-chat attempt that never returns times out; no second attempt starts beside it, and when the run ends the entry is given up, so route returns", () => {
    const warnings: Array<string> = []
    return warningsOf(warnings, Effect.gen(function*() {
      const log: Log = []
      const scope = yield* Scope.make()
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: { deliver: (entry) => Effect.andThen(Effect.sync(() => log.push(`parent-hangs:${label(entry)}`)), Effect.never) },
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      }).pipe(Scope.provide(scope))
      // As the stage session's hand-off runs it: uninterruptibly.
      const routing = yield* Effect.forkChild(Effect.uninterruptible(router.route(note("m1"))), { startImmediately: true })
      yield* TestClock.adjust("1 minute")
      yield* Scope.close(scope, Exit.void)
      yield* TestClock.adjust("5 seconds")
      const outcome = yield* Fiber.join(routing)
      assert.strictEqual(outcome._tag, "Abandoned")
      assert.deepStrictEqual(log, ["parent-hangs:m1"], "the hung attempt is waited for, never doubled")
      assert.deepStrictEqual(warnings, [
        `Message m1 from ${PEER.id} to completed stage stage-a, for the parent chat, was given up: ${RUN_ENDED_REASON} and the last attempt failed (the parent chat did not answer within 5000 ms)`
      ])
    }))
  })

  it.effect("C-ORD-6: a timed-out attempt whose wait the port made interruptible is cut and retried; an attempt that answers late is counted, not repeated", () =>
    Effect.gen(function*() {
      const log: Log = []
      let calls = 0
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: {
          deliver: (entry) =>
            Effect.suspend(() => {
              calls += 1
              const call = calls
              log.push(`attempt-${call}:${label(entry)}`)
              // m1: its first wait is cut. m2: its first attempt answers after 7 s, uninterruptibly.
              if (label(entry) === "m1" && call === 1) return Effect.interruptible(Effect.never)
              if (label(entry) === "m2") return Effect.andThen(Effect.sleep("7 seconds"), Effect.sync(() => log.push(`late:${label(entry)}`)))
              return Effect.sync(() => log.push(`parent:${label(entry)}`))
            })
        },
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      })
      // In 100 ms steps: each step runs the sleeps the previous one started.
      const advance = (steps: number) => Effect.repeat(TestClock.adjust("100 millis"), { times: steps - 1 })
      const first = yield* Effect.forkChild(router.route(note("m1")), { startImmediately: true })
      yield* advance(52)
      assert.deepStrictEqual(yield* Fiber.join(first), { _tag: "Notified" })
      const second = yield* Effect.forkChild(router.route(note("m2")), { startImmediately: true })
      yield* advance(100)
      assert.deepStrictEqual(yield* Fiber.join(second), { _tag: "Notified" })
      assert.deepStrictEqual(log, ["attempt-1:m1", "attempt-2:m1", "parent:m1", "attempt-3:m2", "late:m2"])
    }))

  it.effect("C-ORD-7: a late ask gets exactly one post-mortem turn, also when redelivered", () =>
    Effect.gen(function*() {
      const log: Log = []
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: parentChat(log),
        retained: conversation(log),
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      })
      assert.deepStrictEqual(yield* router.route(ask("q1")), { _tag: "PostMortem" })
      assert.deepStrictEqual(yield* router.route(ask("q1")), { _tag: "Claimed", owner: "stage-a" })
      assert.deepStrictEqual(log, ["turn-start:q1", "turn-end:q1"])
    }))

  it.effect("C-ORD-7: post-mortem turns of one stage are serialized", () =>
    Effect.gen(function*() {
      const log: Log = []
      const gate = yield* Deferred.make<void>()
      const router = yield* makeClosedStage({
        owner: "stage-a",
        parent: parentChat(log),
        retained: conversation(log, gate),
        replyError: recordingReplyError(log),
        claims: makeLateAskClaims()
      })
      const first = yield* Effect.forkChild(router.route(ask("q1")), { startImmediately: true })
      const second = yield* Effect.forkChild(router.route(ask("q2")), { startImmediately: true })
      yield* Effect.yieldNow
      assert.deepStrictEqual(log, ["turn-start:q1"])
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      assert.deepStrictEqual(log, ["turn-start:q1", "turn-end:q1", "turn-start:q2", "turn-end:q2"])
    }))

  it.effect("C-ORD-8: when the post-mortem turn cannot run, the asker gets the correlated replyError at once", () =>
    Effect.gen(function*() {
      const log: Log = []
      const claims = makeLateAskClaims()
      const without = yield* makeClosedStage({ owner: "stage-a", parent: parentChat(log), replyError: recordingReplyError(log), claims })
      const deleted = yield* makeClosedStage({
        owner: "stage-b",
        parent: parentChat(log),
        retained: { runTurn: () => Effect.fail(new PostMortemUnavailable({ reason: "the stage was deleted" })) },
        replyError: recordingReplyError(log),
        claims
      })
      assert.deepStrictEqual(yield* without.route(ask("q1")), { _tag: "Rejected", reason: "the stage kept no conversation" })
      assert.strictEqual((yield* deleted.route(ask("q2")))._tag, "Rejected")
      assert.deepStrictEqual(log, [
        "replyError:q1:Completed workflow stage could not process intercom ask: the stage kept no conversation",
        "replyError:q2:Completed workflow stage could not process intercom ask: the stage was deleted"
      ])
    }))

  it.effect("C-ORD-9: the first listener to see a late ask owns it, whichever was registered first", () =>
    Effect.gen(function*() {
      const log: Log = []
      const claims = makeLateAskClaims()
      const early = yield* makeClosedStage({
        owner: "early",
        parent: parentChat(log),
        retained: conversation(log),
        replyError: recordingReplyError(log),
        claims
      })
      const late = yield* makeClosedStage({
        owner: "late",
        parent: parentChat(log),
        retained: conversation(log),
        replyError: recordingReplyError(log),
        claims
      })
      assert.deepStrictEqual(yield* late.route(ask("q1")), { _tag: "PostMortem" })
      assert.deepStrictEqual(yield* early.route(ask("q1")), { _tag: "Claimed", owner: "late" })
      assert.deepStrictEqual(yield* early.route(ask("q2")), { _tag: "PostMortem" })
      assert.deepStrictEqual(yield* late.route(ask("q2")), { _tag: "Claimed", owner: "early" })
      assert.deepStrictEqual(log, ["turn-start:q1", "turn-end:q1", "turn-start:q2", "turn-end:q2"])
    }))

  it("C-ORD-9 (property): a claim stays with its first owner while among the last 1000 keys", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(1500), fc.constantFrom("a", "b")), { maxLength: 3000 }), (claimsMade) => {
        const claims = makeLateAskClaims()
        const first = new Map<number, string>()
        const order: Array<number> = []
        for (const [key, owner] of claimsMade) {
          const result = claims.claim(String(key), owner)
          const known = first.get(key)
          if (known === undefined) {
            // Never seen, or forgotten after 1000 newer keys: this claim wins.
            assert.strictEqual(result, "claimed")
            first.set(key, owner)
            order.push(key)
            if (order.length > 1000) first.delete(order.shift()!)
          } else {
            assert.strictEqual(result, known === owner ? "held" : "taken")
          }
        }
      })
    )
  })
})
