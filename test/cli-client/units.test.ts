/**
 * The pure parts of the client commands: `--timeout` and `--rejoin-grace` values, names and their
 * stable session ids, the watch's reply lines, exit codes of tool results.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseRejoinGrace, parseTimeout, rejoinGraceProblem } from "../../src/cli/client/duration.ts"
import { nameKey, nameProblem, watchSessionId } from "../../src/cli/client/identity.ts"
import { exitCodeOf, presenceOutput } from "../../src/cli/client/output.ts"
import { cliReplyCall } from "../../src/cli/client/session.ts"
import { parseReplyLine } from "../../src/cli/client/watch.ts"
import { execFileSync } from "node:child_process"

describe("--timeout", () => {
  it("takes milliseconds or a duration with a unit", () => {
    assert.strictEqual(parseTimeout("90000"), 90_000)
    assert.strictEqual(parseTimeout("500ms"), 500)
    assert.strictEqual(parseTimeout("30s"), 30_000)
    assert.strictEqual(parseTimeout("1.5m"), 90_000)
    assert.strictEqual(parseTimeout("2 minutes"), 120_000)
    assert.strictEqual(parseTimeout(" 1h "), 3_600_000)
    assert.strictEqual(parseTimeout("10 Seconds"), 10_000)
    assert.strictEqual(parseTimeout("3d"), 259_200_000)
    assert.strictEqual(parseTimeout("2 days"), 172_800_000)
  })

  it("refuses zero, negatives, unknown units and junk", () => {
    for (const text of ["0", "0s", "-5", "5 fortnights", "soon", "", "1e3", "0.0001ms"]) {
      assert.isUndefined(parseTimeout(text), text)
    }
  })
})

describe("--rejoin-grace", () => {
  it("takes 0 to 10 minutes, as milliseconds or a duration with a unit", () => {
    assert.strictEqual(parseRejoinGrace("0"), 0)
    assert.strictEqual(parseRejoinGrace("0s"), 0)
    assert.strictEqual(parseRejoinGrace("3000"), 3_000)
    assert.strictEqual(parseRejoinGrace("500ms"), 500)
    assert.strictEqual(parseRejoinGrace(" 30s "), 30_000)
    assert.strictEqual(parseRejoinGrace("10m"), 600_000)
  })

  it("refuses junk with what it takes, and more than 10 minutes with the bound", () => {
    for (const text of ["-5", "soon", "", "5 fortnights", "1e3"]) {
      assert.isUndefined(parseRejoinGrace(text), text)
      assert.strictEqual(
        rejoinGraceProblem(text),
        `--rejoin-grace must be a duration such as 3s, 500ms or 0 (milliseconds when no unit is given), got ${JSON.stringify(text)}`
      )
    }
    for (const text of ["600001", "11m", "1h"]) {
      assert.isUndefined(parseRejoinGrace(text), text)
      assert.strictEqual(rejoinGraceProblem(text), `--rejoin-grace must be at most 10m (600000 ms), got ${JSON.stringify(text)}`)
    }
  })
})

describe("names and stable ids", () => {
  it("a name maps to one cli-<32 hex> id, ignoring case and surrounding space, per scope", () => {
    const id = watchSessionId("planner", undefined)
    assert.match(id, /^cli-[0-9a-f]{32}$/)
    assert.match(id, /^[A-Za-z0-9_-]{8,80}$/, "well formed for pi-intercom brokers")
    assert.strictEqual(watchSessionId(" Planner ", undefined), id)
    assert.notStrictEqual(watchSessionId("planner", "team-a"), id)
    assert.notStrictEqual(watchSessionId("reviewer", undefined), id)
    assert.strictEqual(nameKey("planner", undefined).length, 64)
  })

  it("refuses empty, over-long and control-character names", () => {
    assert.isUndefined(nameProblem("planner"))
    assert.strictEqual(nameProblem("  "), "--name must not be empty")
    assert.match(nameProblem("x".repeat(65)) ?? "", /at most 64/)
    assert.match(nameProblem("a\u0007b") ?? "", /control characters/)
  })
})

describe("watch reply lines", () => {
  const ids = ["8d5424ff-405e-4c8a-b341-5b02e310ff6f", "8d5424aa-0000-4000-8000-000000000000"]

  it("a plain line replies to the pending ask; blank lines are nothing", () => {
    assert.deepStrictEqual(parseReplyLine("  yes, ship it ", ids), { action: "reply", message: "yes, ship it" })
    assert.isUndefined(parseReplyLine("   ", ids))
  })

  it("@<message id or a unique 8+ prefix> picks that ask; anything else names a sender", () => {
    assert.deepStrictEqual(parseReplyLine(`@${ids[0]} a`, ids), { action: "reply", replyTo: ids[0], message: "a" })
    assert.deepStrictEqual(parseReplyLine("@8d5424ff b", ids), { action: "reply", replyTo: ids[0], message: "b" })
    assert.deepStrictEqual(parseReplyLine("@8d5424 c", ids), { action: "reply", to: "8d5424", message: "c" }, "ambiguous prefix")
    assert.deepStrictEqual(parseReplyLine("@bob  two words", ids), { action: "reply", to: "bob", message: "two words" })
    assert.deepInclude(parseReplyLine("@bob", ids), { problem: `Nothing to send: type "@<name or message id> <text>".` })
  })
})

describe("exit codes and events", () => {
  it("results exit 0, usage problems 2, everything else 1", () => {
    const result = (isError: boolean, kind?: string) => ({
      text: "",
      isError,
      details: kind === undefined ? {} : { error: kind }
    })
    assert.strictEqual(exitCodeOf(result(false)), 0)
    for (const kind of ["MissingParameter", "InvalidInput", "InvalidTimeout", "UnknownAction"]) {
      assert.strictEqual(exitCodeOf(result(true, kind)), 2, kind)
    }
    for (const kind of ["NotDelivered", "ReplyTimeout", "IntercomNotConnected", "NoReplyContext", "WatchLost"]) {
      assert.strictEqual(exitCodeOf(result(true, kind)), 1, kind)
    }
  })

  it("a presence update shows only a change of status or name", () => {
    const base = { id: "1a2b3c4d-0000", cwd: "/w", model: "m", pid: 1, startedAt: 0, lastActivity: 0, name: "rev", status: "idle" }
    assert.isUndefined(presenceOutput({ _tag: "Updated", session: base }, base))
    assert.strictEqual(
      presenceOutput({ _tag: "Updated", session: { ...base, status: "thinking" } }, base)?.text,
      "[status] rev (1a2b3c4d): idle → thinking"
    )
    assert.strictEqual(
      presenceOutput({ _tag: "Updated", session: { ...base, name: "reviewer" } }, base)?.text,
      "[renamed] rev (1a2b3c4d) → reviewer"
    )
    assert.strictEqual(presenceOutput({ _tag: "Left", sessionId: base.id }, base)?.text, "[left] rev (1a2b3c4d)")
  })

  it("one the client learnt after a reconnect is marked (while disconnected), and resync in JSON", () => {
    const base = { id: "1a2b3c4d-0000", cwd: "/w", model: "m", pid: 1, startedAt: 0, lastActivity: 0, name: "rev" }
    const left = presenceOutput({ _tag: "Left", sessionId: base.id, resync: true }, base)
    assert.strictEqual(left?.text, "[left] rev (1a2b3c4d) (while disconnected)")
    assert.deepStrictEqual(left?.json, { event: "left", sessionId: base.id, name: "rev", resync: true })
    assert.strictEqual(
      presenceOutput({ _tag: "Joined", session: base, resync: true }, undefined)?.text,
      "[joined] rev (1a2b3c4d) · /w (while disconnected)"
    )
  })
})

describe("the reply command pending shows", () => {
  it("names the session, the --dir it was given, its group outside the default one, and the ask", () => {
    assert.strictEqual(
      cliReplyCall({ name: "planner", group: "default", dirFlag: undefined })("4f0c-aa"),
      `intercom reply --name planner --reply-to 4f0c-aa "..."`
    )
    assert.strictEqual(
      cliReplyCall({ name: "planner", group: "team-a", dirFlag: "/tmp/agent" })("4f0c-aa"),
      `intercom reply --name planner --dir /tmp/agent --group team-a --reply-to 4f0c-aa "..."`
    )
  })

  it("quotes what a shell would split or expand, and the shell reads it back exactly", () => {
    const name = `it's $HOME; "a b" *`
    const line = cliReplyCall({ name, group: "x y", dirFlag: "/tmp/a b" })("id`1`")
    const words = execFileSync("sh", ["-c", `printf '%s\\n' ${line.replace(/^intercom /, "")}`], { encoding: "utf8" })
    assert.deepStrictEqual(words.split("\n").slice(0, -1), ["reply", "--name", name, "--dir", "/tmp/a b", "--group", "x y", "--reply-to", "id`1`", "..."])
  })
})
