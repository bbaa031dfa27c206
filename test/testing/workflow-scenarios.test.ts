/**
 * One scripted scenario per C-ORD statement (contracts.md §13), each in the
 * workflow simulation: the real modules of `effect-intercom/workflow`, with
 * simulated parents, stages and children on the TestClock (docs/testing.md,
 * "Workflow simulation"). Every scenario also ends with the ledger's final
 * checks: no workflow invariant may break.
 *
 * C-ORD-23 (worktrees stay attached until every detached child has closed)
 * has no scenario: worktrees are the engine's, and nothing in the workflow
 * layer owns them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeBarrierRegistry } from "../../src/workflow/BarrierRegistry.ts"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"
import { makeParallelGroup } from "../../src/workflow/ParallelRelease.ts"
import { makeTerminalBarrier, type TerminalNotice } from "../../src/workflow/TerminalBarrier.ts"
import { runWorkflowScenario, type WorkflowReport, type WorkflowSim } from "../../src/testing/workflow/WorkflowWorld.ts"

const scenario = <E>(script: (sim: WorkflowSim) => Effect.Effect<void, E>) => runWorkflowScenario({ seed: 1 }, script)

const clean = (report: WorkflowReport) => expect(report.violations.map((v) => `${v.kind}: ${v.message}`)).toEqual([])

/** The trace line index of the first line containing `text` (-1 when absent). */
const lineOf = (report: WorkflowReport, text: string) => report.trace.findIndex((line) => line.includes(text))

const terminal = (runId: string, child: string, terminalAt: number): TerminalNotice<string> => ({
  owner: "parent",
  runId,
  requestId: `completion-${runId}`,
  source: child,
  terminalAt,
  status: "completed",
  child: { ids: [`id-${child}`], names: [child] },
  notice: runId
})

