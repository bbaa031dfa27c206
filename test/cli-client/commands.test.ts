/**
 * The short-lived client commands as real processes: `list`, `send`, `ask`,
 * `reply`, `pending`, `status` — happy paths, failure exit codes (1 with the
 * broker's or session's reason, 2 for bad usage), and `--json` output. Each
 * test has its own agent dir; the first command spawns the broker.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { asArray, get, jsonOf, makeAgent, runCli, startWatch } from "./support.ts"

/** Each test runs several CLI processes; the machine may be shared. */
const TIMEOUT = 60_000

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/

describe("intercom list / status", () => {
  it.live("list spawns the broker and shows this session; --json parses", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const listed = yield* runCli(agent, ["list", "--name", "lister"])
      assert.strictEqual(listed.code, 0, listed.stderr)
      // The health columns (health-v1, C-HLT-1) and the self row's guidance (C-HLT-7).
      assert.match(
        listed.stdout,
        /^\*\*Current session:\*\*\n• lister \([0-9a-f]{8}\) — .* \(intercom-cli\) \[self, idle, state:idle, accepts_asks:true, pending_asks:0, last_intercom_activity:none, last_seen:\d+s ago\]\n  ↳ self target unavailable; choose a peer from Other sessions; use pending\/reply for inbound asks\n/
      )
      assert.include(listed.stdout, "**Other sessions:**\nNo other sessions connected.")
      assert.isTrue(fs.existsSync(agent.pidFile), "the first command spawned a broker")

      const json = yield* runCli(agent, ["list", "--json"])
      assert.strictEqual(json.code, 0, json.stderr)
      const result = jsonOf(json)
      assert.strictEqual(result["ok"], true)
      assert.strictEqual(result["action"], "list")
      const sessions = asArray(get(result, "details", "sessions"))
      assert.lengthOf(sessions, 1, "the lister has left")
      assert.strictEqual(get(sessions[0], "name"), "cli-tester", "default name cli-<user>")
    }), TIMEOUT)

  it.live("status reports the connection, the session id and the active sessions", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const status = yield* runCli(agent, ["status"])
      assert.strictEqual(status.code, 0, status.stderr)
      assert.match(status.stdout, /^\*\*Intercom Status:\*\*\nConnected: Yes\nSession ID: \S+\nGroup: default\nActive sessions: 1\n\n\*\*Current session:\*\*\n• /)

      yield* startWatch(agent, "planner")
      const json = jsonOf(yield* runCli(agent, ["status", "--json"]))
      assert.strictEqual(json["ok"], true)
      assert.deepInclude(json, { action: "status", via: "session" })
      assert.strictEqual(get(json, "details", "connected"), true)
      assert.strictEqual(get(json, "details", "activeSessions"), 2, "the watch and this command")
    }), TIMEOUT)
})

describe("intercom list health columns", () => {
  it.live("a watch is listed idle and accepting asks; after a send to it, its last intercom activity has an age", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      // The watch lists before it prints its ready line, so its health reached the broker first.
      yield* startWatch(agent, "planner")
      const before = yield* runCli(agent, ["list", "--name", "lister"])
      assert.strictEqual(before.code, 0, before.stderr)
      assert.match(
        before.stdout,
        /\n• planner \([^)]+\) — .* \[same cwd, idle, state:idle, accepts_asks:true, pending_asks:0, last_intercom_activity:none, last_seen:\d+s ago\]\n  ↳ idle: send \(steer\) starts its turn now;/
      )
      const sent = yield* runCli(agent, ["send", "--name", "lister", "planner", "hello"])
      assert.strictEqual(sent.code, 0, sent.stderr)
      const after = yield* runCli(agent, ["list", "--name", "lister"])
      assert.match(after.stdout, /\n• planner \([^)]+\) — .* accepts_asks:true, pending_asks:0, last_intercom_activity:\d+[smh] ago, /)
    }), TIMEOUT)
})

