/**
 * `intercom watch` as a real process next to other `intercom` processes: the
 * two-terminal conversation (watch answers an ask typed on its stdin), a
 * second terminal answering through `reply --name`, `pending` listing an
 * unanswered ask, picking among several asks with `@…`, presence events and
 * inbound sends, and one name ↔ one stable session id.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { asArray, get, jsonLines, jsonOf, makeAgent, runCli, spawnCli, startWatch } from "./support.ts"

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

const ASK_LINE = (sender: string, question: string) =>
  new RegExp(`\\[ask\\] ${sender} \\([0-9a-f]{8}\\) · (\\S+)\\n {2}${question}\\n`)

describe("the two-terminal conversation", () => {
  it.live("watch --name planner answers an ask typed on its stdin; the asker prints the reply and exits 0; the watch logs what it showed", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const asker = yield* spawnCli(agent, ["ask", "planner", "Is the retry logic safe?"])
      const [, messageId] = yield* watch.waitStdout(ASK_LINE("cli-tester", "Is the retry logic safe\\?"))
      assert.isString(messageId)

      yield* watch.writeLine("Yes: every retry reuses the message id.")
      const outcome = yield* asker.waitExit()
      assert.deepStrictEqual(outcome, { code: 0, signal: null }, asker.stderr())
      assert.strictEqual(asker.stdout(), "**Reply from planner:**\nYes: every retry reuses the message id.\n")
      yield* watch.waitStdout(/\[done\] Reply sent to cli-tester\n/)

      // End of stdin: the watch leaves cleanly (unregisters) and exits 0.
      yield* watch.endStdin
      assert.deepStrictEqual(yield* watch.waitExit(), { code: 0, signal: null })
      const listed = yield* runCli(agent, ["list"])
      assert.notInclude(listed.stdout, "planner")

      // What it showed is in its handled log, so a restarted watch of the same name would not show it again.
      const logs = fs.readdirSync(path.join(agent.intercomDir, "watch"))
      assert.strictEqual(logs.length, 1)
      const logged = fs.readFileSync(path.join(agent.intercomDir, "watch", logs[0] ?? ""), "utf8")
      assert.include(logged, `"m":"${messageId}"`)
    }), TIMEOUT)

  it.live("a second terminal: pending --name planner lists the ask, reply --name planner answers it", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const asker = yield* spawnCli(agent, ["ask", "--json", "--name", "reviewer", "planner", "Ship it?"])
      const [, messageId = ""] = yield* watch.waitStdout(ASK_LINE("reviewer", "Ship it\\?"))

      const pending = yield* runCli(agent, ["pending", "--name", "planner"])
      assert.strictEqual(pending.code, 0, pending.stderr)
      assert.match(pending.stdout, new RegExp(`^\\*\\*Pending asks:\\*\\*\\n- reviewer · ${messageId} · asked \\d+s ago · expires in \\d+m( \\d+s)? · Ship it\\?\\n`))
      // The command that answers it, as a person at a shell types it (not the agent's tool call).
      const replyLine = `  reply: intercom reply --name planner --reply-to ${messageId} "..."\n`
      assert.isTrue(pending.stdout.endsWith(replyLine), pending.stdout)
      const pendingJson = jsonOf(yield* runCli(agent, ["pending", "--name", "planner", "--json"]))
      assert.strictEqual(pendingJson["via"], "watch")
      assert.strictEqual(get(asArray(get(pendingJson, "details", "asks"))[0], "messageId"), messageId)

      // The printed command, with the "..." filled in.
      const reply = yield* runCli(agent, ["reply", "--name", "planner", "--reply-to", messageId, "Ship", "it."])
      assert.strictEqual(reply.code, 0, reply.stderr)
      assert.strictEqual(reply.stdout, "Reply sent to reviewer\n")

      assert.deepStrictEqual(yield* asker.waitExit(), { code: 0, signal: null }, asker.stderr())
      const answer = jsonOf({ code: 0, signal: null, stdout: asker.stdout(), stderr: asker.stderr() })
      assert.deepInclude(answer, { ok: true, action: "ask", via: "session", reply: "Ship it." })
      assert.strictEqual(get(answer, "details", "messageId"), messageId)
      yield* watch.waitStdout(/\[done\] \(intercom reply\) Reply sent to reviewer\n/)

      // Answered: nothing pending any more, and nothing to answer.
      assert.strictEqual((yield* runCli(agent, ["pending", "--name", "planner"])).stdout, "No unresolved inbound asks.\n")
      const again = yield* runCli(agent, ["reply", "--name", "planner", "again"])
      assert.strictEqual(again.code, 1)
      assert.strictEqual(again.stderr.trim(), "No active intercom context to reply to")

      // All of that ran in the watch's session: one planner, under its stable id.
      const listed = jsonOf(yield* runCli(agent, ["list", "--json"]))
      const planners = asArray(get(listed, "details", "sessions")).filter((session) => get(session, "name") === "planner")
      assert.lengthOf(planners, 1)
      assert.match(String(get(planners[0], "id")), /^cli-[0-9a-f]{32}$/)
    }), TIMEOUT)

  it.live("reply --error answers an ask with a failure: the asker prints that text as its error and exits 1", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const asker = yield* spawnCli(agent, ["ask", "--name", "reviewer", "planner", "Deploy now?"])
      yield* watch.waitStdout(ASK_LINE("reviewer", "Deploy now\\?"))
      const reply = yield* runCli(agent, ["reply", "--name", "planner", "--error", "staging is down"])
      assert.strictEqual(reply.code, 0, reply.stderr)
      assert.strictEqual(reply.stdout, "Reply sent to reviewer\n")
      assert.deepStrictEqual(yield* asker.waitExit(), { code: 1, signal: null }, asker.stdout())
      assert.strictEqual(asker.stderr().trim(), "staging is down")
      assert.strictEqual(asker.stdout(), "")
    }), TIMEOUT)

  it.live("several pending asks: a plain line is refused, @name and @message-id pick one", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const alice = yield* spawnCli(agent, ["ask", "--name", "alice", "planner", "alice here"])
      const [, aliceAsk = ""] = yield* watch.waitStdout(ASK_LINE("alice", "alice here"))
      const bob = yield* spawnCli(agent, ["ask", "--name", "bob", "planner", "bob here"])
      yield* watch.waitStdout(ASK_LINE("bob", "bob here"))

      yield* watch.writeLine("to whom?")
      yield* watch.waitStderr(/\[error\] Multiple pending asks — specify `to`/)
      yield* watch.writeLine("@bob  for bob")
      assert.deepStrictEqual(yield* bob.waitExit(), { code: 0, signal: null })
      assert.strictEqual(bob.stdout(), "**Reply from planner:**\nfor bob\n")
      yield* watch.writeLine(`@${aliceAsk.slice(0, 8)} for alice`)
      assert.deepStrictEqual(yield* alice.waitExit(), { code: 0, signal: null })
      assert.strictEqual(alice.stdout(), "**Reply from planner:**\nfor alice\n")
      yield* watch.writeLine("@nobody hello")
      yield* watch.waitStderr(/\[error\] No pending ask from "nobody"/)
    }), TIMEOUT)
})

describe("acting through a watch", () => {
  it.live("an ask handed to a watch is withdrawn when its command goes away; --no-stdin keeps a watch without stdin", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      // stdin is /dev/null: without --no-stdin this watch would leave at once.
      const reviewer = yield* spawnCli(agent, ["watch", "--name", "reviewer", "--no-stdin"])
      yield* reviewer.waitStdout(/^Watching as reviewer .*\nCtrl-C leaves\.$/m)
      const planner = yield* startWatch(agent, "planner")

      // Run as planner: the ask goes out from the planner watch's session.
      const asker = yield* spawnCli(agent, ["ask", "--name", "planner", "reviewer", "Ready?"])
      const [, staleId = ""] = yield* reviewer.waitStdout(/\[ask\] planner \(cli-[0-9a-f]{4}\) · (\S+)\n {2}Ready\?\n/)
      assert.include((yield* runCli(agent, ["pending", "--name", "reviewer"])).stdout, "Ready?")
      yield* asker.kill("SIGKILL")
      yield* asker.waitExit()

      // The watch interrupted the ask, so its reply-waiter slot is free for the next one.
      const again = yield* spawnCli(agent, ["ask", "--name", "planner", "reviewer", "Now?"])
      const [, nowId = ""] = yield* reviewer.waitStdout(/\[ask\] planner \S+ · (\S+)\n {2}Now\?\n/)
      const answered = yield* runCli(agent, ["reply", "--name", "reviewer", "--reply-to", nowId, "now"])
      assert.strictEqual(answered.code, 0, answered.stderr)
      assert.deepStrictEqual(yield* again.waitExit(), { code: 0, signal: null }, again.stderr())
      assert.strictEqual(again.stdout(), "**Reply from reviewer:**\nnow\n")
      yield* planner.waitStdout(/\[done\] \(intercom ask\) \*\*Reply from reviewer:\*\*\n {2}now\n/)

      // …and it withdrew the first ask at the broker (cancel_ask, P64): a late answer is refused.
      const late = yield* runCli(agent, ["reply", "--name", "reviewer", "--reply-to", staleId, "late"])
      assert.strictEqual(late.code, 1)
      assert.strictEqual(
        late.stderr.trim(),
        `Reply to "planner" was not delivered: the broker no longer holds the ask ${staleId} (it expired, or planner withdrew it), ` +
          "so planner no longer waits for an answer. If planner still needs it, send it to planner as a plain message (a send without replyTo)."
      )
    }), TIMEOUT)
})

describe("intercom watch", () => {
  it.live("prints joins, status changes, inbound sends and departures (--json: one object per line)", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "observer", ["--json"])
      const ready = jsonLines(watch.stdout())[0]
      assert.deepInclude(ready, { event: "ready", name: "observer", sessions: [] })

      // Another program on the bus: joins, goes busy, leaves.
      const scope = yield* Scope.make()
      const reviewerId = randomUUID()
      const now = Date.now()
      const context = yield* Layer.buildWithScope(
        IntercomClient.layer({
          agentDir: agent.agentDir,
          intercomDir: agent.intercomDir,
          socketPath: agent.socketPath,
          sessionId: reviewerId,
          registration: { name: "reviewer", cwd: "/tmp", model: "m", pid: process.pid, startedAt: now, lastActivity: now, status: "idle" },
          launch: false
        }),
        scope
      )
      const reviewer = Context.get(context, IntercomClient)
      yield* reviewer.connect
      yield* watch.waitStdout(/"event":"joined".*"name":"reviewer"/)
      yield* reviewer.presence({ status: "thinking" })
      yield* watch.waitStdout(/"event":"status".*"previousStatus":"idle"/)

      const sent = yield* runCli(agent, ["send", "--name", "sender", "observer", "hi there"])
      assert.strictEqual(sent.code, 0, sent.stderr)
      yield* watch.waitStdout(/"event":"message"/)
      yield* Scope.close(scope, Exit.void)
      yield* watch.waitStdout(new RegExp(`"event":"left","sessionId":"${reviewerId}","name":"reviewer"`))

      const events = jsonLines(watch.stdout())
      const message = events.find((event) => event["event"] === "message")
      assert.deepInclude(message, { expectsReply: false, text: "hi there" })
      assert.strictEqual(get(message, "from", "name"), "sender")
      const status = events.find((event) => event["event"] === "status")
      assert.strictEqual(get(status, "session", "status"), "thinking")
      const names = events.filter((event) => event["event"] === "joined")
        .map((event) => get(event, "session", "name"))
      assert.includeMembers(names, ["reviewer", "sender"])
    }), TIMEOUT)

  it.live("text mode shows the same events as lines", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "observer")
      yield* runCli(agent, ["send", "--name", "sender", "observer", "two\nlines"])
      yield* watch.waitStdout(/\[joined\] sender \([0-9a-f]{8}\) · \S+\n/)
      yield* watch.waitStdout(/\[message\] sender \([0-9a-f]{8}\) · \S+\n {2}two\n {2}lines\n/)
      yield* watch.waitStdout(/\[left\] sender \([0-9a-f]{8}\)\n/)
    }), TIMEOUT)

  it.live("one name, one session: a second watch of the name is refused; a restart keeps the stable id; SIGINT leaves", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const first = yield* startWatch(agent, "planner")
      const [, id = ""] = yield* first.waitStdout(/^Watching as planner \(session (cli-[0-9a-f]{32})\)/m)

      const second = yield* runCli(agent, ["watch", "--name", "Planner"])
      assert.strictEqual(second.code, 1)
      assert.include(second.stderr, `An intercom watch named "Planner" is already running`)
      yield* first.writeLine("@x still here?") // the first watch is untouched
      yield* first.waitStderr(/No pending ask from "x"/)

      yield* first.kill("SIGINT")
      assert.deepStrictEqual(yield* first.waitExit(), { code: 0, signal: null })
      const listed = yield* runCli(agent, ["list"])
      assert.notInclude(listed.stdout, "planner", "the watch unregistered")

      const restarted = yield* startWatch(agent, "planner")
      const [, again] = yield* restarted.waitStdout(/^Watching as planner \(session (cli-[0-9a-f]{32})\)/m)
      assert.strictEqual(again, id)
    }), TIMEOUT)
})

describe("an ask whose target leaves", () => {
  it.live("exits 1 with the contract text and the name the ask went to", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const asker = yield* spawnCli(agent, ["ask", "planner", "Still there?"])
      yield* watch.waitStdout(ASK_LINE("cli-tester", "Still there\\?"))
      yield* watch.kill("SIGTERM")
      assert.deepStrictEqual(yield* asker.waitExit(), { code: 1, signal: null }, asker.stderr())
      assert.match(asker.stderr(), /^Reply peer disconnected before answering: \S+\. "planner" left the intercom before it answered\.$/m)
    }), TIMEOUT)
})