describe("workflow scenarios: stage admission (C-ORD-1…9)", () => {
  it.effect("C-ORD-1: while a stage is open, a message and an engine notice enter the stage session's own queue", () =>
    Effect.gen(function*() {
      let message = ""
      let notice = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.stage("s1").open
          message = yield* sim.stage("s1").send({ from: "peer" })
          notice = yield* sim.stage("s1").send({ from: "notice" })
          expect(yield* sim.parent.queued).toEqual([])
        }))
      expect([...report.model]).toEqual([])
      expect(lineOf(report, `stage s1 takes ${message}`)).toBeGreaterThan(0)
      expect(lineOf(report, `stage s1 takes ${notice}`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-2: a message admitted before close belongs to the stage and precedes the snapshot; one after close does not", () =>
    Effect.gen(function*() {
      let before = ""
      let after = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.busy(true)
          yield* stage.foreground
          before = yield* stage.send({ from: "child" }) // its handshake is on the wire
          yield* stage.close
          after = yield* stage.send({ from: "peer" })
        }))
      expect(lineOf(report, `stage s1 takes ${before}`)).toBeLessThan(lineOf(report, "stage s1 publishes its terminal snapshot"))
      expect(lineOf(report, `parent chat gets ${after}`)).toBeGreaterThan(0)
      expect(lineOf(report, `stage s1 takes ${after}`)).toBe(-1)
      clean(report)
    }))

  it.effect("C-ORD-3: a busy stage reserves the message before the handshake, so close waits for it", () =>
    Effect.gen(function*() {
      let label = ""
      let pendingAfterSend = -1
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.busy(true)
          yield* stage.foreground
          yield* sim.faults.delayFrames(1) // the probe is late: the handshake takes its 50 ms timeout
          label = yield* stage.send({ from: "child" })
          pendingAfterSend = stage.state.open?.admission.pending() ?? -1
          yield* stage.close
          expect(stage.state.phase).toBe("closing")
          yield* sim.advance("200 millis")
          expect(stage.state.phase).toBe("closed")
        }))
      expect(pendingAfterSend).toBe(1)
      expect(lineOf(report, `stage s1 takes ${label}`)).toBeLessThan(lineOf(report, "publishes its terminal snapshot"))
      clean(report)
    }))

  it.effect("C-ORD-4: a stage retired during first refusal fails admission with the contract's text; the message is retried", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.busy(true)
          yield* stage.foreground
          yield* sim.faults.delayFrames(1)
          label = yield* stage.send({ from: "child" })
          yield* stage.reload // retired while the handshake waits
          yield* sim.advance("300 millis")
        }))
      expect(lineOf(report, `${label} → stage s1 failed: Workflow stage retired during foreground-owner admission`)).toBeGreaterThan(0)
      expect(report.trace.filter((line) => line.includes(`stage s1 takes ${label}`))).toHaveLength(1)
      clean(report)
    }))

  it.effect("C-ORD-5: a blocking ask that cannot be admitted gets the correlated replyError at once; a non-ask is retried", () =>
    Effect.gen(function*() {
      let ask = ""
      let note = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.refuseInserts(2)
          ask = yield* stage.send({ from: "peer", ask: true })
          expect(sim.endsOf(ask)).toEqual(["reply-error"]) // in the same step: no timeout waited
          note = yield* stage.send({ from: "peer" })
          yield* sim.advance("300 millis")
        }))
      expect(lineOf(report, "Running workflow stage could not admit intercom ask: ")).toBeGreaterThan(0)
      expect(lineOf(report, `stage s1 takes ${note}`)).toBeGreaterThan(lineOf(report, `${note} → stage s1 failed`))
      clean(report)
    }))

  it.effect("C-ORD-6: after close a notification goes once to the parent chat, even when delivered again, and never reopens the stage", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.close
          label = yield* stage.send({ from: "notice" })
          yield* stage.redeliver(0)
          expect(sim.endsOf(label)).toEqual(["parent-chat"])
          expect(stage.state.phase).toBe("closed")
        }))
      expect(lineOf(report, `${label} again: AlreadyNotified`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-7: a late ask to a completed stage gets exactly one post-mortem turn, also when delivered twice", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.close
          label = yield* stage.lateAsk({ redeliver: true })
          expect(sim.endsOf(label)).toEqual(["post-mortem"])
        }))
      expect(report.tally.stagesClosed).toBe(1) // the snapshot was not published again
      clean(report)
    }))

  it.effect("C-ORD-8: when the post-mortem turn cannot run, the asker gets the correlated replyError at once", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.close
          yield* stage.retainedGone(true)
          label = yield* stage.lateAsk()
          expect(sim.endsOf(label)).toEqual(["reply-error"])
        }))
      expect(lineOf(report, "Completed workflow stage could not process intercom ask: the retained session is gone")).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-9: the first listener to see a late ask owns it, whichever was registered first", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.close
          label = yield* stage.lateAsk({ companionFirst: true, redeliver: true })
        }))
      expect(lineOf(report, `${label} (stage listener): Claimed`)).toBeGreaterThan(0)
      expect(report.trace.filter((line) => line.includes(`post-mortem turn for ${label}`))).toHaveLength(1)
      clean(report)
    }))
})

