/**
 * The composition on the bus (broker core in memory, TestClock): a stage
 * session's runtime hands its messages to `Stages.deliver` and retries what
 * the stage could not take (C-DLV-12, C-ORD-5); a supervisor session built
 * with `makeParentSession` receives a bridged child's messages with their
 * source (C-ORD-24) and orders them before the child's terminal (C-ORD-25).
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { headless } from "../../src/session/Host.ts"
import { readChildBridge } from "../../src/session/supervisorBridge.ts"
import { authorizeChild } from "../../src/session/SupervisorLaunch.ts"
import type { ParentChat } from "../../src/workflow/ClosedStage.ts"
import type { InboundEntry } from "../../src/workflow/InboundEntry.ts"
import { makeForegroundDetach } from "../../src/workflow/ForegroundDetach.ts"
import { makeParentSession } from "../../src/workflow/ParentSession.ts"
import { Runs } from "../../src/workflow/Runs.ts"
import { StageInsertFailed } from "../../src/workflow/errors.ts"
import { stageHostDeliver } from "../../src/workflow/StageInbound.ts"
import { type StageEntry } from "../../src/workflow/StageEntry.ts"
import { Stages } from "../../src/workflow/Stages.ts"
import { settle, withMemoryBroker } from "../support/memory.ts"
import { busMember as member, label, type Log, recordingReplyError } from "./support.ts"

const ignore = () => Effect.void

describe("the workflow composition on the bus", () => {
  it.effect("C-ORD-1/C-ORD-5/C-DLV-12: a stage session's messages go through Stages.deliver; one the stage refused is retried by the session runtime until the stage takes it", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const log: Log = []
      const scope = yield* Effect.scope
      const services = yield* Layer.buildWithScope(Stages.layer.pipe(Layer.provideMerge(Runs.layer())), scope)
      const runs = Context.get(services, Runs)
      const stages = Context.get(services, Stages)
      yield* runs.start({ runId: "run-1" })
      let refusals = 1
      const parent: ParentChat = { deliver: (entry: StageEntry) => Effect.sync(() => log.push(`parent:${label(entry)}`)) }
      const detach = yield* makeForegroundDetach({ generation: "stage-g1" })
      yield* stages.open({ runId: "run-1", stageId: "review" }, {
        session: {
          isBusy: Effect.succeed(false),
          insert: (entry) =>
            Effect.suspend(() => {
              if (refusals > 0) {
                refusals--
                log.push(`refused:${label(entry)}`)
                return Effect.fail(new StageInsertFailed({ reason: "the model is compacting" }))
              }
              log.push(`insert:${label(entry)}`)
              return Effect.void
            })
        },
        handoff: detach.stageHandoff,
        replyError: recordingReplyError(log),
        parent
      })
      yield* member(broker, "stage-1", "review", (identity) => headless(identity, stageHostDeliver(stages, "review")))
      const peer = yield* member(broker, "peer-1", "peer", (identity) => headless(identity, ignore))

      yield* settle(peer.session.intercom({ action: "send", to: "review", message: "first" }))
      assert.strictEqual(log.length, 1)
      assert.match(log[0] ?? "", /^refused:/)
      // The runtime retries a refused hand-off every 100 ms (C-DLV-12): the non-ask is admitted on retry (C-ORD-5).
      yield* TestClock.adjust("100 millis")
      assert.strictEqual(log.length, 2)
      assert.match(log[1] ?? "", /^insert:/)
      assert.strictEqual(log[0]?.slice("refused:".length), log[1]?.slice("insert:".length))

      // After close, never back into the stage: the parent chat gets it (C-ORD-6).
      yield* stages.close("review", Effect.sync(() => log.push("snapshot")))
      yield* settle(peer.session.intercom({ action: "send", to: "review", message: "late" }))
      assert.strictEqual(log[2], "snapshot")
      assert.match(log[3] ?? "", /^parent:/)
      assert.strictEqual(log.length, 4)
    }))

  it.effect("C-ORD-24/C-ORD-25: a supervisor built with makeParentSession gets a bridged child's progress with its source, and hands it over before the child's terminal", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const log: Log = []
      const received: Array<InboundEntry<unknown>> = []
      const parent = yield* makeParentSession<string>({
        isIdle: Effect.succeed(false),
        deliverBatch: (batch) => Effect.sync(() => void log.push(`batch:${batch.length}`)),
        surface: () => Effect.void,
        passive: () => Effect.void,
        dispatchTerminal: (batch) =>
          Effect.sync(() => {
            received.push(...batch.prelude)
            log.push(`terminal:${batch.prelude.length}:${batch.terminal.notice}`)
          })
      }, { generation: "sup-g1", busySteer: "queue" })
      const supervisor = yield* member(
        broker,
        "5b5b5b5b-0000-4000-8000-000000000001",
        "planner",
        (identity) => headless(identity, parent.deliver),
        { ownerToken: "a-long-random-owner-token" }
      )
      const launched = yield* settle(
        authorizeChild({ runId: "run-7", agent: "worker", index: 0, supervisorTarget: "planner" }, {})
          .pipe(Effect.provideService(IntercomClient, supervisor.client))
      )
      const bridge = readChildBridge(launched.env)
      const child = yield* member(
        broker,
        "c1c1c1c1-0000-4000-8000-000000000002",
        launched.sessionName,
        (identity) => headless(identity, ignore),
        { group: "run-7", supervisorGrant: bridge?.grant },
        { childBridge: bridge }
      )
      const contact = child.session.contactSupervisor
      if (contact === undefined) return assert.fail("the child has no contact_supervisor")
      yield* settle(contact({ reason: "progress_update", message: "Half done." }))
      const queued = yield* parent.idleQueue.entries
      assert.strictEqual(queued.length, 1)
      assert.deepStrictEqual(queued[0]?.source, { subagentRunId: "run-7", subagentAgent: "worker", subagentIndex: 0 })
      assert.isTrue(queued[0]?.progress)

      const now = yield* Clock.currentTimeMillis
      const outcome = yield* parent.terminal({
        owner: "planner",
        runId: "run-7",
        source: launched.sessionName,
        terminalAt: now,
        status: "completed",
        child: { ids: ["c1c1c1c1-0000-4000-8000-000000000002"], names: [launched.sessionName] },
        notice: "worker completed"
      })
      assert.deepStrictEqual(outcome, { _tag: "Admitted", prelude: 1 })
      assert.deepStrictEqual(log, ["terminal:1:worker completed"])
      assert.strictEqual(received[0]?.messageId, queued[0]?.messageId)
      assert.deepStrictEqual(yield* parent.idleQueue.entries, [])
    }))
})
