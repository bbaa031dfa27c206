/**
 * Peer-provided text on the terminal: `intercom watch` and `intercom topics`
 * in text mode print what peers control (names, statuses, message bodies,
 * topic texts) with no escape sequence left — ESC shown as `\u001b` — so a
 * peer cannot clear the screen, retitle the terminal or forge lines, through
 * any broker. The peer here is a raw client (test/support/broker.ts), whose
 * name the broker does not check for control characters.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { GROUPS_V1, TOPICS_V1 } from "../../src/protocol/features.ts"
import { send, withBroker } from "../support/broker.ts"
import { makeAgent, runCli, startWatch } from "./support.ts"

const TIMEOUT = 30_000
/** Clear the screen, retitle the terminal (OSC … BEL), move the cursor up. */
const EVIL = "\u001b[2J\u001b]0;owned\u0007\u001b[1A"
/** Any control character but LF and TAB. */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/

describe("peer text on the terminal", () => {
  it.live("`watch` shows a peer's name and status with ESC and BEL as escapes", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const broker = yield* withBroker({}, agent.agentDir)
      const watch = yield* startWatch(agent, "planner")
      const raw = yield* broker.session({ sessionId: "raw-1", name: `evil${EVIL}`, frame: { status: `busy${EVIL}` } })
      const ack = yield* send(raw.client, "planner", { id: "m-1", timestamp: 1, content: { text: "hello there" } })
      assert.strictEqual(ack.type, "delivered", JSON.stringify(ack))
      yield* watch.waitStdout(/hello there/)
      const shown = watch.stdout()
      assert.notMatch(shown, CONTROL, JSON.stringify(shown))
      assert.include(shown, "[joined] evil\\u001b[2J\\u001b]0;owned\\u0007\\u001b[1A (raw-1)")
      assert.include(shown, "[message] evil\\u001b[2J")
    }), TIMEOUT)

  it.live("`topics` shows a publisher's name with ESC and BEL as escapes", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const broker = yield* withBroker({}, agent.agentDir)
      const pub = yield* broker.session({
        sessionId: "pub-1",
        name: `pub${EVIL}`,
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
      assert.include(shown.stdout, "pub\\u001b[2J\\u001b]0;owned\\u0007\\u001b[1A")
      assert.include(shown.stdout, "build ok")
    }), TIMEOUT)

  it.live("`topics --json` writes a publisher's C1 CSI and right-to-left override as escapes, and parses back to them", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const broker = yield* withBroker({}, agent.agentDir)
      // JSON.stringify escapes only U+0000–U+001F: the 8-bit CSI and a bidi override would reach the terminal raw.
      const name = "pub\u009b2J\u202e"
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
      assert.include(shown.stdout, String.raw`pub\u009b2J\u202e`)
      assert.include(JSON.stringify(JSON.parse(shown.stdout)), "build ok")
    }), TIMEOUT)
})
