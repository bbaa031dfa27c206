/**
 * Durable supervisor questions from the command line (`questions-v1`) as real
 * processes: the auto-spawned broker keeps them in `intercom.db`; a child
 * (an in-test client bound to an in-test supervisor) asks, and `intercom
 * questions`, `intercom answer` and `intercom stop` act for the supervisor
 * session named with --session.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { asArray, get, jsonOf, makeAgent, runCli, supervisedChild } from "./support.ts"

const TIMEOUT = 60_000

describe("intercom questions / answer / stop", () => {
  it.live("lists a supervisor's questions, answers one to the waiting child, and refuses what it must", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      // The first command spawns the broker; nobody has asked anything yet.
      const empty = yield* runCli(agent, ["questions", "--session", "sup-cli-1"])
      assert.strictEqual(empty.code, 0, empty.stderr)
      assert.strictEqual(empty.stdout, "No questions.\n")
      assert.isTrue(fs.existsSync(path.join(agent.intercomDir, "intercom.db")))

      const { child, events, supervisor } = yield* supervisedChild(agent, "sup-cli-1", "child-cli-1")
      yield* child.client.askQuestion({ questionId: "q-cli", reason: "need_decision", text: "Subagent needs a supervisor decision.\n\nShip it?" })

      const listed = yield* runCli(agent, ["questions", "--session", "sup-cli-1", "--json"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      const page = jsonOf(listed)
      assert.strictEqual(get(page, "details", "total"), 1)
      assert.strictEqual(get(asArray(get(page, "details", "questions"))[0], "id"), "q-cli")
      const text = yield* runCli(agent, ["questions", "--session", "sup-cli-1"])
      assert.match(text.stdout, /^Questions 1–1 of 1:\n- q-cli · awaiting_input · need_decision · worker · /)

      const badLimit = yield* runCli(agent, ["questions", "--session", "sup-cli-1", "--limit", "500"])
      assert.strictEqual(badLimit.code, 2)
      assert.include(badLimit.stderr, "limit must be an integer from 1 to 100")
      const notMine = yield* runCli(agent, ["answer", "q-cli", "yes", "--session", "someone-else"])
      assert.strictEqual(notMine.code, 1)
      assert.include(notMine.stderr, `No question "q-cli" belongs to this supervisor session`)

      const answered = yield* runCli(agent, ["answer", "q-cli", "ship", "it", "--session", "sup-cli-1"])
      assert.strictEqual(answered.code, 0, answered.stderr)
      assert.match(answered.stdout, /^Answer saved for question q-cli and sent to worker/)
      assert.deepInclude(yield* events.next(undefined, "20 seconds"), { _tag: "Answered", questionId: "q-cli", answer: "ship it" })
      const conflict = yield* runCli(agent, ["answer", "q-cli", "do", "not", "--session", "sup-cli-1", "--json"])
      assert.strictEqual(conflict.code, 1)
      assert.strictEqual(get(jsonOf(conflict), "details", "error"), "QuestionRefused")
      assert.include(conflict.stdout, "already has a different saved answer. The original answer was retained.")

      yield* child.client.askQuestion({ questionId: "q-cli-2", reason: "need_decision", text: "Subagent needs a supervisor decision.\n\nAnd this?" })
      const stopped = yield* runCli(agent, ["stop", "q-cli-2", "--session", "sup-cli-1"])
      assert.strictEqual(stopped.code, 0, stopped.stderr)
      assert.match(stopped.stdout, /^Question q-cli-2 cancelled; worker's wait was stopped\.\n$/)
      assert.deepInclude(yield* events.next(undefined, "20 seconds"), { _tag: "Cancelled", questionId: "q-cli-2" })
      yield* child.close
      yield* supervisor.close
    }), TIMEOUT)
})
