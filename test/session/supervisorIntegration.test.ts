/**
 * The supervisor channel end to end through the broker core (in memory,
 * TestClock): a supervisor session authorizes a child with `authorizeChild`,
 * a child session started from that environment (in another group) asks with
 * `contact_supervisor`, the supervisor sees the question in `pending` with
 * the run metadata and answers with `reply`, and the child's call returns the
 * answer (C-SUP-1…12, C-SUP-19, C-GRP-12, C-RPL-8).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Option, Queue } from "effect"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { readChildBridge } from "../../src/session/supervisorBridge.ts"
import { authorizeChild } from "../../src/session/SupervisorLaunch.ts"
import { layeredMember } from "../support/layeredMember.ts"
import { settle, step, withMemoryBroker } from "../support/memory.ts"

const SUP_ID = "5b5b5b5b-0000-4000-8000-000000000001"
const CHILD_ID = "c1c1c1c1-0000-4000-8000-000000000002"

const member = layeredMember

describe("contact_supervisor over the broker core", () => {
  it.effect("authorize, start the child from the environment, need_decision, pending on the supervisor, reply, the child has the answer", () =>
    Effect.gen(function*() {
      const broker = yield* withMemoryBroker({ idleExit: null })
      const supervisor = yield* member(broker, SUP_ID, "planner", { ownerToken: "a-long-random-owner-token" })
      const launched = yield* settle(
        authorizeChild({ runId: "Run-7", agent: "Worker", index: 0, supervisorTarget: "planner" }, { HOME: "/home/me" })
          .pipe(Effect.provideService(IntercomClient, supervisor.client))
      )
      assert.strictEqual(launched.sessionName, "subagent-worker-run-7-1")
      assert.strictEqual(launched.env["HOME"], "/home/me")

      const bridge = readChildBridge(launched.env)
      assert.isDefined(bridge?.grant)
      const child = yield* member(
        broker,
        CHILD_ID,
        launched.sessionName,
        { group: "run-7", supervisorGrant: bridge?.grant },
        { childBridge: bridge }
      )
      const tool = child.session.contactSupervisor
      if (tool === undefined) return assert.fail("the child has no contact_supervisor")

      const waiting = yield* step(tool({ reason: "need_decision", message: "Stable or experimental API?" }))
      // The supervisor's host got the child's message across groups.
      const inbound = Option.getOrThrow(yield* Queue.poll(supervisor.inbox))
      assert.strictEqual(inbound.from.name, "subagent-worker-run-7-1")
      assert.isTrue(inbound.expectsReply)
      assert.include(inbound.text, "Subagent needs a supervisor decision.\nRun: Run-7\nAgent: Worker\nChild index: 0\nChild intercom target: subagent-worker-run-7-1\n\nStable or experimental API?")

      const pending = yield* settle(supervisor.session.intercom({ action: "pending" }))
      assert.match(
        pending.text,
        /^\*\*Pending asks:\*\*\n- subagent-worker-run-7-1 · [0-9a-f-]{36} · asked \ds ago · expires in [^·]+ · Stable or experimental API\?\n  supervisor question \(need_decision\): run Run-7 · agent Worker · child subagent-worker-run-7-1 \(index 0\)\n  question: Stable or experimental API\?\n  reply: intercom/
      )
      const replied = yield* settle(
        supervisor.session.intercom({ action: "reply", to: "subagent-worker-run-7-1", message: "Stable." })
      )
      assert.deepStrictEqual([replied.text, replied.isError], ["Reply sent to subagent-worker-run-7-1", false])
      assert.isDefined(waiting.pollUnsafe(), "the reply ended the child's wait")
      const result = yield* Fiber.join(waiting)
      assert.deepStrictEqual([result.text, result.isError], ["Stable.", false])
      assert.strictEqual(result.details["from"], SUP_ID)

      // A progress update is accepted by the broker and delivered, with no wait.
      const progress = yield* settle(tool({ reason: "progress_update", message: "Half done." }))
      assert.deepStrictEqual([progress.text, progress.isError], ["Progress update sent to supervisor planner", false])
      const update = Option.getOrThrow(yield* Queue.poll(supervisor.inbox))
      assert.isFalse(update.expectsReply)
      assert.match(update.text, /Subagent progress update\.[\s\S]*\n\nHalf done\.$/)
      // The child's group stays closed to anything but the channel: a plain send from it to the supervisor is refused.
      const crossing = yield* settle(child.session.intercom({ action: "send", to: SUP_ID, message: "sneaking" }))
      assert.isTrue(crossing.isError)
    }))
})
