/** C-TOOL-9/10/11/13, C-ASK-5/8, C-RPL-7/9, C-DLV-18: every rendered text, verbatim. */
import { assert, describe, it } from "@effect/vitest"
import {
  fallbackAlias,
  formatSpan,
  formatWait,
  presenceStatus,
  presentedName,
  renderInbound,
  renderPending,
  renderReply,
  renderSessionList,
  renderStatus
} from "../../src/session/render.ts"
import { info } from "./support.ts"

describe("C-TOOL-13 fallback alias", () => {
  it("subagent-chat-<first 8 chars of the id>, any session- prefix stripped", () => {
    assert.strictEqual(fallbackAlias("1a2b3c4d-5555-6666"), "subagent-chat-1a2b3c4d")
    assert.strictEqual(fallbackAlias("session-1a2b3c4d5e"), "subagent-chat-1a2b3c4d")
    assert.deepStrictEqual(presentedName(undefined, "session-1a2b3c4d5e"), {
      name: "subagent-chat-1a2b3c4d",
      runtimeFallbackAlias: true
    })
    assert.deepStrictEqual(presentedName("  ", "abcdefgh12"), { name: "subagent-chat-abcdefgh", runtimeFallbackAlias: true })
    assert.deepStrictEqual(presentedName(" planner ", "x"), { name: "planner", runtimeFallbackAlias: false })
  })
})

describe("C-TOOL-10 live status", () => {
  it("a custom status is appended, never replacing the lifecycle", () => {
    assert.strictEqual(presenceStatus("idle", undefined), "idle")
    assert.strictEqual(presenceStatus("thinking", "reviewing PR 12"), "thinking · reviewing PR 12")
    assert.strictEqual(presenceStatus("tool:bash", " "), "tool:bash")
  })
})

describe("C-TOOL-9 list", () => {
  it("renders the seed example: current session, other sessions, tags", () => {
    const executor = info("20d43841-aaaa", { name: "executor", cwd: "~/projects/api", model: "claude-sonnet-4", status: "idle" })
    const research = info("6332faab-bbbb", { name: "research", cwd: "~/projects/api", model: "claude-sonnet-4", status: "thinking" })
    const elsewhere = info("77777777-cccc", { cwd: "/elsewhere", model: "m", status: "tool:bash" })
    assert.strictEqual(
      renderSessionList(executor, [executor, research, elsewhere]),
      "**Current session:**\n" +
        "• executor (20d43841) — ~/projects/api (claude-sonnet-4) [self, idle]\n\n" +
        "**Other sessions:**\n" +
        "• research (6332faab) — ~/projects/api (claude-sonnet-4) [same cwd, thinking]\n" +
        "• Unnamed session (77777777) — /elsewhere (m) [tool:bash]"
    )
  })

  it("says so when nobody else is connected", () => {
    const self = info("20d43841-aaaa", { name: "solo" })
    assert.strictEqual(
      renderSessionList(self, [self]),
      "**Current session:**\n• solo (20d43841) — /work (test-model) [self]\n\n**Other sessions:**\nNo other sessions connected."
    )
  })
})

describe("C-TOOL-11 status", () => {
  it("Connected: Yes, the session id and the active count", () => {
    assert.strictEqual(renderStatus("abc123", 3), "**Intercom Status:**\nConnected: Yes\nSession ID: abc123\nGroup: default\nActive sessions: 3")
  })
})