describe("workflow scenarios: the foreground detach handshake (C-ORD-10…22)", () => {
  it.effect("C-ORD-10: a busy parent asks its exact live foreground child to claim the message, with a probe", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          label = yield* sim.child("c1").send()
          yield* sim.advance("20 millis")
        }))
      expect(lineOf(report, `probe for ${label} to c1`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-11: an unavailable foreground child does not answer; the message is kept", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          yield* sim.child("c1").unavailable(true)
          label = yield* sim.child("c1").send()
          yield* sim.advance("100 millis")
          expect(sim.child("c1").detached()).toBe(false)
          expect(yield* sim.parent.queued).toEqual([label])
        }))
      expect(lineOf(report, `probe ack for ${label}`)).toBe(-1)
      expect(lineOf(report, `parent inbox: ${label} queued (unclaimed)`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-12: after the probe is acknowledged the parent commits; the child detaches, releasing the parent's call", () =>
    Effect.gen(function*() {
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          yield* sim.child("c1").send()
          yield* sim.advance("20 millis")
          expect(sim.child("c1").detached()).toBe(true)
          expect(sim.world.parent.slot.current()).toBeUndefined()
        }))
      expect(lineOf(report, "probe ack for")).toBeLessThan(lineOf(report, "commit for"))
      clean(report)
    }))

  it.effect("C-ORD-13: the message reaches the parent's model only once the commit is acknowledged", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          label = yield* sim.child("c1").send()
          expect(sim.parent.model()).toEqual([]) // the probe is still on the wire
          yield* sim.advance("20 millis")
          expect(sim.parent.model()).toEqual([label])
        }))
      expect(lineOf(report, "commit ack for")).toBeLessThan(lineOf(report, `parent model ← ${label}`))
      clean(report)
    }))

  it.effect("C-ORD-14: a lost acknowledgement gives unclaimed after the 50 ms phase timeout; the message is never dropped", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          yield* sim.faults.dropFrames(1) // the probe is lost: its acknowledgement never comes
          label = yield* sim.child("c1").send()
          yield* sim.advance("40 millis")
          expect(yield* sim.parent.queued).toEqual([label])
          yield* sim.advance("20 millis")
          yield* sim.parent.busy(false)
          expect(sim.parent.model()).toEqual([label])
        }))
      expect(lineOf(report, `${label} queued (unclaimed)`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-15: an acknowledgement that is not accepted, or names another route, is ignored", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          yield* sim.faults.dropFrames(1) // the real probe never arrives
          label = yield* sim.child("c1").send()
          const route = { requestId: label, messageId: label, childIntercomTarget: "c1", senderId: "id-c1", runtimeGeneration: "parent-g1" }
          const { handshake } = sim.world.parent.slot
          yield* handshake.acknowledge({ ...route, phase: "probe", accepted: false })
          yield* handshake.acknowledge({ ...route, phase: "commit", accepted: true })
          yield* handshake.acknowledge({ ...route, senderId: "id-c2", phase: "probe", accepted: true })
          yield* handshake.acknowledge({ ...route, childIntercomTarget: "c2", phase: "probe", accepted: true })
          yield* sim.advance("100 millis")
          expect(sim.child("c1").detached()).toBe(false)
        }))
      expect(lineOf(report, "commit for")).toBe(-1)
      expect(lineOf(report, `${label} queued (unclaimed)`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-16: a new runtime generation abandons the handshake in flight; its stale acknowledgement neither surfaces the message nor detaches the child", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          yield* sim.faults.delayFrames(2) // the probe and its acknowledgement are late
          label = yield* sim.child("c1").send()
          yield* sim.parent.reload
          yield* sim.advance("300 millis")
          expect(sim.child("c1").detached()).toBe(false)
          expect(sim.parent.model()).toEqual([])
        }))
      expect(lineOf(report, `${label} queued (abandoned)`)).toBeGreaterThan(0)
      expect(lineOf(report, "commit for")).toBe(-1)
      clean(report)
    }))

  it.effect("C-ORD-17: concurrent deliveries of one message share a handshake; a delivered one needs none", () =>
    Effect.gen(function*() {
      const outcomes: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.child("c1").foreground
          const entry: InboundEntry<string> = { messageId: "x1", senderId: "id-c1", senderName: "c1", timestamp: 0, expectsReply: false, payload: "x1" }
          const { handshake } = sim.world.parent.slot
          const twice = Effect.all([handshake.handoff(entry), handshake.handoff(entry)], { concurrency: "unbounded" })
          const [a, b] = yield* sim.perform(twice)
          outcomes.push(a, b, yield* sim.perform(handshake.handoff(entry)))
        }))
      expect(outcomes).toEqual(["delivered", "delivered", "delivered"])
      expect(report.trace.filter((line) => line.includes("probe for x1"))).toHaveLength(1)
      clean(report)
    }))

  it.effect("C-ORD-18: the busy parent queues the message before probing; one a terminal barrier claimed meanwhile is not surfaced again", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          yield* sim.faults.delayFrames(1)
          label = yield* sim.child("c1").send()
          expect(yield* sim.parent.queued).toEqual([label]) // owned before the probe answers
          yield* sim.child("c1").terminal()
          yield* sim.advance("200 millis")
        }))
      expect([...report.model]).toEqual([label, "terminal:run-c1-1"])
      clean(report)
    }))

  it.effect("C-ORD-19: only the matching foreground child releases the parent; a background child's message keeps its routing", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          label = yield* sim.child("c2").send()
          yield* sim.advance("100 millis")
          expect(sim.world.parent.slot.current()?.name).toBe("c1")
          expect(yield* sim.parent.queued).toEqual([label])
        }))
      expect(lineOf(report, "probe for")).toBe(-1)
      clean(report)
    }))

  it.effect("C-ORD-20: a progress update from the foreground child releases it too", () =>
    Effect.gen(function*() {
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").foreground
          const label = yield* sim.child("c1").send("progress")
          yield* sim.advance("20 millis")
          expect(sim.child("c1").detached()).toBe(true)
          expect(sim.parent.model()).toEqual([label])
        }))
      clean(report)
    }))

  it.effect("C-ORD-21: one accepted commit releases every running sibling of a foreground parallel group; they keep running", () =>
    Effect.gen(function*() {
      const slots: Array<string> = []
      const settled: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.scoped(Effect.gen(function*() {
          // The sleeps are the members' work, on the TestClock (sim.advance moves it), not barriers.
          const group = yield* makeParallelGroup<string, never>([
            (release) => Effect.andThen(Effect.sleep("10 millis"), Effect.andThen(release, Effect.as(Effect.sleep("1 second"), "a"))),
            () => Effect.as(Effect.sleep("2 seconds"), "b")
          ], { concurrency: 2 })
          const aggregate = yield* Effect.forkChild(group.aggregate)
          yield* sim.advance("20 millis")
          for (const slot of yield* Fiber.join(aggregate)) slots.push(slot._tag)
          const done = yield* Effect.forkChild(group.settled)
          yield* sim.advance("3 seconds")
          for (const slot of yield* Fiber.join(done)) settled.push(slot._tag)
        })))
      expect(slots).toEqual(["Detached", "Detached"])
      expect(settled).toEqual(["Done", "Done"])
      clean(report)
    }))

  it.effect("C-ORD-21/22 in the world: a message from one member of the parent's foreground group detaches every running member; the waiting one is skipped", () =>
    Effect.gen(function*() {
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.parent.foregroundGroup(["c1", "c2", "c3"], 2)
          expect(sim.world.parent.slot.members().map((child) => child.name)).toEqual(["c1", "c2"])
          yield* sim.child("c2").send()
          yield* sim.advance("20 millis")
          expect([sim.child("c1").detached(), sim.child("c2").detached(), sim.child("c3").detached()]).toEqual([true, true, false])
          expect(sim.world.parent.slot.members()).toEqual([])
          yield* sim.child("c1").terminal() // a detached member keeps running and ends later
          yield* sim.advance("20 millis")
          expect(sim.world.parent.slot.members()).toEqual([]) // c3 was skipped, never launched
        }))
      expect(lineOf(report, "the group's subagent call returns: Detached, Detached, Skipped")).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-22: tasks still waiting behind the concurrency limit when the group is released are skipped, never launched", () =>
    Effect.gen(function*() {
      const slots: Array<string> = []
      let launched = 0
      const report = yield* scenario((sim) =>
        Effect.scoped(Effect.gen(function*() {
          // A task's 10 ms of work on the TestClock (not a barrier), then its commit releases the group.
          const task = (release: Effect.Effect<void>) =>
            Effect.sync(() => launched++).pipe(Effect.andThen(Effect.sleep("10 millis")), Effect.andThen(release), Effect.as("done"))
          const group = yield* makeParallelGroup<string, never>([task, task, task], { concurrency: 1 })
          const aggregate = yield* Effect.forkChild(group.aggregate)
          yield* sim.advance("1 second")
          for (const slot of yield* Fiber.join(aggregate)) slots.push(slot._tag)
        })))
      expect(slots).toEqual(["Detached", "Skipped", "Skipped"])
      expect(launched).toBe(1)
      clean(report)
    }))
})

