/**
 * `ParentJournal` on the in-memory bus: a parent process that ends with a
 * message, or a child's progress, waiting in its idle queue, and a restarted
 * one; and the broker's copy of a message the old process's agent took.
 * The file's own rules are in parentJournal.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientOptions } from "../../src/client/options.ts"
import { headless } from "../../src/session/Host.ts"
import { readChildBridge } from "../../src/session/supervisorBridge.ts"
import { authorizeChild } from "../../src/session/SupervisorLaunch.ts"
import * as ParentJournal from "../../src/workflow/ParentJournal.ts"
import { makeParentSession } from "../../src/workflow/ParentSession.ts"
import { assertDelivered } from "../support/assertions.ts"
import { message as brokerMessage, send } from "../support/broker.ts"
import { type MemoryBroker, settle, withMemoryBroker } from "../support/memory.ts"
import { A_ID, readButNeverConfirmed, sessionGeneration } from "../session/restartSupport.ts"
import { recordingAgent, tempDir } from "./parentJournalSupport.ts"
import { busMember, PEER } from "./support.ts"

/**
 * A planner process on `broker` (session `id`, session generation
 * `generation`) over the journal in `file`:
 * its agent (busy unless `idle`), parent session and session, in a Scope of
 * its own; `end` ends the process.
 */
const plannerProcess = (
  broker: MemoryBroker,
  file: string,
  id: string,
  generation: string,
  options: { readonly idle?: boolean; readonly client?: Partial<IntercomClientOptions> } = {}
) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    const recorded = recordingAgent()
    // The journal and its lock live as long as the process.
    const journal = yield* ParentJournal.make(file).pipe(Scope.provide(scope))
    const agent = options.idle === true ? recorded.agent : { ...recorded.agent, isIdle: Effect.succeed(false) }
    const parent = yield* makeParentSession(journal.agent(agent), { generation, busySteer: "queue" })
      .pipe(Scope.provide(scope))
    const member = yield* busMember(
      broker,
      id,
      "planner",
      (identity) => ParentJournal.withParentJournal(headless(identity, parent.deliver), journal),
      options.client
    )
    return { took: recorded.took, journal, parent, member, end: Effect.andThen(member.close, Scope.close(scope, Exit.void)) }
  })

describe("ParentJournal, a parent process that ends", () => {
  it.effect("C-DLV-14: a message waiting in a busy parent's idle queue when its process ended reaches the restarted parent's agent, once", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "planner.jsonl")
      const broker = yield* withMemoryBroker({ idleExit: null })
      const peer = yield* busMember(broker, PEER.id, "peer", (identity) => headless(identity, () => Effect.void))
      const PLANNER = "5b5b5b5b-0000-4000-8000-00000000aaaa"

      // The first process: its agent is busy all along, so the message waits in the idle queue.
      const first = yield* plannerProcess(broker, file, PLANNER, "planner-1")
      yield* settle(peer.session.intercom({ action: "send", to: "planner", message: "waiting" }))
      yield* settle(first.member.client.list)
      assert.deepStrictEqual(first.took, [])
      assert.strictEqual(yield* first.journal.pending, 1)
      yield* first.end

      // The restarted process: an idle agent.
      const second = yield* plannerProcess(broker, file, PLANNER, "planner-2", { idle: true })
      yield* settle(peer.session.intercom({ action: "send", to: "planner", message: "after" }))
      yield* settle(second.member.client.list)
      // Restored first, then the new one; each once.
      assert.deepStrictEqual(second.took, ["waiting", "after"])
      assert.strictEqual(yield* second.journal.pending, 0)
      yield* second.end
    }))

  it.effect("C-ORD-24: a child's progress waiting when the process ended is restored as the child's, with its source", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "planner.jsonl")
      const broker = yield* withMemoryBroker({ idleExit: null })
      const PLANNER = "5b5b5b5b-0000-4000-8000-00000000bbbb"
      const CHILD_ID = "c1c1c1c1-0000-4000-8000-00000000bbbb"

      const first = yield* plannerProcess(broker, file, PLANNER, "planner-1", { client: { ownerToken: "a-long-random-owner-token" } })
      const launched = yield* settle(
        authorizeChild({ runId: "run-7", agent: "worker", index: 0, supervisorTarget: "planner" }, {})
          .pipe(Effect.provideService(IntercomClient, first.member.client))
      )
      const bridge = readChildBridge(launched.env)
      const child = yield* busMember(
        broker,
        CHILD_ID,
        launched.sessionName,
        (identity) => headless(identity, () => Effect.void),
        { group: "run-7", supervisorGrant: bridge?.grant },
        { childBridge: bridge }
      )
      const contact = child.session.contactSupervisor
      if (contact === undefined) return assert.fail("the child has no contact_supervisor")
      yield* settle(contact({ reason: "progress_update", message: "Half done." }))
      yield* settle(first.member.client.list)
      assert.strictEqual((yield* first.parent.idleQueue.entries).length, 1)
      yield* first.end

      // The restarted process's agent is busy too: the restored progress waits in its idle queue.
      const second = yield* plannerProcess(broker, file, PLANNER, "planner-2")
      yield* settle(second.member.client.list)
      const queued = yield* second.parent.idleQueue.entries
      assert.strictEqual(queued.length, 1)
      assert.deepStrictEqual(queued[0]?.source, { subagentRunId: "run-7", subagentAgent: "worker", subagentIndex: 0 })
      assert.isTrue(queued[0]?.progress)
      yield* second.end
    }))

  it.effect("known issue 6: the broker's copy of a message the old process's agent took is dropped; a new message reaches the agent", () =>
    Effect.gen(function*() {
      const file = path.join(yield* tempDir, "bob.jsonl")
      const first = brokerMessage("read by the old process, taken by its agent, never confirmed")
      const { alice, bob } = yield* readButNeverConfirmed(first)
      // The old process's journal: its agent took the message.
      fs.writeFileSync(file, `${JSON.stringify({ c: { f: A_ID, m: first.id, t: 0 } })}\n`)
      const journal = yield* ParentJournal.make(file)
      const { agent, took } = recordingAgent()
      const parent = yield* makeParentSession(journal.agent(agent), { generation: "bob-2" })
      const identity = { name: "bob", cwd: "/work", model: "test-model" }
      yield* sessionGeneration(bob, ParentJournal.withParentJournal(headless(identity, parent.deliver), journal))
      yield* settle(bob.connect)
      assertDelivered(yield* send(alice.client, "bob", brokerMessage("sent after the restart")))
      // A round trip on bob after alice's acknowledged send: everything sent before it reached bob's session.
      yield* settle(bob.list)
      assert.deepStrictEqual(took, ["sent after the restart"])
    }))
})
