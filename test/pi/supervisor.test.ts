/**
 * `contact_supervisor` in real pi sessions (C-SUP-1…5, C-SUP-11): a
 * supervisor (an `IntercomSession` over an `IntercomClient` with an owner
 * token, as a launcher would run it) authorizes a child with
 * `authorizeChild`; a pi SDK session started with that environment gets
 * the `contact_supervisor` tool, its scripted model asks `need_decision`,
 * the supervisor finds the question in `pending` and replies, and the child's
 * tool result is the reply; then an `interview_request` whose JSON reply
 * lands in the result's `details.structuredReply`. A pi session without the
 * bridge environment has no such tool.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Queue from "effect/Queue"
import { randomUUID } from "node:crypto"
import { afterAll, assert, describe, it } from "vitest"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { intercomPaths } from "../../src/config/agentDir.ts"
import { Host, headless, type Inbound } from "../../src/session/Host.ts"
import { IntercomSession, sessionRegistration } from "../../src/session/IntercomSession.ts"
import { SUBAGENT_BRIDGE_ENV } from "../../src/session/supervisorBridge.ts"
import { authorizeChild } from "../../src/session/SupervisorLaunch.ts"
import { call, closeWorld, makeWorld, openPi, type Pi, say, textOf, toolResults } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

/** The supervisor: a headless session that registered with an owner token. */
const makeSupervisor = () => {
  const inbox = Effect.runSync(Queue.unbounded<Inbound>())
  const paths = intercomPaths(world.agentDir)
  const sessionId = randomUUID()
  const identity = { name: "planner", cwd: world.cwd, model: "test-model" }
  const client = IntercomClient.layer({
    agentDir: paths.agentDir,
    intercomDir: paths.intercomDir,
    socketPath: paths.socketPath,
    sessionId,
    registration: sessionRegistration({ sessionId, identity, pid: process.pid, startedAt: 0 }),
    launch: { _tag: "Default" },
    ownerToken: randomUUID()
  })
  const layer = IntercomSession.layer().pipe(
    Layer.provideMerge(Layer.merge(client, Host.layer(headless(identity, (inbound) => Queue.offer(inbox, inbound)))))
  )
  return { sessionId, inbox, runtime: ManagedRuntime.make(layer) }
}

/** Opens a pi session with `env` added to the process environment while pi loads the extension. */
const openWithEnv = async (env: Record<string, string>): Promise<Pi> => {
  const names = Object.keys(env)
  const saved = names.map((name) => [name, process.env[name]] as const)
  Object.assign(process.env, env)
  try {
    return await openPi(world)
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}

const bridgeVariables = (env: Record<string, string>): Record<string, string> => {
  const names = new Set<string>(Object.values(SUBAGENT_BRIDGE_ENV).flat())
  return Object.fromEntries(Object.entries(env).filter(([name]) => names.has(name)))
}

describe("pi extension: contact_supervisor", () => {
  it("a child started with authorizeChild's environment asks need_decision; the supervisor replies; the tool result is the reply", async () => {
    const supervisor = makeSupervisor()
    let child: Pi | undefined
    try {
      const launch = await supervisor.runtime.runPromise(
        authorizeChild({ runId: "78f659a3", agent: "worker", index: 0, supervisorTarget: "planner" })
      )
      assert.strictEqual(launch.sessionName, "subagent-worker-78f659a3-1")
      child = await openWithEnv(bridgeVariables(launch.env))
      assert.include(child.session().getAllTools().map((tool) => tool.name), "contact_supervisor")

      child.script(call("contact_supervisor", { reason: "need_decision", message: "Stable or experimental API?" }), say("done"))
      const running = child.session().prompt("decide")
      // The barrier: the child's question reached the supervisor's host.
      const question = await supervisor.runtime.runPromise(Queue.take(supervisor.inbox))
      assert.strictEqual(question.from.name, "subagent-worker-78f659a3-1")
      assert.include(
        question.text,
        "Subagent needs a supervisor decision.\nRun: 78f659a3\nAgent: worker\nChild index: 0\nChild intercom target: subagent-worker-78f659a3-1\n\nStable or experimental API?"
      )
      const pending = await supervisor.runtime.runPromise(
        Effect.flatMap(IntercomSession, (session) => session.intercom({ action: "pending" }))
      )
      assert.include(pending.text, "supervisor question (need_decision): run 78f659a3 · agent worker · child subagent-worker-78f659a3-1 (index 0)")
      const replied = await supervisor.runtime.runPromise(
        Effect.flatMap(IntercomSession, (session) =>
          session.intercom({ action: "reply", replyTo: question.message.id, message: "Use the stable API." }))
      )
      assert.deepStrictEqual([replied.text, replied.isError], ["Reply sent to subagent-worker-78f659a3-1", false])
      await running
      assert.deepStrictEqual(toolResults(child.session()), ["Use the stable API."])

      // interview_request: the reply is parsed into details; the visible text stays raw (C-INT-7).
      const interview = {
        title: "Retry policy",
        questions: [{ id: "retries", type: "single", question: "How many retries?", options: ["1", "3"] }]
      }
      child.script(call("contact_supervisor", { reason: "interview_request", interview }), say("done"))
      const interviewing = child.session().prompt("interview")
      const asked = await supervisor.runtime.runPromise(Queue.take(supervisor.inbox))
      assert.include(asked.text, "Subagent requests a structured supervisor interview.")
      const answer = "```json\n{ \"responses\": [{ \"id\": \"retries\", \"value\": \"3\" }] }\n```"
      await supervisor.runtime.runPromise(
        Effect.flatMap(IntercomSession, (session) =>
          session.intercom({ action: "reply", replyTo: asked.message.id, message: answer }))
      )
      await interviewing
      const result = child.session().messages.filter((message) => message.role === "toolResult").at(-1)
      assert.strictEqual(result === undefined ? "" : textOf(result), answer)
      const details: unknown = result !== undefined && "details" in result ? result.details : undefined
      assert.deepStrictEqual(
        typeof details === "object" && details !== null ? Reflect.get(details, "structuredReply") : undefined,
        { responses: [{ id: "retries", value: "3" }] }
      )
    } finally {
      await child?.quit()
      await supervisor.runtime.dispose()
    }
  })

  it("a pi session without the bridge environment has no contact_supervisor", async () => {
    const plain = await openPi(world)
    try {
      const names = plain.session().getAllTools().map((tool) => tool.name)
      assert.include(names, "intercom")
      assert.notInclude(names, "contact_supervisor")
    } finally {
      await plain.quit()
    }
  })
})
