/**
 * Peer-provided text on the terminal: `intercom watch` and `intercom topics`
 * in text mode print what peers control (names, statuses, message bodies,
 * topic texts) with no escape sequence left — ESC shown as `\u001b` — so a
 * peer cannot clear the screen, retitle the terminal or forge lines, through
 * any broker. The peer here is a raw client (test/support/broker.ts). Our
 * broker refuses a name holding a control character (label-controls.test.ts),
 * so its name carries what the broker takes and a terminal still acts on:
 * bidirectional overrides and isolates (ESC in a name is `terminalText`'s
 * unit tests' business); its status, which the broker does not check, ESC.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, TOPICS_V1 } from "../../src/protocol/features.ts"
import { send, withBroker } from "../support/broker.ts"
import { makeAgent, runCli, startWatch } from "./support.ts"

const TIMEOUT = 30_000
/** Clear the screen, retitle the terminal (OSC … BEL), move the cursor up. */
const EVIL = "\u001b[2J\u001b]0;owned\u0007\u001b[1A"
/** A right-to-left override and a left-to-right isolate: a name the broker takes that reorders a line. */
const BIDI = "\u202e\u2066"
/** Any control character but LF and TAB. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

describe("peer text on the terminal", () => {
  it.live("`watch` shows a peer's name with bidi overrides as escapes", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const broker = yield* withBroker({}, agent.agentDir)
      const watch = yield* startWatch(agent, "planner")
      const raw = yield* broker.session({ sessionId: "raw-1", name: `evil${BIDI}`, frame: { status: `busy${EVIL}` } })
      const ack = yield* send(raw.client, "planner", { id: "m-1", timestamp: 1, content: { text: "hello there" } })
      assert.strictEqual(ack.type, "delivered", JSON.stringify(ack))
      yield* watch.waitStdout(/hello there/)
      const shown = watch.stdout()
      assert.notMatch(shown, CONTROL, JSON.stringify(shown))
      assert.notMatch(shown, /[\u202e\u2066]/, JSON.stringify(shown))
      assert.include(shown, "[joined] evil\\u202e\\u2066 (raw-1)")
      assert.include(shown, "[message] evil\\u202e\\u2066")
    }), TIMEOUT)

  it.live("`topics` shows a publisher's name with bidi overrides as escapes", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const broker = yield* withBroker({}, agent.agentDir)
      const pub = yield* broker.session({
        sessionId: "pub-1",
        name: `pub${BIDI}`,
        frame: { features: [TOPICS_V1, GROUPS_V1] }
      })
      yield* pub.client.send({
        type: "topic_publish",
        requestId: "r1",
        record: { topic: "build", text: "build ok", event: "update", revision: 1, updatedAt: 1 }
      })
      const answer = yield* pub.client.next(["topic_published", "topic_failed"], (f) => f.requestId === "r1")
      assert.strictEqual(answer.type, "topic_published", JSON.stringify(answer))
      const shown = yield* runCli(agent, ["topics"])
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.notMatch(shown.stdout, CONTROL, JSON.stringify(shown.stdout))
      assert.notMatch(shown.stdout, /[\u202e\u2066]/, JSON.stringify(shown.stdout))
      assert.include(shown.stdout, "pub\\u202e\\u2066")
      assert.include(shown.stdout, "build ok")
    }), TIMEOUT)

  it.live("`topics --json` writes a publisher's right-to-left override and isolate as escapes, and parses back to them", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const broker = yield* withBroker({}, agent.agentDir)
      // JSON.stringify escapes only U+0000–U+001F: a bidi override would reach the terminal raw.
      const name = `pub${BIDI}`
      const pub = yield* broker.session({ sessionId: "pub-2", name, frame: { features: [TOPICS_V1, GROUPS_V1] } })
      yield* pub.client.send({
        type: "topic_publish",
        requestId: "r2",
        record: { topic: "build", text: "build ok", event: "update", revision: 1, updatedAt: 1 }
      })
      const answer = yield* pub.client.next(["topic_published", "topic_failed"], (f) => f.requestId === "r2")
      assert.strictEqual(answer.type, "topic_published", JSON.stringify(answer))
      const shown = yield* runCli(agent, ["topics", "--json"])
      assert.strictEqual(shown.code, 0, shown.stderr)
      assert.notMatch(shown.stdout, /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/, JSON.stringify(shown.stdout))
      assert.include(shown.stdout, String.raw`pub\u202e\u2066`)
      assert.include(JSON.stringify(JSON.parse(shown.stdout)), "build ok")
    }), TIMEOUT)
})
