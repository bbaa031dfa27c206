/**
 * The engine-facing services: `Runs` (lifetimes, generated groups),
 * `Stages` (routing by the stage's moment, generations) and `Children`
 * (group, capability and bridge environment), over fakes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Scope } from "effect"
import { TestClock } from "effect/testing"
import { SupervisorAuthorizationFailed } from "../../src/client/errors.ts"
import { childEnvironment, childSessionName, readChildBridge } from "../../src/session/supervisorBridge.ts"
import { type ChildAuthorizer, Children, type ChildrenOptions } from "../../src/workflow/Children.ts"
import type { ParentChat } from "../../src/workflow/ClosedStage.ts"
import { Runs } from "../../src/workflow/Runs.ts"
import { type StagePorts, Stages, type StagesSettings } from "../../src/workflow/Stages.ts"
import { type StageEntry, stageNotice } from "../../src/workflow/StageEntry.ts"
import type { Inbound } from "../../src/session/Host.ts"
import { stageHostDeliver } from "../../src/workflow/StageInbound.ts"
import { ask, fakeSession, label, type Log, manualHandoff, note, recordingReplyError } from "./support.ts"

/** A stage session's message as the session runtime hands it to the host. */
const hostInbound = (entry: StageEntry): Inbound => {
  if (entry._tag !== "Message") throw new Error("a message entry")
  const { from, message } = entry.inbound
  return { intent: "trigger", from, message, text: "", expectsReply: message.expectsReply === true, delivery: "steer" }
}

/** Runs with group ids g1, g2, … in the order they are made. */
const counted = () => {
  let n = 0
  return Runs.layer({ newGroupId: Effect.sync(() => `g${++n}`) })
}

const services = (children: ChildrenOptions = {}, stages: Partial<StagesSettings> = {}) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const layer = Layer.mergeAll(Stages.layerWith(stages), Children.layer(children)).pipe(Layer.provideMerge(counted()))
    const context = yield* Layer.buildWithScope(layer, scope)
    return { runs: Context.get(context, Runs), stages: Context.get(context, Stages), children: Context.get(context, Children) }
  })

const parent = (log: Log): ParentChat => ({
  deliver: (entry) => Effect.sync(() => log.push(`parent:${label(entry)}`))
})

const stagePorts = (log: Log, busy = false) => {
  const fake = fakeSession(log, { busy })
  const manual = manualHandoff(log)
  const ports: StagePorts = {
    session: fake.session,
    handoff: manual.handoff,
    replyError: recordingReplyError(log),
    parent: parent(log),
    retained: { runTurn: (message) => Effect.sync(() => log.push(`post-mortem:${message.message.id}`)) }
  }
  return { ports, manual, state: fake.state }
}

describe("Runs", () => {
  it.effect("ids are checked, and a generated group is made once per key and shared (C-GRP-9)", () =>
    Effect.gen(function*() {
      const { runs } = yield* services()
      yield* runs.start({ runId: "r1" })
      assert.strictEqual((yield* Effect.flip(runs.start({ runId: "r1" })))._tag, "InvalidWorkflowId")
      assert.strictEqual((yield* Effect.flip(runs.start({ runId: "  " })))._tag, "InvalidWorkflowId")
      const a = yield* runs.groupFor("r1", { _tag: "Generated", key: "p1" })
      const b = yield* runs.groupFor("r1", { _tag: "Generated", key: "p1" })
      const c = yield* runs.groupFor("r1", { _tag: "Generated", key: "p2" })
      assert.deepStrictEqual([a, b, c], ["g1", "g1", "g2"])
      assert.strictEqual(yield* runs.groupFor("r1", { _tag: "Named", group: "team" }), "team")
      assert.isUndefined(yield* runs.groupFor("r1", { _tag: "NoGroup" }))
      yield* runs.end("r1")
      assert.strictEqual((yield* Effect.flip(runs.get("r1")))._tag, "UnknownWorkflowItem")
    }))
})