describe("intercom send / ask failures", () => {
  it.live("send to an unknown target exits 1 with the broker's reason; --json says the same", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const sent = yield* runCli(agent, ["send", "nobody", "hello"])
      assert.strictEqual(sent.code, 1)
      assert.strictEqual(sent.stdout, "")
      assert.strictEqual(sent.stderr.trim(), `Message to "nobody" was not delivered: Session not found`)

      const json = yield* runCli(agent, ["send", "--json", "nobody", "hello"])
      assert.strictEqual(json.code, 1)
      const result = jsonOf(json)
      assert.strictEqual(result["ok"], false)
      assert.strictEqual(result["text"], `Message to "nobody" was not delivered: Session not found`)
      assert.deepStrictEqual(result["details"], { error: "NotDelivered", code: "E_TARGET_NOT_FOUND" })
    }), TIMEOUT)

  it.live("a one-shot command's session is forgotten when it ends: mail to its name is not queued for it (ephemeral-v1)", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const once = yield* runCli(agent, ["status", "--name", "dave"])
      assert.strictEqual(once.code, 0)
      const sent = yield* runCli(agent, ["send", "--name", "alice", "dave", "are you there?"])
      assert.strictEqual(sent.code, 1, `${sent.stdout}${sent.stderr}`)
      assert.strictEqual(sent.stderr.trim(), `Message to "dave" was not delivered: Session not found`)
    }), TIMEOUT)

  it.live("a command line that does not parse exits 2 with the usage on stderr; under --json, one object on stdout", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const text = yield* runCli(agent, ["send", "--bogus", "nobody", "hello"])
      assert.strictEqual(text.code, 2)
      assert.strictEqual(text.stdout, "", "stdout carries results only")
      assert.include(text.stderr, "USAGE")
      assert.include(text.stderr, "Unrecognized flag: --bogus")

      for (const args of [["send", "--json", "--bogus", "nobody", "hello"], ["ask", "--json", "nobody", "q", "--timeout", "-5"]]) {
        const json = yield* runCli(agent, args)
        assert.strictEqual(json.code, 2, args.join(" "))
        assert.strictEqual(json.stdout.trim().split("\n").length, 1, "exactly one line on stdout")
        const result = jsonOf(json)
        assert.strictEqual(result["ok"], false)
        assert.strictEqual(result["action"], args[0])
        assert.deepStrictEqual(result["details"], { error: "InvalidArguments" })
        assert.include(json.stderr, "USAGE")
      }
      assert.include(String(jsonOf(yield* runCli(agent, ["send", "--json", "--delivery", "bogus", "x", "y"]))["text"]), "--delivery")
    }), TIMEOUT)

  it.live("ask an unknown target fails at once (blocking asks are not queued); a silent target times out", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const unknown = yield* runCli(agent, ["ask", "nobody", "anyone?"])
      assert.strictEqual(unknown.code, 1)
      assert.include(unknown.stderr, `Message to "nobody" was not delivered:`)

      yield* startWatch(agent, "planner")
      const silent = yield* runCli(agent, ["ask", "planner", "are you there?", "--timeout", "1s"])
      assert.strictEqual(silent.code, 1)
      assert.strictEqual(silent.stderr.trim(), `No reply from "planner" within 1 second`)
    }), TIMEOUT)

  it.live("a broker that cannot start: Intercom not connected, exit 1; enabled:false refuses to connect", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      fs.mkdirSync(agent.intercomDir, { recursive: true })
      const config = path.join(agent.intercomDir, "config.json")
      fs.writeFileSync(config, JSON.stringify({ brokerCommand: "/bin/false" }))
      const notConnected = yield* runCli(agent, ["list"])
      assert.strictEqual(notConnected.code, 1)
      assert.match(notConnected.stderr, /^Intercom not connected: broker failed to start: the broker exited/m)

      fs.writeFileSync(config, JSON.stringify({ enabled: false }))
      const disabled = yield* runCli(agent, ["send", "--json", "x", "y"])
      assert.strictEqual(disabled.code, 1)
      assert.deepInclude(jsonOf(disabled), { ok: false, action: "send" })
      assert.include(String(jsonOf(disabled)["text"]), `Intercom is disabled ("enabled": false in ${config})`)
    }), TIMEOUT)
})

