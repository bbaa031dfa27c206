/** A parent's inbound path: waiter bypass, idle delivery, queue-first ownership around the handshake (C-ORD-18, C-ORD-32, C-DLV-10). */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Ref } from "effect"
import { TestClock } from "effect/testing"
import { makeDetachHandshake } from "../../src/workflow/DetachHandshake.ts"
import { makeDetachResponder } from "../../src/workflow/DetachResponder.ts"
import type { DetachAck, DetachRequest } from "../../src/workflow/DetachRoute.ts"
import { makeIdleQueue } from "../../src/workflow/IdleQueue.ts"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"
import { DispatchError } from "../../src/workflow/orderingErrors.ts"
import { makeParentInbox } from "../../src/workflow/ParentInbox.ts"
import { makeTerminalBarrier } from "../../src/workflow/TerminalBarrier.ts"
import { entry, ids, settle } from "./orderingSupport.ts"

const setup = (
  options: {
    readonly holdAcks?: boolean
    readonly childAnswers?: boolean
    /** Every batch the queue hands over fails with a `DispatchError` that says it delivered this many (after taking them). */
    readonly startFails?: number
  } = {}
) =>
  Effect.gen(function*() {
    const idle = yield* Ref.make(false)
    const flushed: Array<ReadonlyArray<string>> = []
    const surfaced: Array<string> = []
    const terminals: Array<ReadonlyArray<string>> = []
    const queuedAtProbe: Array<ReadonlyArray<string>> = []
    const heldAcks: Array<DetachAck> = []
    const waiterReplies: Array<string> = []
    const queue = yield* makeIdleQueue<string>({
      isIdle: Ref.get(idle),
      deliverBatch: (batch) => {
        const fails = options.startFails
        if (fails === undefined) return Effect.sync(() => void flushed.push(ids(batch)))
        return Effect.suspend(() => {
          if (fails > 0) flushed.push(ids(batch).slice(0, fails))
          return Effect.fail(new DispatchError({ delivered: fails, reason: "the turn did not start" }))
        })
      }
    })
    const forward: { onRequest: (request: DetachRequest) => Effect.Effect<void> } = {
      onRequest: () => Effect.void
    }
    const handshake = yield* makeDetachHandshake({
      foreground: Effect.succeed({ targets: ["child", "child-id"] }),
      send: (request) =>
        Effect.gen(function*() {
          if (request.phase === "probe") queuedAtProbe.push(ids(yield* queue.entries))
          if (options.childAnswers !== false) yield* forward.onRequest(request)
        })
    })
    const child = yield* makeDetachResponder({
      targets: ["child", "child-id"],
      release: Effect.void,
      reply: (ack) => options.holdAcks === true ? Effect.sync(() => void heldAcks.push(ack)) : handshake.acknowledge(ack)
    })
    forward.onRequest = child.onRequest
    yield* handshake.renew("g1")
    const barrier = yield* makeTerminalBarrier<string, string>(queue, {
      dispatch: (batch) => Effect.sync(() => void terminals.push([...ids(batch.prelude), "terminal"]))
    })
    const inbox = makeParentInbox<string>({
      routeReply: (e: InboundEntry<string>) =>
        Effect.sync(() => {
          if (e.replyTo !== "q1") return false
          waiterReplies.push(e.messageId)
          return true
        }),
      isIdle: Ref.get(idle),
      surface: (e) => Effect.sync(() => void surfaced.push(e.messageId))
    }, queue, handshake)
    return { barrier, flushed, handshake, heldAcks, idle, inbox, queue, queuedAtProbe, surfaced, terminals, waiterReplies }
  })

const fromChild = (id: string, options: Partial<InboundEntry<string>> = {}) =>
  entry(id, "child-id", { senderName: "child", timestamp: 10, source: { subagentRunId: "run-1" }, ...options })