describe("Stages", () => {
  it.effect("C-GRP-9/11: the items of one parallel set share one generated group, a run-level one is the whole run's; a stage without intercom gets none", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1", group: "auto" })
      const log: Log = []
      const setAuto = { parallelStep: "auto" }
      const a = yield* stages.open({ runId: "r1", stageId: "a", parallelSetId: "p1", groups: setAuto }, stagePorts(log).ports)
      const b = yield* stages.open({ runId: "r1", stageId: "b", parallelSetId: "p1", groups: setAuto }, stagePorts(log).ports)
      const c = yield* stages.open({ runId: "r1", stageId: "c", parallelSetId: "p2", groups: setAuto }, stagePorts(log).ports)
      const d = yield* stages.open({ runId: "r1", stageId: "d", groups: { stage: "review" } }, stagePorts(log).ports)
      const e = yield* stages.open({ runId: "r1", stageId: "e", tools: { noTools: true } }, stagePorts(log).ports)
      // Only the run asks: a sequential stage and an item of a parallel set share the run's one group.
      const plan = yield* stages.open({ runId: "r1", stageId: "plan" }, stagePorts(log).ports)
      const reviewer = yield* stages.open({ runId: "r1", stageId: "reviewer", parallelSetId: "p3" }, stagePorts(log).ports)
      assert.deepStrictEqual([a.group, b.group, c.group, d.group, e.group, plan.group, reviewer.group], [
        "g1",
        "g1",
        "g2",
        "review",
        undefined,
        "g3",
        "g3"
      ])
    }))

  it.effect("C-ORD-1/2/6/7: open → into the stage; after close notifications go once to the parent and a late ask to its post-mortem turn; the stage never reopens", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const log: Log = []
      yield* stages.open({ runId: "r1", stageId: "s" }, stagePorts(log).ports)
      assert.deepStrictEqual(yield* stages.deliver("s", note("m1")), {
        _tag: "Stage",
        admission: { _tag: "Admitted", via: "native" }
      })
      yield* stages.close("s", Effect.sync(() => log.push("snapshot")))
      const completion = stageNotice({ id: "child-9", text: "child 9 completed" })
      assert.deepStrictEqual(yield* stages.deliver("s", completion), { _tag: "AfterClose", outcome: { _tag: "Notified" } })
      assert.deepStrictEqual(yield* stages.deliver("s", completion), {
        _tag: "AfterClose",
        outcome: { _tag: "AlreadyNotified" }
      })
      assert.deepStrictEqual(yield* stages.deliver("s", ask("q1")), { _tag: "AfterClose", outcome: { _tag: "PostMortem" } })
      assert.deepStrictEqual(yield* stages.deliver("s", ask("q1")), {
        _tag: "AfterClose",
        outcome: { _tag: "Claimed", owner: "s" }
      })
      const reopen = yield* Effect.flip(stages.open({ runId: "r1", stageId: "s" }, stagePorts(log).ports))
      assert.strictEqual(reopen._tag, "InvalidWorkflowId")
      assert.deepStrictEqual(log, ["insert:m1", "snapshot", "parent:child-9", "post-mortem:q1"])
    }))

  it.effect("C-ORD-7: a late ask that comes while the stage publishes its snapshot is a post-mortem ask, and its turn runs after the snapshot", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const log: Log = []
      yield* stages.open({ runId: "r1", stageId: "s" }, stagePorts(log).ports)
      const publishing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const snapshot = Effect.andThen(
        Deferred.succeed(publishing, undefined),
        Effect.andThen(Deferred.await(release), Effect.sync(() => log.push("snapshot")))
      )
      const closing = yield* Effect.forkChild(stages.close("s", snapshot), { startImmediately: true })
      yield* Deferred.await(publishing)
      const asking = yield* Effect.forkChild(stages.deliver("s", ask("q1")), { startImmediately: true })
      // Scheduler turns, not time: the ask goes as far as it can while the snapshot is being taken.
      yield* Effect.repeat(Effect.yieldNow, { times: 20 })
      assert.deepStrictEqual(log, [], "no post-mortem turn while the snapshot is being published")
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(yield* Fiber.join(asking), { _tag: "AfterClose", outcome: { _tag: "PostMortem" } })
      assert.deepStrictEqual(log, ["snapshot", "post-mortem:q1"])
    }))

  it.effect("C-ORD-7: an ask whose admission was unanswered when close retired the generation gets its post-mortem turn, not a running-stage replyError", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const log: Log = []
      yield* stages.open({ runId: "r1", stageId: "s" }, stagePorts(log).ports)
      const publishing = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const snapshot = Effect.andThen(
        Deferred.succeed(publishing, undefined),
        Effect.andThen(Deferred.await(release), Effect.sync(() => log.push("snapshot")))
      )
      const closing = yield* Effect.forkChild(stages.close("s", snapshot), { startImmediately: true })
      yield* Deferred.await(publishing)
      const asking = yield* Effect.forkChild(stages.deliver("s", ask("q1")), { startImmediately: true })
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(closing)
      assert.deepStrictEqual(yield* Fiber.join(asking), { _tag: "AfterClose", outcome: { _tag: "PostMortem" } })
      assert.deepStrictEqual(log, ["snapshot", "post-mortem:q1"])
    }))

  it.effect("C-ORD-16/35: a new generation retires the old one; its waiting entry is released, retried into the new one, and the old handshake's late answer writes nothing", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const oldLog: Log = []
      const old = stagePorts(oldLog, true)
      const first = yield* stages.open({ runId: "r1", stageId: "s" }, old.ports)
      const entry = note("m1")
      const waiting = yield* Effect.forkChild(stages.deliver("s", entry), { startImmediately: true })
      yield* old.manual.started(entry)
      const newLog: Log = []
      const second = yield* stages.open({ runId: "r1", stageId: "s" }, stagePorts(newLog).ports)
      assert.deepStrictEqual([first.generation, second.generation], [1, 2])
      const released = yield* Effect.flip(Fiber.join(waiting))
      assert.strictEqual(released._tag, "StageRetired")
      // The caller retries: the entry goes to the new generation.
      assert.strictEqual((yield* stages.deliver("s", entry))._tag, "Stage")
      yield* old.manual.settle(entry, "delivered")
      yield* Effect.yieldNow
      assert.deepStrictEqual(oldLog, ["handoff:m1"])
      assert.deepStrictEqual(newLog, ["insert:m1"])
    }))

  it.effect("ending the run retires its stages: an entry waiting on a handshake is released", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const log: Log = []
      const stage = stagePorts(log, true)
      yield* stages.open({ runId: "r1", stageId: "s" }, stage.ports)
      const entry = ask("q1")
      const waiting = yield* Effect.forkChild(stages.deliver("s", entry), { startImmediately: true })
      yield* stage.manual.started(entry)
      yield* runs.end("r1")
      // An ask released this way gets its correlated replyError at once (C-ORD-4/5).
      assert.deepStrictEqual(yield* Fiber.join(waiting), {
        _tag: "Stage",
        admission: { _tag: "Rejected", reason: "Workflow stage retired during foreground-owner admission" }
      })
      // A later message goes once to the parent chat instead of failing for a retry that could not end.
      assert.deepStrictEqual(yield* stages.deliver("s", note("m2")), { _tag: "AfterClose", outcome: { _tag: "Notified" } })
      assert.deepStrictEqual(log, ["handoff:q1", "replyError:q1:Running workflow stage could not admit intercom ask: Workflow stage retired during foreground-owner admission", "parent:m2"])
    }))

  it.effect("C-ORD-6: a late notification whose parent chat keeps failing stops being retried when the run ends, so Stages.deliver returns", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const log: Log = []
      const ports: StagePorts = {
        ...stagePorts(log).ports,
        parent: {
          deliver: (entry) =>
            Effect.suspend(() => {
              log.push(`parent-failed:${label(entry)}`)
              return Effect.fail("parent chat down")
            })
        }
      }
      yield* stages.open({ runId: "r1", stageId: "s" }, ports)
      yield* stages.close("s", Effect.void)
      // As stageHostDeliver is run by the session runtime: uninterruptibly.
      const routing = yield* Effect.forkChild(Effect.uninterruptible(stages.deliver("s", stageNotice({ id: "n1", text: "late" }))), {
        startImmediately: true
      })
      yield* TestClock.adjust("250 millis")
      assert.strictEqual(log.length, 3)
      yield* runs.end("r1")
      const delivered = yield* Fiber.join(routing)
      assert.strictEqual(delivered._tag === "AfterClose" ? delivered.outcome._tag : delivered._tag, "Abandoned")
      yield* TestClock.adjust("10 seconds")
      assert.strictEqual(log.length, 4, "one last attempt when the run ended, none after")
    }))

  it.effect("C-ORD-8: a stage whose run ended answers a late ask with the correlated replyError once and takes a late notification once; a stage never opened stays unknown", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const log: Log = []
      let parentDown = false
      const ports: StagePorts = {
        ...stagePorts(log).ports,
        parent: {
          deliver: (entry) =>
            Effect.suspend(() => {
              log.push(`${parentDown ? "parent-failed" : "parent"}:${label(entry)}`)
              return parentDown ? Effect.fail("parent chat down") : Effect.void
            })
        }
      }
      yield* stages.open({ runId: "r1", stageId: "s" }, ports)
      yield* stages.close("s", Effect.void)
      // A stage that was still open when its run ended is over too.
      yield* stages.open({ runId: "r1", stageId: "open" }, ports)
      yield* runs.end("r1")
      const told = "Completed workflow stage could not process intercom ask: the stage's run has ended"
      assert.deepStrictEqual(yield* stages.deliver("s", ask("q1")), {
        _tag: "AfterClose",
        outcome: { _tag: "Rejected", reason: "the stage's run has ended" }
      })
      assert.deepStrictEqual(yield* stages.deliver("s", ask("q1")), { _tag: "AfterClose", outcome: { _tag: "Claimed", owner: "s" } })
      assert.strictEqual((yield* stages.deliver("open", ask("q2")))._tag, "AfterClose")
      assert.deepStrictEqual(yield* stages.deliver("s", note("m1")), { _tag: "AfterClose", outcome: { _tag: "Notified" } })
      parentDown = true
      const given = yield* stages.deliver("s", note("m2"))
      assert.strictEqual(given._tag === "AfterClose" ? given.outcome._tag : given._tag, "Abandoned")
      yield* TestClock.adjust("10 seconds")
      assert.deepStrictEqual(log, [`replyError:q1:${told}`, `replyError:q2:${told}`, "parent:m1", "parent-failed:m2"])
      assert.strictEqual((yield* Effect.flip(stages.deliver("never", note("m3"))))._tag, "UnknownWorkflowItem")
    }))

  it.effect("C-ORD-8: a stage ended longer ago than the newest 1000 is forgotten: an entry for it fails StageForgotten, which the stage's host gives up (an ask with its replyError) instead of failing for a retry", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      const log: Log = []
      const ports = stagePorts(log).ports
      yield* runs.start({ runId: "r0" })
      yield* stages.open({ runId: "r0", stageId: "s0" }, ports)
      yield* runs.end("r0")
      yield* runs.start({ runId: "r1" })
      for (let i = 1; i <= 1000; i++) yield* stages.open({ runId: "r1", stageId: `s${i}` }, ports)
      yield* runs.end("r1")
      // s1 … s1000 are still kept; s0 is forgotten but for its id.
      assert.strictEqual((yield* stages.deliver("s1", note("m0")))._tag, "AfterClose")
      const forgotten = yield* Effect.flip(stages.deliver("s0", ask("q1")))
      assert.strictEqual(forgotten._tag, "StageForgotten")
      assert.strictEqual(forgotten.message, "Workflow stage 's0' cannot take the message: the stage's run ended too long ago for the stage to be remembered")
      assert.strictEqual((yield* Effect.flip(stages.deliver("never", note("m1"))))._tag, "UnknownWorkflowItem")
      // The stage session's host: not a failure (which the runtime would retry for as long as the session lives).
      const host = stageHostDeliver(stages, "s0", { replyError: recordingReplyError(log) })
      yield* host(hostInbound(ask("q1")))
      yield* host(hostInbound(note("m2")))
      assert.deepStrictEqual(log, [
        "parent:m0",
        "replyError:q1:Completed workflow stage could not process intercom ask: the stage's run ended too long ago for the stage to be remembered"
      ])
      // A new stage with that id is a stage of its own again.
      yield* runs.start({ runId: "r-new" })
      yield* stages.open({ runId: "r-new", stageId: "s0" }, stagePorts(log).ports)
      assert.strictEqual((yield* stages.deliver("s0", note("m3")))._tag, "Stage")
    }))

  it.effect("the ids of forgotten stages are bounded too (forgottenStages): past it an entry fails UnknownWorkflowItem, as for a stage never opened", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services({}, { endedStages: 1, forgottenStages: 2 })
      const log: Log = []
      for (let i = 0; i < 5; i++) {
        yield* runs.start({ runId: `r${i}` })
        yield* stages.open({ runId: `r${i}`, stageId: `s${i}` }, stagePorts(log).ports)
        yield* runs.end(`r${i}`)
      }
      // s4 is kept whole; s3 and s2 are remembered as forgotten; s1 and s0 are not known at all.
      assert.strictEqual((yield* stages.deliver("s4", note("m4")))._tag, "AfterClose")
      for (const id of ["s3", "s2"]) assert.strictEqual((yield* Effect.flip(stages.deliver(id, note("m"))))._tag, "StageForgotten")
      for (const id of ["s1", "s0"]) assert.strictEqual((yield* Effect.flip(stages.deliver(id, note("m"))))._tag, "UnknownWorkflowItem")
    }))

  it.effect("C-ORD-7: after a stage was reopened and closed, late entries use the latest generation's ports: its retained conversation and parent chat", () =>
    Effect.gen(function*() {
      const { runs, stages } = yield* services()
      yield* runs.start({ runId: "r1" })
      const firstLog: Log = []
      const secondLog: Log = []
      yield* stages.open({ runId: "r1", stageId: "s" }, stagePorts(firstLog).ports)
      yield* stages.open({ runId: "r1", stageId: "s" }, stagePorts(secondLog).ports)
      yield* stages.close("s", Effect.void)
      assert.deepStrictEqual(yield* stages.deliver("s", ask("q1")), { _tag: "AfterClose", outcome: { _tag: "PostMortem" } })
      assert.deepStrictEqual(yield* stages.deliver("s", stageNotice({ id: "n1", text: "late completion" })), {
        _tag: "AfterClose",
        outcome: { _tag: "Notified" }
      })
      assert.deepStrictEqual(firstLog, [])
      assert.deepStrictEqual(secondLog, ["post-mortem:q1", "parent:n1"])
    }))
})

