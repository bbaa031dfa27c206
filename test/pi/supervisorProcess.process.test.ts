/**
 * A pi session as a supervisor (C-SUP-7…9, C-SUP-18), end to end in real pi:
 * a supervisor pi SDK session with the extension and a test launcher
 * extension (fixtures/launcher.ts); its model calls `launch_child`, which
 * gets a capability over pi's EventBus (`intercom:authorize-child`) and
 * starts a `pi --mode json` child with that environment in the background.
 * The child's model calls `contact_supervisor` `need_decision`; the question
 * reaches the supervisor as a triggered message, its model replies with
 * `intercom` `reply`, and the child's tool result — and what its model says
 * next — hold the reply. Also the abort path: a provider that cannot
 * authorize answers `{ ok: false }` and the launcher starts nothing; and the
 * request/response helper without a provider, or with a malformed request.
 */
import type { Message } from "@earendil-works/pi-ai"
import { createEventBus } from "@earendil-works/pi-coding-agent"
import { afterAll, assert, describe, it } from "vitest"
import {
  AUTHORIZE_CHILD_EVENT,
  type AuthorizeChildResult,
  readAuthorizeChildRequest,
  requestChildAuthorization
} from "../../src/pi/authorize.ts"
import { type PiProcess, type Record_, resultText, toolEnd } from "./cli.ts"
import { launcher } from "./fixtures/launcher.ts"
import { call, closeWorld, makeWorld, openPi, say, textOf, toolResults, writeConfig } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

/** Two pi sessions, a pi process and the broker on a loaded machine: generous, every wait is on an event. */
const SLOW = 120_000

const QUESTION = "Stable or experimental API?"
const REPLY = "Use the stable API."

/** The supervisor's model: replies to the child's question when it is the newest message, else says "ok". */
const supervisorTurn = (messages: ReadonlyArray<Message>) => {
  const last = messages.at(-1)
  return last !== undefined && last.role === "user" && textOf(last).includes("Subagent needs a supervisor decision.")
    ? call("intercom", { action: "reply", message: REPLY })
    : say("ok")
}

/** The text of the child's last assistant message. */
const assistantText = (record: Record_): string => {
  const message = record["message"]
  return typeof message === "object" && message !== null && Reflect.get(message, "role") === "assistant"
    ? textOf({ role: "assistant", content: Reflect.get(message, "content") })
    : ""
}

// Real pi processes with a scripted model: 10–20 s each on a loaded 2-core machine, so more room than the default 30 s.
describe("pi extension: a pi session supervises a pi child", { timeout: 90_000 }, () => {
  it("the supervisor launches a child with the provider's env; the child's need_decision is answered by the supervisor's model", async () => {
    let child: PiProcess | undefined
    let onLaunch: (started: PiProcess) => void = () => undefined
    const launched = new Promise<PiProcess>((resolve) => void (onLaunch = resolve))
    const supervisor = await openPi(world, {
      name: "planner",
      extensionFactories: [
        launcher({
          world,
          script: [
            { tool: "contact_supervisor", args: { reason: "need_decision", message: QUESTION } },
            { echo: "Supervisor decided: " }
          ],
          onLaunch: (started) => {
            child = started
            onLaunch(started)
          }
        })
      ]
    })
    try {
      // Resolves when the supervisor's reply ran, then its turn settled.
      let replied: { text: string; isError: boolean } | undefined
      const answered = new Promise<{ text: string; isError: boolean }>((resolve) =>
        supervisor.watch((event) => {
          if (event.type === "tool_execution_end" && event.toolName === "intercom") {
            replied = { text: resultText({ type: event.type, result: event.result }), isError: event.isError }
          }
          if (event.type !== "agent_settled" || replied === undefined) return false
          resolve(replied)
          return true
        })
      )
      supervisor.script(
        call("launch_child", { runId: "78f659a3", agent: "worker", index: 0, task: "decide the API" }),
        supervisorTurn,
        supervisorTurn,
        supervisorTurn,
        supervisorTurn
      )
      await supervisor.session().prompt("launch a worker")
      assert.strictEqual(toolResults(supervisor.session())[0], "launched subagent-worker-78f659a3-1")
      const running = await launched

      const reply = await answered
      assert.deepStrictEqual(reply, { text: "Reply sent to subagent-worker-78f659a3-1", isError: false })
      // The question reached the supervisor's model as a message of its own, with the child's identity.
      const asked = supervisor.calls.flatMap((messages) => messages).map(textOf).find((text) => text.includes(QUESTION))
      assert.include(asked, "Run: 78f659a3\nAgent: worker\nChild index: 0\nChild intercom target: subagent-worker-78f659a3-1")

      const exit = await running.closed
      assert.deepStrictEqual(exit, { code: 0, signal: null }, running.stderr())
      const contacted = running.records.find(toolEnd("contact_supervisor"))
      assert.isDefined(contacted, running.stderr())
      assert.strictEqual(resultText(contacted ?? { type: "none" }), REPLY)
      assert.strictEqual(contacted?.["isError"], false)
      const said = running.records.filter((record) => record.type === "message_end").map(assistantText).filter((text) => text !== "")
      assert.strictEqual(said.at(-1), `Supervisor decided: ${REPLY}`)
    } finally {
      child?.child.kill()
      await child?.closed
      await supervisor.quit()
    }
  }, SLOW)

  it("C-SUP-7: a provider that cannot authorize answers { ok: false }; the launcher starts nothing", async () => {
    writeConfig(world, { enabled: false })
    const answers: Array<AuthorizeChildResult | undefined> = []
    let started = 0
    const supervisor = await openPi(world, {
      extensionFactories: [
        launcher({ world, script: [], onAuthorized: (result) => void answers.push(result), onLaunch: () => void started++ })
      ]
    })
    try {
      supervisor.script(call("launch_child", { runId: "0c1d", agent: "worker", index: 0, task: "work" }), say("stopped"))
      await supervisor.session().prompt("launch a worker")
      assert.strictEqual(answers.length, 1)
      const answer = answers[0]
      assert.isTrue(answer !== undefined && !answer.ok && answer.error.includes("intercom is disabled"), JSON.stringify(answer))
      assert.match(toolResults(supervisor.session())[0] ?? "", /^not launched: .*intercom is disabled/)
      assert.strictEqual(started, 0)
    } finally {
      await supervisor.quit()
      writeConfig(world, {})
    }
  }, SLOW)

  it("requestChildAuthorization: undefined without a provider; a malformed request is answered with an error", async () => {
    const bus = createEventBus()
    assert.isUndefined(await requestChildAuthorization(bus, { runId: "r", agent: "a", index: 0 }))

    // A stub provider that reads requests as the extension's does, on a bare bus.
    bus.on(AUTHORIZE_CHILD_EVENT, (data) => {
      const read = readAuthorizeChildRequest(data)
      if (read._tag === "Malformed") return read.respond?.({ ok: false, error: read.error })
      read.request.claim?.()
      read.request.respond({ ok: true, sessionName: "x", env: {} })
    })
    const malformed = await requestChildAuthorization(bus, { runId: "r", agent: "a", index: -1 })
    assert.deepStrictEqual(malformed, {
      ok: false,
      error: "launch needs runId, agent (strings) and index (a non-negative integer)"
    })
    assert.deepStrictEqual(await requestChildAuthorization(bus, { runId: "r", agent: "a", index: 0 }), {
      ok: true,
      sessionName: "x",
      env: {}
    })
  })
})
