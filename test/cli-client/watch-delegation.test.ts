/**
 * Commands run with the `--name` of a running `intercom watch` act through
 * it (docs/cli.md, "Names and session ids" 3) with every parameter they were
 * given, as real processes: a passive send arrives passive, a replace send is
 * staged, and `answer --session` answers the supervisor's durable question —
 * each `"via": "watch"`. The frame itself: test/cli/control.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { get, jsonOf, makeAgent, runCli, spawnCli, startWatch, supervisedChild } from "./support.ts"

const TIMEOUT = 60_000

describe("commands through a watch keep their parameters", () => {
  it.live("send --delivery passive and a replace send, as the watch boss, reach planner as they would without it", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const planner = yield* startWatch(agent, "planner")
      yield* startWatch(agent, "boss")

      const passive = yield* runCli(agent, ["send", "--delivery", "passive", "--name", "boss", "--json", "planner", "fyi only"])
      assert.strictEqual(passive.code, 0, passive.stderr)
      assert.strictEqual(get(jsonOf(passive), "via"), "watch")
      yield* planner.waitStdout(/\[message, passive\] boss \([^)]+\) · \S+\n\s+fyi only/)

      const args = ["send", "--delivery", "queue", "--queue-mode", "replace", "--thread", "build", "--name", "boss"]
      const replace = yield* runCli(agent, [...args, "planner", "build 10%"])
      assert.strictEqual(replace.code, 0, replace.stderr)
      assert.match(replace.stdout.trim(), /^Message queued for planner \(replace mode, thread "build": .+\)$/)
      yield* planner.waitStdout(/\[message, queued\] boss \([^)]+\) · \S+\n\s+build 10%/)
    }), TIMEOUT)

  it.live("answer <id> --session S through a watch answers S's durable question", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      yield* startWatch(agent, "boss") // spawns the broker the clients below dial
      const { child, events, supervisor } = yield* supervisedChild(agent, "sup-dlg-1", "child-dlg-1")
      yield* child.client.askQuestion({ questionId: "q-dlg", reason: "need_decision", text: "Ship it?" })

      const answered = yield* runCli(agent, ["answer", "q-dlg", "ship", "it", "--session", "sup-dlg-1", "--name", "boss", "--json"])
      assert.strictEqual(answered.code, 0, answered.stderr || answered.stdout)
      assert.strictEqual(get(jsonOf(answered), "via"), "watch")
      assert.match(String(get(jsonOf(answered), "text")), /^Answer saved for question q-dlg and sent to worker/)
      assert.deepInclude(yield* events.next(undefined, "20 seconds"), { _tag: "Answered", questionId: "q-dlg", answer: "ship it" })
      yield* child.close
      yield* supervisor.close
    }), TIMEOUT)

  it.live("pending --dir through a watch started without --dir prints reply lines with the command's --dir", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const planner = yield* startWatch(agent, "planner") // its agent dir from PI_CODING_AGENT_DIR
      yield* spawnCli(agent, ["ask", "--name", "asker", "planner", "q?"])
      const [, id = ""] = yield* planner.waitStdout(/\[ask\] asker \([0-9a-f]{8}\) · (\S+)\n/)

      // Another shell, without the watch's environment: the agent dir comes from --dir only.
      const pending = yield* runCli(agent, ["pending", "--dir", agent.agentDir, "--name", "planner"], {
        env: { PI_CODING_AGENT_DIR: "" }
      })
      assert.strictEqual(pending.code, 0, pending.stderr)
      assert.include(pending.stdout, `  reply: intercom reply --name planner --dir ${agent.agentDir} --reply-to ${id} "..."`)
    }), TIMEOUT)

  it.live("a default-name send to the default-name watch's own name says it ran through that watch and to pass --name", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* spawnCli(agent, ["watch"], { stdin: "pipe" })
      yield* watch.waitStdout(/^Watching as cli-tester /m)
      const send = yield* runCli(agent, ["send", "cli-tester", "hi"])
      assert.strictEqual(send.code, 1, send.stderr)
      assert.include(send.stderr, "Cannot message the current session")
      assert.include(send.stderr, `This command ran through the running \`intercom watch\` named "cli-tester" (the default name of this user)`)
      assert.include(send.stderr, "pass --name with another name")
    }), TIMEOUT)
})