describe("C-DLV-18 / C-RPL-9 inbound rendering", () => {
  const research = info("6332faab-bbbb", { name: "research", cwd: "~/projects/api" })

  it("an ask shows sender, cwd, the reply hint, then the body", () => {
    const text = "Found the issue — UserService.validate() doesn't check for null input.\nSee auth.ts:142-156."
    assert.strictEqual(
      renderInbound(research, { id: "m1", timestamp: 0, content: { text }, expectsReply: true }, true),
      `**From research** (~/projects/api)\n\nTo reply, use the intercom tool: intercom({ action: "reply", message: "..." })\n\n${text}`
    )
  })

  it("no hint for a plain send, nor when replyHint is off", () => {
    const message = { id: "m1", timestamp: 0, content: { text: "fyi" } }
    assert.strictEqual(renderInbound(research, message, true), "**From research** (~/projects/api)\n\nfyi")
    assert.strictEqual(
      renderInbound(research, { ...message, expectsReply: true }, false),
      "**From research** (~/projects/api)\n\nfyi"
    )
  })

  it("an unnamed sender shows its short id; attachments follow the body", () => {
    const anonymous = info("1234567890ab", { cwd: "/x" })
    assert.strictEqual(
      renderInbound(anonymous, {
        id: "m",
        timestamp: 0,
        content: {
          text: "Here's the fix:",
          attachments: [
            { type: "snippet", name: "auth.ts", language: "typescript", content: "function validate() {}" },
            { type: "context", name: "notes", content: "n" }
          ]
        }
      }, true),
      "**From 12345678** (/x)\n\nHere's the fix:\n\n---\n📎 auth.ts\n~~~typescript\nfunction validate() {}\n~~~\n\n---\n📎 notes\nn"
    )
  })
})

describe("C-ASK-8 / C-ASK-5 ask results", () => {
  it("**Reply from <to>:** then the text and attachments", () => {
    assert.strictEqual(
      renderReply("planner", { id: "r", timestamp: 0, content: { text: "Only GET/PUT/DELETE — never POST." } }),
      "**Reply from planner:**\nOnly GET/PUT/DELETE — never POST."
    )
  })

  it("timeouts read in minutes (10 by default), else seconds, exact to the millisecond", () => {
    assert.strictEqual(formatWait(600_000), "10 minutes")
    assert.strictEqual(formatWait(120_000), "2 minutes")
    assert.strictEqual(formatWait(60_000), "1 minute")
    assert.strictEqual(formatWait(5_000), "5 seconds")
    assert.strictEqual(formatWait(1_000), "1 second")
    assert.strictEqual(formatWait(1_500), "1.5 seconds", "not rounded to 2")
    assert.strictEqual(formatWait(250), "0.25 seconds", "not rounded to 1")
    assert.strictEqual(formatWait(90_000), "90 seconds")
  })
})

describe("formatSpan", () => {
  it("whole seconds rounded down, then minutes, hours and days with their remainder", () => {
    assert.deepStrictEqual(
      [0, 999, 7_000, 59_999, 60_000, 593_000, 3_600_000, 7_320_500, 86_400_000, 100_800_000, -5].map(formatSpan),
      ["0s", "0s", "7s", "59s", "1m", "9m 53s", "1h", "2h 2m", "1d", "1d 4h", "0s"]
    )
  })
})

describe("C-RPL-7 pending", () => {
  it("oldest first, sender, message id, time since asked and time left, 80-character collapsed preview, reply call", () => {
    const long = `first line\n\n   ${"x".repeat(100)}`
    const text = renderPending([
      { from: info("1111-aaaa", { name: "planner" }), message: { id: "q1", timestamp: 0, content: { text: long } }, askedAt: 1_000, expiresAt: 601_000 },
      { from: info("2222-bbbb"), message: { id: "q2", timestamp: 0, content: { text: "short" } }, askedAt: 30_000, expiresAt: 7_382_500 }
    ], 62_500)
    assert.strictEqual(
      text,
      "**Pending asks:**\n" +
        `- planner · q1 · asked 1m 1s ago · expires in 8m 58s · first line ${"x".repeat(69)}\n` +
        `  reply: intercom({ action: "reply", replyTo: "q1", message: "..." })\n` +
        "- 2222-bbbb · q2 · asked 32s ago · expires in 2h 2m · short\n" +
        `  reply: intercom({ action: "reply", replyTo: "q2", message: "..." })`
    )
    assert.strictEqual(renderPending([], 0), "No unresolved inbound asks.")
  })

  it("C-RPL-8: a host's own reply call replaces the tool call", () => {
    const row = { from: info("1111-aaaa", { name: "planner" }), message: { id: "q1", timestamp: 0, content: { text: "ok?" } }, askedAt: 0, expiresAt: 600_001 }
    assert.strictEqual(
      renderPending([row], 0, (id) => `intercom reply --reply-to ${id} "..."`),
      "**Pending asks:**\n- planner · q1 · asked 0s ago · expires in 10m · ok?\n  reply: intercom reply --reply-to q1 \"...\""
    )
  })
})
