/**
 * The extension in real `pi --mode json` processes (few and fast: each pi
 * process costs about a second):
 * - two processes and the broker the extension spawns: A asks B, B's model
 *   gets the ask steered after its running tool and replies, A's tool result
 *   holds the reply;
 * - a message in hand when pi is killed with SIGKILL is restored, once, when
 *   the saved session is resumed (C-DLV-14);
 * - `pi install <dir>` then `pi --mode json` runs the packaged extension.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { PI_CLI, type Record_, resultText, runPi, toolEnd } from "./cli.ts"
import { closeWorld, EXTENSION, INTERCOM_BIN, makeWorld, ROOT, textOf } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

const customText = (record: Record_): string => {
  const message = record["message"]
  if (typeof message !== "object" || message === null || Reflect.get(message, "role") !== "custom") return ""
  const content: unknown = Reflect.get(message, "content")
  return typeof content === "string" ? content : ""
}

// Real pi processes with a scripted model: 10–20 s each on a loaded 2-core machine, so more room than the default 30 s.
describe("pi extension in pi processes", { timeout: 90_000 }, () => {
  it("two pi --mode json processes: A asks B; B's model gets the ask after its tool and replies; A's tool result holds it", async () => {
    const b = runPi(world, [
      { tool: "intercom", args: { action: "status" } },
      { tool: "wait_for_intercom", args: {} },
      { tool: "intercom", args: { action: "reply", message: "42" } },
      { text: "done" }
    ], ["--no-session", "--name", "bravo", "serve"], { extensions: [EXTENSION] })
    await b.waitFor("B on the bus", toolEnd("intercom"))
    const a = runPi(world, [
      // B is busy in a tool (accepts_asks:false): an explicit delivery keeps the ask waiting (C-HLT-6).
      { tool: "intercom", args: { action: "ask", to: "bravo", message: "What is 6 * 7?", delivery: "steer" } },
      { text: "thanks" }
    ], ["--no-session", "ask bravo"], { extensions: [EXTENSION] })
    const answered = await a.waitFor("A's ask result", toolEnd("intercom"))
    assert.strictEqual(resultText(answered), "**Reply from bravo:**\n42")
    const steered = await b.waitFor("the ask reaching B", (record) => record.type === "message_end" && customText(record) !== "")
    assert.match(customText(steered), /To reply, use the intercom tool[\s\S]*What is 6 \* 7\?$/)
    assert.match(resultText(await b.waitFor("B's reply", toolEnd("intercom", 2))), /^Reply sent to /)
    assert.deepStrictEqual(await a.closed, { code: 0, signal: null }, a.stderr())
    assert.deepStrictEqual(await b.closed, { code: 0, signal: null }, b.stderr())
  })

  it("kill -9 with a message in hand: resuming the saved session delivers it exactly once", async () => {
    const sessions = path.join(world.root, "sessions")
    const b = runPi(world, [
      { tool: "intercom", args: { action: "status" } },
      { tool: "wait_for_intercom", args: { until: "abort" } }
    ], ["--session-dir", sessions, "work"], { extensions: [EXTENSION] })
    const header = await b.waitFor("B's session header", (record) => record.type === "session")
    const bId = String(header["id"])
    await b.waitFor("B on the bus", toolEnd("intercom"))
    execFileSync(process.execPath, [INTERCOM_BIN, "send", bId, "survive the crash", "--dir", world.agentDir], {
      env: { ...process.env, PI_CODING_AGENT_DIR: world.agentDir }
    })
    // The message is in pi's queue (checkpointed first): kill pi before it reaches the model.
    await b.waitFor("the message in pi's queue", (record) => record.type === "tool_execution_update")
    b.child.kill("SIGKILL")
    assert.strictEqual((await b.closed).signal, "SIGKILL")

    const resumed = runPi(world, [{ text: "resumed" }], ["--session-dir", sessions, "--session", bId, "go on"], {
      extensions: [EXTENSION]
    })
    assert.deepStrictEqual(await resumed.closed, { code: 0, signal: null }, resumed.stderr())
    const file = fs.readdirSync(sessions).find((name) => name.includes(bId))
    assert.isDefined(file)
    const entries = fs.readFileSync(path.join(sessions, file ?? ""), "utf8").trim().split("\n").map((line): unknown =>
      JSON.parse(line)
    )
    const delivered = entries.filter((entry) =>
      typeof entry === "object" && entry !== null && Reflect.get(entry, "type") === "custom_message" &&
      textOf({ role: "custom", content: Reflect.get(entry, "content") }).endsWith("survive the crash")
    )
    assert.strictEqual(delivered.length, 1, "delivered exactly once")
  })

  it("pi install <dir>, then pi --mode json runs the packaged extension (and lists it)", async () => {
    const env = { ...process.env, PI_CODING_AGENT_DIR: world.agentDir, PI_OFFLINE: "1", PI_SKIP_VERSION_CHECK: "1" }
    execFileSync(process.execPath, [PI_CLI, "install", ROOT], { env, cwd: world.cwd, stdio: "pipe" })
    const listed = execFileSync(process.execPath, [PI_CLI, "list"], { env, cwd: world.cwd, encoding: "utf8" })
    assert.include(listed, path.basename(ROOT))
    const pi = runPi(world, [{ tool: "intercom", args: { action: "status" } }, { text: "ok" }], ["--no-session", "status"])
    const status = await pi.waitFor("the packaged tool's result", toolEnd("intercom"))
    assert.match(resultText(status), /^\*\*Intercom Status:\*\*\nConnected: Yes\nSession ID: /)
    assert.deepStrictEqual(await pi.closed, { code: 0, signal: null }, pi.stderr())
    execFileSync(process.execPath, [PI_CLI, "remove", ROOT], { env, cwd: world.cwd, stdio: "pipe" })
  })
})
