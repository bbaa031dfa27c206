/**
 * Both sides of the detach handshake wired in process (`makeForegroundDetach`),
 * and the two places that use it: a stage's `ForegroundHandoff` and the
 * assembled parent session (`makeParentSession`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Logger, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { InboundMessage } from "../../src/client/events.ts"
import { makeBarrierRegistry } from "../../src/workflow/BarrierRegistry.ts"
import { DispatchError } from "../../src/workflow/orderingErrors.ts"
import { makeForegroundDetach } from "../../src/workflow/ForegroundDetach.ts"
import { inboundEntry } from "../../src/workflow/InboundAdapter.ts"
import { makeParentSession, type ParentEntry } from "../../src/workflow/ParentSession.ts"
import { makeStageAdmission } from "../../src/workflow/StageAdmission.ts"
import { stageNotice } from "../../src/workflow/StageEntry.ts"
import { settle } from "./orderingSupport.ts"
import { CHILD, fakeSession, inbound, info, type Log, note, PEER, recordingReplyError } from "./support.ts"

const childTargets = [CHILD.id, CHILD.name ?? CHILD.id]

describe("makeForegroundDetach", () => {
  it.effect("C-ORD-12/C-ORD-13: a message from the attached foreground child is delivered once the child released; the handshake surfaces nothing itself", () =>
    Effect.gen(function*() {
      const log: Log = []
      const detach = yield* makeForegroundDetach({ generation: "g1" })
      const scope = yield* Scope.make()
      const responder = yield* detach.attach({ targets: childTargets, release: Effect.sync(() => void log.push("release")) }).pipe(
        Scope.provide(scope)
      )
      // No clock advance: the in-process child answers both phases at once.
      const disposition = yield* detach.handoff(inboundEntry(inbound("m1", {}, CHILD)))
      assert.strictEqual(disposition, "delivered")
      assert.deepStrictEqual(log, ["release"])
      assert.isTrue(yield* responder.detached)
    }))

  it.effect("C-ORD-19: without an attached child, or from another sender, the answer is unclaimed at once", () =>
    Effect.gen(function*() {
      const log: Log = []
      const detach = yield* makeForegroundDetach({ generation: "g1" })
      assert.strictEqual(yield* detach.handoff(inboundEntry(inbound("m1", {}, CHILD))), "unclaimed")
      const scope = yield* Scope.make()
      yield* detach.attach({ targets: childTargets, release: Effect.sync(() => void log.push("release")) }).pipe(Scope.provide(scope))
      assert.strictEqual(yield* detach.handoff(inboundEntry(inbound("m2", {}, PEER))), "unclaimed")
      // The foreground call ended: its child is no longer asked.
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* detach.handoff(inboundEntry(inbound("m3", {}, CHILD))), "unclaimed")
      assert.deepStrictEqual(log, [])
    }))

  it.effect("a child that detached is no longer the foreground owner: its next message is unclaimed without waiting for a timeout", () =>
    Effect.gen(function*() {
      const detach = yield* makeForegroundDetach({ generation: "g1" })
      const scope = yield* Scope.make()
      yield* detach.attach({ targets: childTargets, release: Effect.void }).pipe(Scope.provide(scope))
      assert.strictEqual(yield* detach.handoff(inboundEntry(inbound("m1", {}, CHILD))), "delivered")
      const next = yield* Effect.forkChild(detach.handoff(inboundEntry(inbound("m2", {}, CHILD))))
      yield* settle
      // Without leaving the table, the detached responder stays silent and this waits out the 50 ms probe.
      assert.deepStrictEqual(next.pollUnsafe(), Exit.succeed("unclaimed"))
    }))

  it.effect("C-ORD-14: a child that does not answer (unavailable) costs one 50 ms phase and gives unclaimed", () =>
    Effect.gen(function*() {
      const detach = yield* makeForegroundDetach({ generation: "g1" })
      const scope = yield* Scope.make()
      const responder = yield* detach.attach({ targets: childTargets, release: Effect.void }).pipe(Scope.provide(scope))
      yield* responder.setUnavailable(true)
      const fiber = yield* Effect.forkChild(detach.handoff(inboundEntry(inbound("m1", {}, CHILD))))
      yield* settle
      yield* TestClock.adjust("49 millis")
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      assert.strictEqual(yield* Fiber.join(fiber), "unclaimed")
    }))

  it.effect("C-ORD-3/C-ORD-13: as a stage's ForegroundHandoff, a busy stage inserts its foreground child's message exactly once, after the child released", () =>
    Effect.gen(function*() {
      const log: Log = []
      const detach = yield* makeForegroundDetach({ generation: "g1" })
      const attachScope = yield* Scope.make()
      yield* detach.attach({ targets: childTargets, release: Effect.sync(() => void log.push("release")) }).pipe(
        Scope.provide(attachScope)
      )
      const { session } = fakeSession(log, { busy: true })
      const admission = yield* makeStageAdmission({ session, handoff: detach.stageHandoff, replyError: recordingReplyError(log) })
      const admitted = yield* admission.admit(note("m1", CHILD))
      assert.deepStrictEqual(admitted, { _tag: "Admitted", via: "delivered" })
      // A notice is never offered to a child: unclaimed, inserted.
      const notice = yield* admission.admit(stageNotice({ id: "bash-1", text: "done" }))
      assert.deepStrictEqual(notice, { _tag: "Admitted", via: "unclaimed" })
      assert.deepStrictEqual(log, ["release", "insert:m1", "insert:bash-1"])
    }))
})

describe("makeParentSession", () => {
  const BACKGROUND = info("bg-0000-3333", "subagent-worker-run1-2")

  const parent = (busySteer: "steer" | "queue" = "steer") =>
    Effect.gen(function*() {
      const log: Log = []
      const state = { idle: false }
      const session = yield* makeParentSession<string>({
        isIdle: Effect.sync(() => state.idle),
        deliverBatch: (batch: ReadonlyArray<ParentEntry>) =>
          Effect.sync(() => void log.push(`batch:${batch.map((e) => e.messageId).join(",")}`)),
        surface: (entry) => Effect.sync(() => void log.push(`steer:${entry.messageId}`)),
        passive: (entry) => Effect.sync(() => void log.push(`passive:${entry.messageId}`)),
        dispatchTerminal: (batch) =>
          Effect.sync(() => void log.push(`terminal:${[...batch.prelude.map((e) => e.messageId), batch.terminal.notice].join(",")}`))
      }, { generation: "g1", busySteer })
      return { log, state, session }
    })

  const from = (id: string, sender: typeof CHILD, timestamp = 0): InboundMessage => inbound(id, { timestamp }, sender)

  it.effect("busySteer queue (Atomic): the foreground child's message steers the busy parent after the detach; a background child's messages go with its terminal; the rest flush as one batch when idle", () =>
    Effect.gen(function*() {
      const { log, session, state } = yield* parent("queue")
      const callScope = yield* Scope.make()
      yield* session.foreground.attach({ targets: childTargets, release: Effect.sync(() => void log.push("release")) }).pipe(
        Scope.provide(callScope)
      )
      assert.deepStrictEqual(yield* session.receive(from("bg-1", BACKGROUND, 1)), { _tag: "queued", handoff: "unclaimed" })
      assert.deepStrictEqual(yield* session.receive(from("peer-1", PEER, 2)), { _tag: "queued", handoff: "unclaimed" })
      assert.deepStrictEqual(yield* session.receive(from("fg-1", CHILD, 3)), { _tag: "surfaced" })
      assert.deepStrictEqual(
        yield* session.terminal({
          owner: "parent",
          runId: "run1",
          source: BACKGROUND.name ?? "",
          terminalAt: 5,
          status: "completed",
          child: { ids: [BACKGROUND.id], names: [] },
          notice: "bg-done"
        }),
        { _tag: "Admitted", prelude: 1 }
      )
      state.idle = true
      yield* session.idle
      yield* settle
      assert.deepStrictEqual(log, ["release", "steer:fg-1", "terminal:bg-1,bg-done", "batch:peer-1"])
    }))

  it.effect("C-DLV-1: by default a busy parent is steered by a steer message (once the queue owned it), keeps a queue message until idle, and only records a passive one", () =>
    Effect.gen(function*() {
      const { log, session, state } = yield* parent()
      const steer = from("s1", PEER)
      const queued: InboundMessage = { ...from("q1", PEER), delivery: { delivery: "queue" } }
      const quiet: InboundMessage = { ...from("p1", PEER), delivery: { delivery: "passive" } }
      assert.deepStrictEqual(yield* session.receive(steer), { _tag: "surfaced" })
      assert.deepStrictEqual(yield* session.receive(queued), { _tag: "queued", handoff: "unclaimed" })
      assert.deepStrictEqual(yield* session.receive(quiet), { _tag: "passive" })
      // The runtime's intent decides for deliver: passive (inboundTrigger said no) records only.
      const handed = from("p2", PEER)
      yield* session.deliver({ intent: "passive", from: handed.from, message: handed.message, text: "p2", expectsReply: false, delivery: "steer" })
      assert.deepStrictEqual(log, ["steer:s1", "passive:p1", "passive:p2"])
      state.idle = true
      yield* session.idle
      yield* settle
      assert.deepStrictEqual(log, ["steer:s1", "passive:p1", "passive:p2", "batch:q1"])
    }))

  it.effect("C-ORD-18/C-ORD-25: a steer message from a child whose handshake is still waiting is owned by the queue, so its terminal takes it along and it is not steered twice", () =>
    Effect.gen(function*() {
      const { log, session } = yield* parent()
      const callScope = yield* Scope.make()
      const responder = yield* session.foreground.attach({ targets: childTargets, release: Effect.void }).pipe(Scope.provide(callScope))
      yield* responder.setUnavailable(true)
      const pending = yield* Effect.forkChild(session.receive(from("fg-1", CHILD, 1)))
      yield* settle
      assert.deepStrictEqual(log, [])
      yield* session.terminal({
        owner: "parent",
        runId: "run1",
        source: CHILD.name ?? "",
        terminalAt: 5,
        status: "completed",
        child: { ids: [CHILD.id], names: [] },
        notice: "fg-done"
      })
      yield* TestClock.adjust("50 millis")
      assert.deepStrictEqual(yield* Fiber.join(pending), { _tag: "claimed" })
      assert.deepStrictEqual(log, ["terminal:fg-1,fg-done"])
    }))

  it.effect("deliver is the session runtime's Host.deliver: an idle parent starts a turn at once, and deliver does not fail while the Scope is open", () =>
    Effect.gen(function*() {
      const { log, session, state } = yield* parent()
      state.idle = true
      const message = from("m1", PEER)
      yield* session.deliver({ intent: "trigger", from: message.from, message: message.message, text: "m1", expectsReply: false, delivery: "steer" })
      assert.deepStrictEqual(log, ["batch:m1"])
    }))

  it.effect("after the parent session's Scope closed, deliver and receive fail with ParentSessionClosed instead of leaving the message in a dead idle queue", () =>
    Effect.gen(function*() {
      const log: Log = []
      const scope = yield* Scope.make()
      const state = { idle: false }
      const session = yield* makeParentSession<string>({
        isIdle: Effect.sync(() => state.idle),
        deliverBatch: (batch) => Effect.sync(() => void log.push(`batch:${batch.map((e) => e.messageId).join(",")}`)),
        surface: () => Effect.void,
        passive: () => Effect.void,
        dispatchTerminal: () => Effect.void
      }, { generation: "g1" }).pipe(Scope.provide(scope))
      yield* Scope.close(scope, Exit.void)
      const message = from("late", PEER)
      const refused = yield* Effect.flip(
        session.deliver({ intent: "trigger", from: message.from, message: message.message, text: "late", expectsReply: false, delivery: "queue" })
      )
      assert.strictEqual(refused._tag, "ParentSessionClosed")
      assert.strictEqual(
        refused.message,
        "The parent session's generation g1 has closed, so it did not take the message; the session's next generation gets it"
      )
      assert.strictEqual((yield* Effect.flip(session.receive(from("late-2", PEER))))._tag, "ParentSessionClosed")
      // The agent goes idle: nothing flushes a closed session's queue, so nothing may wait there.
      state.idle = true
      yield* TestClock.adjust("5 seconds")
      assert.deepStrictEqual(log, [])
      assert.deepStrictEqual(yield* session.idleQueue.entries, [], "nothing was left in the dead queue")
    }))

  it.effect("a message whose hand-off was under way when the parent session's Scope closed, and that went back to the idle queue, fails with ParentSessionClosed", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const surfacing = yield* Deferred.make<void>()
      const refuse = yield* Deferred.make<void>()
      const session = yield* makeParentSession<string>({
        isIdle: Effect.succeed(false),
        deliverBatch: () => Effect.void,
        surface: () =>
          Effect.andThen(
            Effect.andThen(Deferred.succeed(surfacing, undefined), Deferred.await(refuse)),
            Effect.fail(new DispatchError({ delivered: 0, reason: "the turn is ending" }))
          ),
        passive: () => Effect.void,
        dispatchTerminal: () => Effect.void
      }, { generation: "g1" }).pipe(Scope.provide(scope))
      // The runtime hands a message over uninterruptibly; a busy parent is steered by it.
      const handing = yield* Effect.forkChild(Effect.uninterruptible(session.receive(from("m1", PEER))), { startImmediately: true })
      yield* Deferred.await(surfacing)
      yield* Scope.close(scope, Exit.void)
      yield* Deferred.succeed(refuse, undefined)
      assert.strictEqual((yield* Effect.flip(Fiber.join(handing)))._tag, "ParentSessionClosed")
      assert.deepStrictEqual(yield* session.idleQueue.entries, [])
    }))

  it.effect("a parent session whose Scope closes with messages in its idle queue warns once how many its agent never got", () => {
    const warnings: Array<string> = []
    const capture = Logger.make(({ logLevel, message }) => {
      if (logLevel !== "Warn") return
      const parts: ReadonlyArray<unknown> = Array.isArray(message) ? message : [message]
      warnings.push(parts.filter((part) => typeof part === "string").join(" "))
    })
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const idle = yield* Scope.make()
      const busy = yield* makeParentSession<string>({
        isIdle: Effect.succeed(false),
        deliverBatch: () => Effect.void,
        surface: () => Effect.void,
        passive: () => Effect.void,
        dispatchTerminal: () => Effect.void
      }, { generation: "g1", busySteer: "queue" }).pipe(Scope.provide(scope))
      yield* makeParentSession<string>({
        isIdle: Effect.succeed(false),
        deliverBatch: () => Effect.void,
        surface: () => Effect.void,
        passive: () => Effect.void,
        dispatchTerminal: () => Effect.void
      }, { generation: "g2" }).pipe(Scope.provide(idle))
      yield* busy.receive(from("m1", PEER, 1))
      yield* busy.receive(from("m2", PEER, 2))
      yield* Scope.close(scope, Exit.void)
      yield* Scope.close(idle, Exit.void)
      assert.deepStrictEqual(warnings, [
        "Parent session generation g1 closed with 2 message(s) in its idle queue that its agent never got (m1, m2): " +
        "a parent journal (ParentJournal) hands them to the session's next generation; without one they are lost"
      ])
    }).pipe(Effect.provide(Logger.layer([capture])))
  })

  it.effect("C-ORD-33: with the process's registry, a companion's terminal reaches the parent's barrier while its Scope lives, and none after", () =>
    Effect.gen(function*() {
      const log: Log = []
      const registry = yield* makeBarrierRegistry<string>()
      const scope = yield* Scope.make()
      const session = yield* makeParentSession<string>({
        isIdle: Effect.succeed(false),
        deliverBatch: () => Effect.void,
        surface: () => Effect.void,
        passive: () => Effect.void,
        dispatchTerminal: (batch) => Effect.sync(() => void log.push(`terminal:${batch.terminal.notice}`))
      }, { generation: "g1", registry, busySteer: "queue" }).pipe(Scope.provide(scope))
      yield* session.receive(from("bg-1", BACKGROUND, 1))
      const notice = {
        owner: "parent",
        runId: "run1",
        source: BACKGROUND.name ?? "",
        terminalAt: 5,
        status: "completed" as const,
        child: { ids: [BACKGROUND.id], names: [] },
        notice: "bg-done"
      }
      assert.deepStrictEqual(yield* registry.admit(notice), { _tag: "Admitted", prelude: 1 })
      assert.deepStrictEqual(log, ["terminal:bg-done"])
      yield* Scope.close(scope, Exit.void)
      const after = yield* Effect.flip(registry.admit({ ...notice, requestId: "completion-2" }))
      assert.strictEqual(after._tag, "NoTerminalBarrier")
    }))

  it.effect("C-DLV-10: a parent that just went idle gets a new message after the ones its idle queue still holds, in one batch", () =>
    Effect.gen(function*() {
      const { log, session, state } = yield* parent("queue")
      // Busy: m1 (a queue message) waits in the idle queue.
      yield* session.receive(from("m1", PEER, 1))
      // The turn ends and the engine says so; the same sender's m2 comes before the flusher has run.
      state.idle = true
      yield* session.idle
      yield* session.receive(from("m2", PEER, 2))
      yield* settle
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(log, ["batch:m1,m2"])
    }))

  it.effect("a refused immediate delivery leaves the message in the idle queue for the next flush (nothing is lost)", () =>
    Effect.gen(function*() {
      const log: Log = []
      let refuse = true
      const session = yield* makeParentSession<string>({
        isIdle: Effect.succeed(true),
        deliverBatch: (batch) =>
          refuse
            ? Effect.fail(new DispatchError({ delivered: 0, reason: "agent is starting" }))
            : Effect.sync(() => void log.push(`batch:${batch.map((e) => e.messageId).join(",")}`)),
        surface: () => Effect.void,
        passive: () => Effect.void,
        dispatchTerminal: () => Effect.void
      }, { generation: "g1" })
      assert.deepStrictEqual(yield* session.receive(from("m1", PEER)), { _tag: "queued", handoff: "unclaimed" })
      refuse = false
      yield* settle
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(log, ["batch:m1"])
    }))
})