describe("workflow scenarios: terminal ordering (C-ORD-24…33)", () => {
  it.effect("C-ORD-24: a child's message keeps its sender timestamp and its source run id", () =>
    Effect.gen(function*() {
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.advance("1 second")
          yield* sim.parent.busy(true)
          yield* sim.child("c1").send()
          const [queued] = yield* sim.world.parent.idleQueue.entries
          expect(queued?.source?.subagentRunId).toBe("run-c1-1")
          expect(queued?.timestamp).toBe(1002)
          expect(queued?.senderName).toBe("c1")
        }))
      clean(report)
    }))

  it.effect("C-ORD-25: the terminal comes with the child's earlier ordinary messages, in FIFO order, as one batch", () =>
    Effect.gen(function*() {
      const labels: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          labels.push(yield* sim.child("c1").send(), yield* sim.child("c2").send(), yield* sim.child("c1").send("progress"))
          yield* sim.child("c1").terminal()
          expect(sim.parent.model()).toEqual([labels[0], labels[2], "terminal:run-c1-1"])
        }))
      expect(lineOf(report, `parent model ← ${labels[0]}, ${labels[2]}, terminal:run-c1-1`)).toBeGreaterThan(0)
      clean(report)
    }))

  it.effect("C-ORD-26: the barrier never claims the child's asks, nor what it sent after the terminal", () =>
    Effect.gen(function*() {
      const labels: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          labels.push(yield* sim.child("c1").send("ask"), yield* sim.child("c1").send())
          yield* sim.faults.refuseAfter(0) // the first admission is refused and retried 100 ms later
          yield* sim.child("c1").terminal()
          yield* sim.advance("10 millis")
          labels.push(yield* sim.child("c1").send()) // after terminalAt
          yield* sim.advance("200 millis")
          expect(sim.parent.model()).toEqual([labels[1], "terminal:run-c1-1"])
          expect(yield* sim.parent.queued).toEqual([labels[0], labels[2]])
        }))
      clean(report)
    }))

  it.effect("C-ORD-27: other children's entries keep their places in the queue", () =>
    Effect.gen(function*() {
      const labels: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          labels.push(yield* sim.child("c2").send(), yield* sim.child("c1").send(), yield* sim.child("c3").send())
          yield* sim.child("c1").terminal()
          expect(yield* sim.parent.queued).toEqual([labels[0], labels[2]])
          yield* sim.parent.busy(false)
        }))
      expect([...report.model]).toEqual([labels[1], "terminal:run-c1-1", labels[0], labels[2]])
      clean(report)
    }))

  it.effect("C-ORD-28: a terminal delivered twice is admitted once; a repeat after success claims nothing; 1000 keys are remembered", () =>
    Effect.gen(function*() {
      const outcomes: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").send()
          yield* sim.child("c1").terminal({ duplicate: true })
          const { barrier } = sim.world.parent
          const first = terminal("run-c1-1", "c1", 0)
          outcomes.push((yield* barrier.admit(first))._tag)
          // The first key is still among the last 1000 after 999 others.
          for (let i = 0; i < 999; i++) yield* barrier.admit(terminal(`other-${i}`, "c9", 0))
          outcomes.push((yield* barrier.admit(first))._tag)
        }))
      expect(outcomes).toEqual(["AlreadyAdmitted", "AlreadyAdmitted"])
      expect(report.model.filter((item) => item === "terminal:run-c1-1")).toHaveLength(1)
      clean(report)
    }))

  it.effect("C-ORD-29: a failed dispatch rolls back from the first undelivered entry; the terminal is retried", () =>
    Effect.gen(function*() {
      const labels: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          labels.push(yield* sim.child("c1").send(), yield* sim.child("c1").send(), yield* sim.child("c1").send())
          yield* sim.faults.refuseAfter(1)
          yield* sim.child("c1").terminal()
          expect(yield* sim.parent.queued).toEqual([labels[1], labels[2]])
          yield* sim.advance("200 millis")
        }))
      expect([...report.model]).toEqual([labels[0], labels[1], labels[2], "terminal:run-c1-1"])
      clean(report)
    }))

  it.effect("C-ORD-30: a resumed run's later terminal is admitted separately", () =>
    Effect.gen(function*() {
      const labels: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          labels.push(yield* sim.child("c1").send())
          yield* sim.child("c1").terminal()
          yield* sim.child("c1").resume
          labels.push(yield* sim.child("c1").send())
          yield* sim.child("c1").terminal()
        }))
      expect([...report.model]).toEqual([labels[0], "terminal:run-c1-1", labels[1], "terminal:run-c1-2"])
      clean(report)
    }))

  it.effect("C-ORD-31: terminal admission does not wait for the busy parent's next turn", () =>
    Effect.gen(function*() {
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          yield* sim.child("c1").terminal()
          expect(sim.parent.model()).toEqual(["terminal:run-c1-1"]) // still busy
        }))
      clean(report)
    }))

  it.effect("C-ORD-32: a correlated reply resolves the parent's question before anything queued", () =>
    Effect.gen(function*() {
      let queued = ""
      let reply: string | undefined
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          yield* sim.parent.busy(true)
          queued = yield* sim.child("c2").send()
          yield* sim.parent.ask("c1")
          reply = yield* sim.child("c1").reply
          expect(sim.endsOf(reply ?? "")).toEqual(["reply"])
          expect(yield* sim.parent.queued).toEqual([queued])
        }))
      clean(report)
    }))

  it.effect("C-ORD-33: the newest registration that is still current handles a terminal", () =>
    Effect.gen(function*() {
      const wrong: Array<string> = []
      const report = yield* scenario((sim) =>
        Effect.scoped(Effect.gen(function*() {
          const registry = yield* makeBarrierRegistry<string>()
          const { barrier, idleQueue } = sim.world.parent
          const stale = yield* makeTerminalBarrier<string, string>(idleQueue, {
            dispatch: (batch) => Effect.sync(() => wrong.push(batch.terminal.runId))
          })
          yield* registry.register(barrier, Effect.succeed(true))
          yield* registry.register(stale, Effect.succeed(false)) // newer, but its generation ended
          yield* sim.parent.busy(true)
          yield* sim.child("c1").send()
          const at = sim.ledger.lines.length
          yield* registry.admit(terminal("run-c1-1", "c1", 10_000))
          expect(sim.ledger.lines.slice(at).some((line) => line.includes("terminal:run-c1-1"))).toBe(true)
        })))
      expect(wrong).toEqual([])
      clean(report)
    }))

  it.effect("C-ORD-34: a completion before close goes through the stage before its snapshot; one after close goes once to the parent chat", () =>
    Effect.gen(function*() {
      let before = ""
      let after = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.busy(true) // a producer is still running: close does not wait for it
          before = yield* stage.send({ from: "notice" })
          yield* stage.close
          after = yield* stage.send({ from: "notice" })
          expect(stage.state.phase).toBe("closed")
        }))
      expect(lineOf(report, `stage s1 takes ${before}`)).toBeLessThan(lineOf(report, "publishes its terminal snapshot"))
      expect(report.trace.filter((line) => line.includes(`parent chat gets ${after}`))).toHaveLength(1)
      clean(report)
    }))

  it.effect("C-ORD-35: a late callback of a retired stage generation writes nothing into its replacement", () =>
    Effect.gen(function*() {
      let label = ""
      const report = yield* scenario((sim) =>
        Effect.gen(function*() {
          const stage = sim.stage("s1")
          yield* stage.open
          yield* stage.busy(true)
          yield* stage.foreground
          yield* sim.faults.delayFrames(2) // the old generation's handshake settles late
          label = yield* stage.send({ from: "child" })
          yield* stage.reload
          yield* sim.advance("500 millis")
          yield* stage.close
        }))
      // Once: the retried admission in the new generation, never the retired one's late settlement too.
      expect(report.trace.filter((line) => line.includes(`stage s1 takes ${label}`))).toHaveLength(1)
      clean(report)
    }))
})
