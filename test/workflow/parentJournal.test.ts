/**
 * `ParentJournal`: a workflow parent's accepted and consumed messages in a
 * file. A restarted parent process gets back, once, what its idle queue held
 * when the old one ended (C-DLV-14 for a parent), and its runtime remembers
 * what the agent already took (known issue 6). The file's rules, on a real
 * temp dir; the same on the in-memory bus is parentJournal.bus.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber } from "effect"
import fc from "fast-check"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { InboundMessage } from "../../src/client/events.ts"
import { formatSupervisorMessage } from "../../src/session/supervisorMessages.ts"
import * as ParentJournal from "../../src/workflow/ParentJournal.ts"
import { makeParentSession, type ParentAgent } from "../../src/workflow/ParentSession.ts"
import {
  afterCrash,
  entryOf,
  ids,
  message,
  openedJournal,
  record,
  recordingAgent,
  tempDir,
  textOf
} from "./parentJournalSupport.ts"
import { PEER } from "./support.ts"

describe("ParentJournal, the file", () => {
  it.effect("a new journal restores, once, what the last one accepted and no port took; what a port took is handled", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "parent", "main.jsonl")
      const first = yield* openedJournal(file)
      for (const id of ["m1", "m2", "m3"]) yield* first.journal.checkpoint(record(id))
      const { agent, took } = recordingAgent()
      yield* first.agent(agent).deliverBatch([entryOf("m1")])
      assert.deepStrictEqual(took, ["m1"])
      // A message accepted in this process is in its parent's hands: never "undelivered" here.
      assert.deepStrictEqual(ids(yield* first.journal.undelivered), [])
      // The process ends (its journal's Scope closes, and the lock goes); the next one opens the same file.
      yield* first.end

      const second = yield* ParentJournal.make(file)
      assert.strictEqual(yield* second.pending, 2)
      assert.deepStrictEqual(ids(yield* second.journal.undelivered), ["m2", "m3"])
      // Asked again (the runtime does, once the agent's run settles): they are this journal's parent's now.
      assert.deepStrictEqual(ids(yield* second.journal.undelivered), [])
      const handled = yield* (second.journal.handled ?? Effect.succeed([]))
      assert.deepStrictEqual(handled.map((h) => [h.fromId, h.messageId]), [[PEER.id, "m1"]])
    }))

  it.effect("a port that fails marks only what it delivered; every port that takes a message marks it", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* ParentJournal.make(file)
      for (const id of ["a", "b", "s", "p", "t", "r", "n"]) yield* journal.journal.checkpoint(record(id))
      const partial = recordingAgent({ takes: 1 })
      const failed = yield* Effect.exit(journal.agent(partial.agent).deliverBatch([entryOf("a"), entryOf("b")]))
      assert.isTrue(Exit.isFailure(failed))
      const { agent } = recordingAgent({ routes: true })
      const wrapped = journal.agent(agent)
      yield* wrapped.surface(entryOf("s"))
      yield* wrapped.passive(entryOf("p"))
      yield* wrapped.dispatchTerminal({
        prelude: [entryOf("t")],
        terminal: {
          owner: "planner",
          runId: "run-1",
          source: "worker",
          terminalAt: 2_000,
          status: "completed",
          child: { ids: [PEER.id], names: ["peer"] },
          notice: "done"
        }
      })
      assert.isTrue(yield* (wrapped.routeReply ?? (() => Effect.succeed(false)))(entryOf("r")))
      const unrouted = recordingAgent({ routes: false })
      assert.isFalse(yield* (journal.agent(unrouted.agent).routeReply ?? (() => Effect.succeed(true)))(entryOf("n")))

      const after = yield* afterCrash(file)
      // "b" was never delivered and "n" was not routed: both still to hand over.
      assert.deepStrictEqual(ids(yield* after.journal.undelivered), ["b", "n"])
    }))

  it.effect("a restored record keeps its sender's delivery mode and a child's supervisor channel", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* ParentJournal.make(file)
      yield* journal.journal.checkpoint({ ...record("progress"), channel: "supervisor", delivery: "queue", askTimeoutMs: 5_000 })
      const after = yield* afterCrash(file)
      const [restored] = yield* after.journal.undelivered
      assert.strictEqual(restored?.channel, "supervisor")
      assert.strictEqual(restored?.delivery, "queue")
      assert.strictEqual(restored?.askTimeoutMs, 5_000)
    }))

  it.effect("a port that took its entries before an interruption landed still marks them", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* ParentJournal.make(file)
      yield* journal.journal.checkpoint(record("m1"))
      const gate = yield* Deferred.make<void>()
      const took: Array<string> = []
      // An engine's port that must not be cut in half: the interruption waits for it, then lands.
      const agent: ParentAgent<string> = {
        ...recordingAgent().agent,
        deliverBatch: (batch) =>
          Effect.uninterruptible(Effect.andThen(Deferred.await(gate), Effect.sync(() => void took.push(...batch.map(textOf)))))
      }
      const delivering = yield* Effect.forkChild(journal.agent(agent).deliverBatch([entryOf("m1")]), { startImmediately: true })
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(delivering), { startImmediately: true })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      assert.deepStrictEqual(took, ["m1"])
      const after = yield* afterCrash(file)
      assert.deepStrictEqual(ids(yield* after.journal.undelivered), [])
    }))

  it.effect("a message accepted again after it was taken is still pending after a rewrite", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* ParentJournal.make(file, { capacity: 2 })
      const wrapped = journal.agent(recordingAgent().agent)
      for (const id of ["a", "b", "c"]) yield* journal.journal.checkpoint(record(id))
      yield* wrapped.passive(entryOf("a"))
      yield* wrapped.passive(entryOf("b"))
      // A copy of b the de-duplication window no longer held, accepted again; c's mark then reaches the
      // rewrite's bound (7 lines against 2 × (1 pending + 2)), and the rewrite keeps b's first mark.
      yield* journal.journal.checkpoint(record("b"))
      yield* wrapped.passive(entryOf("c"))
      assert.isAtMost(fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").length, 3)
      assert.deepStrictEqual(ids(yield* (yield* afterCrash(file, { capacity: 2 })).journal.undelivered), ["b"])
    }))

  it.effect("a restored record a port took before the runtime asked is not handed over", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const first = yield* openedJournal(file)
      yield* first.journal.checkpoint(record("m1"))
      yield* first.journal.checkpoint(record("m2"))
      yield* first.end
      const second = yield* ParentJournal.make(file)
      // The engine hands the agent m1 (a `receive` from below the runtime) before the runtime's restore.
      yield* second.agent(recordingAgent().agent).passive(entryOf("m1"))
      assert.deepStrictEqual(ids(yield* second.journal.undelivered), ["m2"])
    }))

  it.effect("a passive port that took its entry before an interruption landed still marks it", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* ParentJournal.make(file)
      yield* journal.journal.checkpoint(record("p1"))
      const gate = yield* Deferred.make<void>()
      const agent: ParentAgent<string> = {
        ...recordingAgent().agent,
        passive: () => Effect.uninterruptible(Deferred.await(gate))
      }
      const showing = yield* Effect.forkChild(journal.agent(agent).passive(entryOf("p1")), { startImmediately: true })
      const interrupting = yield* Effect.forkChild(Fiber.interrupt(showing), { startImmediately: true })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(interrupting)
      assert.deepStrictEqual(ids(yield* (yield* afterCrash(file)).journal.undelivered), [])
    }))

  it.effect("C-DLV-17: progress the parent dropped for a finished child is marked, through makeParentSession's onDropped", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const progress: InboundMessage = {
        from: PEER,
        message: message("p1", formatSupervisorMessage("progress_update", { runId: "run-1", agent: "worker", index: 0 }, "half done")),
        channel: "supervisor"
      }
      const dropAfterRestart = (onDropped: boolean) =>
        Effect.scoped(Effect.gen(function*() {
          fs.rmSync(file, { force: true })
          const journal = yield* ParentJournal.make(file)
          yield* journal.journal.checkpoint({ from: PEER, message: progress.message, receivedAt: 1_000, channel: "supervisor" })
          const parent = yield* makeParentSession(journal.agent({ ...recordingAgent().agent, isIdle: Effect.succeed(false) }), {
            generation: "g1",
            busySteer: "queue",
            ...(onDropped ? { onDropped: journal.dropped } : {})
          })
          yield* parent.receive(progress, "queue")
          const [queued] = yield* parent.idleQueue.entries
          assert.isTrue(queued?.progress)
          const dropped = yield* parent.idleQueue.dropFinishedProgress(PEER.id, queued?.threadId ?? "")
          assert.strictEqual(dropped.length, 1)
          return ids(yield* (yield* afterCrash(file)).journal.undelivered)
        }))
      assert.deepStrictEqual(yield* dropAfterRestart(true), [])
      // Without the hook, a restart would hand the dropped progress over.
      assert.deepStrictEqual(yield* dropAfterRestart(false), ["p1"])
    }))

  it.effect("a torn last line is skipped, and the next append starts a line of its own", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      fs.writeFileSync(file, `${JSON.stringify({ a: record("m1") })}\n{"a":{"from":`)
      const journal = yield* ParentJournal.make(file)
      yield* journal.journal.checkpoint(record("m2"))
      const after = yield* afterCrash(file)
      assert.deepStrictEqual(ids(yield* after.journal.undelivered), ["m1", "m2"])
    }))

  it.effect("it keeps what is pending and the newest consumed when it rewrites the file, mode 0600 in a 0700 directory", () =>
    Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "journals")
      const file = path.join(dir, "main.jsonl")
      // Left looser by someone else: the journal's first write tightens both.
      fs.mkdirSync(dir, { mode: 0o755 })
      fs.chmodSync(dir, 0o755)
      fs.writeFileSync(file, "", { mode: 0o644 })
      fs.chmodSync(file, 0o644)
      const journal = yield* ParentJournal.make(file, { capacity: 2 })
      yield* journal.journal.checkpoint(record("kept"))
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
      assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700)
      const { agent } = recordingAgent()
      const wrapped = journal.agent(agent)
      for (let i = 0; i < 20; i++) {
        yield* journal.journal.checkpoint(record(`c${i}`))
        yield* wrapped.passive(entryOf(`c${i}`))
      }
      const lines = fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "")
      // 41 lines appended; rewritten whenever it reached 2 × (pending + capacity) = 6.
      assert.isAtMost(lines.length, 6)
      const after = yield* afterCrash(file, { capacity: 2 })
      assert.deepStrictEqual(ids(yield* after.journal.undelivered), ["kept"])
      const handled = yield* (after.journal.handled ?? Effect.succeed([]))
      assert.deepStrictEqual(handled.map((h) => h.messageId), ["c18", "c19"])
      assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
      assert.strictEqual(fs.statSync(dir).mode & 0o777, 0o700)
    }))

  it.effect("a rewrite the checkpoint of a message set off keeps that message", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* ParentJournal.make(file, { capacity: 1 })
      const { agent } = recordingAgent()
      const wrapped = journal.agent(agent)
      const kept: Array<string> = []
      // With a capacity of 1, checkpoints as well as consumed marks reach the rewrite's bound. After every
      // checkpoint, the file (read as a crash would leave it) holds every message still pending.
      for (let i = 0; i < 20; i++) {
        yield* journal.journal.checkpoint(record(`m${i}`))
        kept.push(`m${i}`)
        const crashed = yield* afterCrash(file, { capacity: 1 })
        assert.deepStrictEqual(ids(yield* crashed.journal.undelivered), kept)
        if (i % 4 !== 0) {
          yield* wrapped.passive(entryOf(`m${i}`))
          kept.pop()
        }
      }
      assert.deepStrictEqual(kept, ["m0", "m4", "m8", "m12", "m16"])
    }))

  it("property: after any run of checkpoints, consumed marks, messages accepted again and restarts, a restarted journal restores exactly what is pending, in order, and remembers the newest consumed", () => {
    type Op =
      | { readonly _tag: "accept" }
      | { readonly _tag: "consume"; readonly pick: number }
      | { readonly _tag: "again"; readonly pick: number }
      | { readonly _tag: "restart" }
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 4, arbitrary: fc.constant<Op>({ _tag: "accept" }) },
      { weight: 4, arbitrary: fc.nat(50).map((pick): Op => ({ _tag: "consume", pick })) },
      // A message taken before, accepted again: a copy the de-duplication window no longer held.
      { weight: 2, arbitrary: fc.nat(50).map((pick): Op => ({ _tag: "again", pick })) },
      { weight: 1, arbitrary: fc.constant<Op>({ _tag: "restart" }) }
    )
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "parent-journal-prop-"))
    let run = 0
    try {
      fc.assert(
        fc.property(fc.array(op, { maxLength: 60 }), fc.integer({ min: 1, max: 4 }), (ops, capacity) => {
          const file = path.join(dir, `run-${run++}.jsonl`)
          const pending: Array<string> = []
          const consumed: Array<string> = []
          let next = 0
          // Each journal in a Scope of its own: a restart ends the process that held it, then opens the file.
          const open = () => Effect.runSync(openedJournal(file, { capacity }))
          let journal = open()
          const restart = () => {
            Effect.runSync(journal.end)
            journal = open()
            assert.deepStrictEqual(ids(Effect.runSync(journal.journal.undelivered)), pending)
            const handled = Effect.runSync(journal.journal.handled ?? Effect.succeed([]))
            assert.deepStrictEqual(handled.map((h) => h.messageId), consumed.slice(-capacity))
          }
          for (const step of ops) {
            if (step._tag === "accept") {
              const id = `m${next++}`
              Effect.runSync(journal.journal.checkpoint(record(id)))
              pending.push(id)
            } else if (step._tag === "consume" && pending.length > 0) {
              const [id] = pending.splice(step.pick % pending.length, 1)
              if (id === undefined) continue
              Effect.runSync(journal.agent(recordingAgent().agent).passive(entryOf(id)))
              consumed.push(id)
            } else if (step._tag === "again") {
              const done = consumed.filter((id) => !pending.includes(id))
              const id = done[step.pick % Math.max(1, done.length)]
              if (id === undefined) continue
              Effect.runSync(journal.journal.checkpoint(record(id)))
              pending.push(id)
            } else if (step._tag === "restart") {
              restart()
            }
          }
          restart()
          Effect.runSync(journal.end)
        }),
        { numRuns: 150 }
      )
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it.effect("a journal that finds lines another program wrote without the lock never rewrites the file, so those lines stay", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const first = yield* openedJournal(file, { capacity: 1 })
      yield* first.journal.checkpoint(record("a"))
      // A writer the lock cannot stop: it appends without taking it (or on a file system without POSIX locks).
      fs.appendFileSync(file, `${JSON.stringify({ a: record("theirs") })}\n`)
      // The first journal's churn reaches its rewrite bound many times over.
      const wrapped = first.agent(recordingAgent().agent)
      for (let i = 0; i < 10; i++) {
        yield* first.journal.checkpoint(record(`c${i}`))
        yield* wrapped.passive(entryOf(`c${i}`))
      }
      yield* first.end
      const after = yield* ParentJournal.make(file, { capacity: 1 })
      assert.deepStrictEqual(ids(yield* after.journal.undelivered), ["a", "theirs"])
    }))

  it.effect("a journal whose file cannot be read fails with what to do, and lets its lock go: a retry in the same Scope opens it", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      fs.mkdirSync(file)
      const error = yield* Effect.flip(ParentJournal.make(file))
      assert.strictEqual(error._tag, "ParentJournalUnreadable")
      assert.include(error.message, file)
      assert.include(error.message, "move it away")
      // The user moves the directory away and tries again, in the same (still open) Scope.
      fs.rmSync(file, { recursive: true })
      fs.writeFileSync(file, `${JSON.stringify({ a: record("m1") })}\n`)
      const journal = yield* ParentJournal.make(file)
      assert.deepStrictEqual(ids(yield* journal.journal.undelivered), ["m1"])
    }))

  it.effect("a journal whose Scope closed writes nothing more: a checkpoint fails saying so, and the next journal sees only what came before", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "main.jsonl")
      const journal = yield* openedJournal(file)
      yield* journal.journal.checkpoint(record("m1"))
      yield* journal.end
      const late = yield* Effect.flip(journal.journal.checkpoint(record("late")))
      assert.instanceOf(late, ParentJournal.ParentJournalWriteFailed)
      assert.include(late instanceof ParentJournal.ParentJournalWriteFailed ? late.message : "", "closed")
      // A mark after the close is logged, not written.
      yield* journal.agent(recordingAgent().agent).passive(entryOf("m1"))
      const next = yield* ParentJournal.make(file)
      assert.deepStrictEqual(ids(yield* next.journal.undelivered), ["m1"])
    }))
})