describe("Children", () => {
  const inherited = {
    HOME: "/home/me",
    ATOMIC_SUBAGENT_SUPERVISOR_CAPABILITY: "parents-capability",
    ATOMIC_SUBAGENT_SUPERVISOR_SESSION_ID: "grandparent",
    ATOMIC_SUBAGENT_RUN_ID: "old-run"
  }
  /** An authorizer that grants like the broker would and logs what it was asked. */
  const granting = (log: Log): ChildAuthorizer => (launch, base) =>
    Effect.sync(() => {
      const full = { ...launch, supervisorTarget: launch.supervisorTarget ?? "sup-1" }
      const sessionName = childSessionName(full)
      log.push(`authorize:${sessionName}:${launch.group}`)
      const grant = { capability: `cap-for-${sessionName}`, supervisorSessionId: "sup-1" }
      return { sessionName, grant, env: childEnvironment(base, { ...full, sessionName }, grant) }
    })

  it.effect("C-SUP-7/C-GRP-10: an intercom-capable child is authorized and started with its bridge, grant and group", () =>
    Effect.gen(function*() {
      const log: Log = []
      const { children, runs } = yield* services({ authorize: granting(log), env: inherited })
      yield* runs.start({ runId: "r1" })
      const a = yield* children.launch({ runId: "r1", agent: "worker", index: 0, group: "auto", parallelSetId: "p1" })
      const b = yield* children.launch({ runId: "r1", agent: "worker", index: 1, group: "auto", parallelSetId: "p1" })
      const c = yield* children.launch({ runId: "r1", agent: "worker", index: 2, launcherGroup: "lead" })
      assert.deepStrictEqual([a.group, b.group, c.group], ["g1", "g1", "lead"])
      const bridge = readChildBridge(a.env)
      assert.deepStrictEqual(bridge?.grant, { capability: "cap-for-subagent-worker-r1-1", supervisorSessionId: "sup-1" })
      assert.strictEqual(bridge?.runId, "r1")
      assert.strictEqual(a.env["ATOMIC_INTERCOM_GROUP"], "g1")
      assert.strictEqual(a.env["HOME"], "/home/me")
      assert.deepStrictEqual(log, [
        "authorize:subagent-worker-r1-1:g1",
        "authorize:subagent-worker-r1-2:g1",
        "authorize:subagent-worker-r1-3:lead"
      ])
    }))

  it.effect("C-SUP-7: a failed authorization fails the launch", () =>
    Effect.gen(function*() {
      const refusing: ChildAuthorizer = () =>
        Effect.fail(new SupervisorAuthorizationFailed({ childName: "subagent-worker-r1-1", reason: "the broker has no owner token for this session" }))
      const { children, runs } = yield* services({ authorize: refusing, env: inherited })
      yield* runs.start({ runId: "r1" })
      const error = yield* Effect.flip(children.launch({ runId: "r1", agent: "worker", index: 0 }))
      assert.strictEqual(error._tag, "SupervisorAuthorizationFailed")
    }))

  it.effect("C-GRP-11/C-SUP-16: a child without intercom gets no group and no grant; without a provider none is requested; nothing is inherited", () =>
    Effect.gen(function*() {
      const log: Log = []
      const { children, runs } = yield* services({ authorize: granting(log), env: inherited })
      yield* runs.start({ runId: "r1" })
      const plain = yield* children.launch({ runId: "r1", agent: "reader", index: 0, group: "team", tools: { tools: ["read"] } })
      assert.deepStrictEqual([plain.group, plain.grant, plain.decision._tag], [undefined, undefined, "NoGroup"])
      assert.deepStrictEqual(plain.env, { HOME: "/home/me" })
      assert.deepStrictEqual(log, [])

      const scope = yield* Scope.make()
      const noProvider = yield* services({ env: inherited }).pipe(Scope.provide(scope))
      yield* noProvider.runs.start({ runId: "r2" })
      const unsupervised = yield* noProvider.children.launch({ runId: "r2", agent: "worker", index: 0, group: "team" })
      assert.deepStrictEqual(unsupervised.env, { HOME: "/home/me", ATOMIC_INTERCOM_GROUP: "team" })
      assert.isUndefined(readChildBridge(unsupervised.env))
    }))
})