describe("usage errors exit 2", () => {
  it.live("missing arguments, bad flags, an empty message, a bad --timeout or --name", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, RegExp]> = [
        [["send"], /Missing required argument: to/],
        [["send", "bob"], /Missing required argument: message/],
        [["ask", "bob", "q", "--timeout", "soon"], /--timeout must be a positive duration/],
        [["ask", "bob", "q", "--timeout", "0"], /--timeout must be a positive duration/],
        [["list", "--bogus"], /bogus/],
        [["list", "--name", " "], /--name must not be empty/],
        [["reply", "--error"], /error/]
      ]
      for (const [args, pattern] of cases) {
        const outcome = yield* runCli(agent, args)
        assert.strictEqual(outcome.code, 2, `${args.join(" ")}: ${outcome.stderr}`)
        assert.match(outcome.stderr, pattern, args.join(" "))
      }
      // Checked by the session, before anything is sent: still a usage error.
      const empty = yield* runCli(agent, ["send", "bob", ""])
      assert.strictEqual(empty.code, 2, empty.stderr)
      // The contract text, and the CLI's word on which was missing: <to> was given.
      assert.strictEqual(empty.stderr.trim(), `Missing 'to' or 'message' parameter: the message after "bob" is empty; give its text.`)
      // `reply` may leave out its message only with --error.
      const bare = yield* runCli(agent, ["reply"])
      assert.strictEqual(bare.code, 2, bare.stderr)
      assert.strictEqual(bare.stderr.trim(), "Missing 'message' parameter")
      for (const text of ["", " "]) {
        const blank = yield* runCli(agent, ["reply", "--error", text])
        assert.strictEqual(blank.code, 2, blank.stderr)
        assert.include(blank.stderr, "--error must not be empty: give the failure text the asker is to get")
        assert.notInclude(blank.stderr, "Missing 'message' parameter")
      }
      const control = yield* runCli(agent, ["send", "--json", "bob", "bell\u0007"])
      assert.strictEqual(control.code, 2)
      assert.strictEqual(get(jsonOf(control), "details", "error"), "InvalidInput")
      assert.isFalse(fs.existsSync(agent.pidFile), "no usage error started a broker")
    }), TIMEOUT)
})

describe("intercom send / pending / reply without a watch", () => {
  it.live("send reaches a live session: exit 0 and the contract text; --json has the message id", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const watch = yield* startWatch(agent, "planner")
      const sent = yield* runCli(agent, ["send", "planner", "hello", "world"])
      assert.strictEqual(sent.code, 0, sent.stderr)
      assert.strictEqual(sent.stdout, "Message sent to planner\n")
      yield* watch.waitStdout(/\[message\] cli-tester \([0-9a-f]{8}\) · \S+\n {2}hello world\n/)

      const json = jsonOf(yield* runCli(agent, ["send", "--json", "planner", "--", "-dash"]))
      assert.deepInclude(json, { ok: true, action: "send", text: "Message sent to planner" })
      assert.match(String(get(json, "details", "messageId")), UUID)
      assert.strictEqual(get(json, "details", "delivered"), true)
      yield* watch.waitStdout(/\n {2}-dash\n/)
    }), TIMEOUT)

  it.live("a fresh session has nothing pending and nothing to reply to", () =>
    Effect.gen(function*() {
      const agent = yield* makeAgent
      const pending = yield* runCli(agent, ["pending"])
      assert.strictEqual(pending.code, 0, pending.stderr)
      assert.strictEqual(pending.stdout, "No unresolved inbound asks.\n")
      assert.deepStrictEqual(jsonOf(yield* runCli(agent, ["pending", "--json"]))["details"], { asks: [] })

      const reply = yield* runCli(agent, ["reply", "too late"])
      assert.strictEqual(reply.code, 1)
      assert.strictEqual(reply.stderr.trim(), "No active intercom context to reply to")
    }), TIMEOUT)
})