describe("ParentInbox", () => {
  it.effect("a correlated reply resolves the waiter before the queue, the handshake or a barrier (C-ORD-32)", () =>
    Effect.gen(function*() {
      const { inbox, queue, queuedAtProbe, waiterReplies } = yield* setup()
      yield* queue.enqueue(entry("older", "peer"))
      const outcome = yield* inbox.receive(fromChild("answer", { replyTo: "q1" }))
      assert.deepStrictEqual(outcome, { _tag: "reply" })
      assert.deepStrictEqual(waiterReplies, ["answer"])
      assert.deepStrictEqual(ids(yield* queue.entries), ["older"])
      assert.deepStrictEqual(queuedAtProbe, [])
    }))

  it.effect("an idle parent starts a turn with the message at once (C-DLV-10)", () =>
    Effect.gen(function*() {
      const { flushed, idle, inbox, queue } = yield* setup()
      yield* Ref.set(idle, true)
      assert.deepStrictEqual(yield* inbox.receive(entry("m1", "peer")), { _tag: "delivered" })
      assert.deepStrictEqual(flushed, [["m1"]])
      assert.deepStrictEqual(yield* queue.entries, [])
    }))

  it.effect("an idle parent gets a new message behind what still waits in its idle queue, in one batch (C-DLV-10)", () =>
    Effect.gen(function*() {
      const { flushed, idle, inbox, queue } = yield* setup({ childAnswers: false })
      // m1 waited while the parent was busy; the parent goes idle and m2 comes before any flush ran.
      yield* queue.enqueue(entry("m1", "peer"))
      yield* Ref.set(idle, true)
      assert.deepStrictEqual(yield* inbox.receive(entry("m2", "peer")), { _tag: "delivered" })
      assert.deepStrictEqual(flushed, [["m1", "m2"]])
      assert.deepStrictEqual(yield* queue.entries, [])
    }))

  it.effect("an idle parent whose turn start fails after taking the message does not queue it as well; one that took nothing does", () =>
    Effect.gen(function*() {
      const took = yield* setup({ startFails: 1 })
      yield* Ref.set(took.idle, true)
      assert.deepStrictEqual(yield* took.inbox.receive(entry("m1", "peer")), { _tag: "delivered" })
      assert.deepStrictEqual(took.flushed, [["m1"]])
      assert.deepStrictEqual(yield* took.queue.entries, [])

      const tookNone = yield* setup({ startFails: 0 })
      yield* Ref.set(tookNone.idle, true)
      const outcome = yield* tookNone.inbox.receive(entry("m2", "peer"))
      assert.strictEqual(outcome._tag, "queued")
      assert.deepStrictEqual(ids(yield* tookNone.queue.entries), ["m2"])
    }))

  it.effect("a busy parent queues the message before probing, and surfaces it once the child committed (C-ORD-18, C-ORD-13)", () =>
    Effect.gen(function*() {
      const { inbox, queue, queuedAtProbe, surfaced } = yield* setup()
      assert.deepStrictEqual(yield* inbox.receive(fromChild("m1")), { _tag: "surfaced" })
      assert.deepStrictEqual(queuedAtProbe, [["m1"]])
      assert.deepStrictEqual(surfaced, ["m1"])
      assert.deepStrictEqual(yield* queue.entries, [])
    }))

  it.effect("a message a terminal barrier claimed during the handshake is not surfaced again (C-ORD-18)", () =>
    Effect.gen(function*() {
      const { barrier, handshake, heldAcks, inbox, surfaced, terminals } = yield* setup({ holdAcks: true })
      const receiving = yield* Effect.forkChild(inbox.receive(fromChild("m1")))
      yield* settle
      // The child's terminal arrives while the probe's acknowledgement is still on its way.
      yield* barrier.admit({
        owner: "parent",
        runId: "run-1",
        requestId: "r1",
        source: "child",
        terminalAt: 20,
        status: "completed",
        child: { ids: ["child-id"], names: ["child"] },
        notice: "done"
      })
      for (const ack of heldAcks.splice(0)) yield* handshake.acknowledge(ack)
      yield* settle
      for (const ack of heldAcks.splice(0)) yield* handshake.acknowledge(ack)
      assert.deepStrictEqual(yield* Fiber.join(receiving), { _tag: "claimed" })
      assert.deepStrictEqual(terminals, [["m1", "terminal"]])
      assert.deepStrictEqual(surfaced, [])
    }))

  it.effect("an unclaimed message stays queued and reaches the parent at the next flush: never dropped (C-ORD-14)", () =>
    Effect.gen(function*() {
      const { flushed, idle, inbox, queue } = yield* setup({ childAnswers: false })
      const receiving = yield* Effect.forkChild(inbox.receive(fromChild("m1")))
      yield* settle
      yield* TestClock.adjust("50 millis")
      assert.deepStrictEqual(yield* Fiber.join(receiving), { _tag: "queued", handoff: "unclaimed" })
      assert.deepStrictEqual(ids(yield* queue.entries), ["m1"])
      yield* Ref.set(idle, true)
      yield* queue.wake
      yield* settle
      assert.deepStrictEqual(flushed, [["m1"]])
    }))
})
