/**
 * The `intercom` tool's texts in real pi sessions (C-TOOL): every action's
 * result, and bad parameters — pi's schema check or the runtime's — give a
 * clear tool error with nothing sent. Plus `/intercom` outside the TUI.
 */
import { afterAll, assert, describe, it } from "vitest"
import { actResult as act, call, closeWorld, intercomMessages, makeWorld, nextEvent, openPi, say, textOf, toolResults } from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))


describe("pi extension: the intercom tool's texts", () => {
  it("list, send, pending, status and their errors; bad parameters send nothing", async () => {
    const a = await openPi(world, { name: "alpha" })
    const b = await openPi(world, { name: "bravo" })
    try {
      assert.match((await act(b, { action: "status" })).text, /^\*\*Intercom Status:\*\*\nConnected: Yes\nSession ID: .+\nGroup: default\nActive sessions: \d+\n\n\*\*Current session:\*\*\n/)
      const list = await act(a, { action: "list" })
      // (Statuses race with the list: presence is pushed as pi's events come.)
      assert.match(list.text, /^\*\*Current session:\*\*\n• alpha \(.+\) — .+ \(faux-1\) \[self, [^\]]+, state:\w+, accepts_asks:\w+, [^\]]+\]\n  ↳ self target unavailable[^\n]+\n\n\*\*Other sessions:\*\*\n• bravo \(.+\) — .+ \(faux-1\) \[same cwd, [^\]]+, state:\w+, [^\]]+\]\n  ↳ [^\n]+$/)
      assert.deepStrictEqual(await act(a, { action: "pending" }), { text: "No unresolved inbound asks.", isError: false })

      // Bad parameters: nothing reaches bravo.
      const bad = [
        await act(a, { action: "shout", to: "bravo", message: "x" }),
        await act(a, { action: "send", to: "bravo" }),
        await act(a, { action: "send", message: "x" }),
        await act(a, { action: "reply" }),
        await act(a, { action: "send", to: "bravo", message: "x", attachments: [{ type: "image", name: "a", content: "b" }] }),
        await act(a, { action: "send", to: "bravo", message: "bell \u0007" }),
        await act(a, { action: "list", scope: "galaxy" }),
        await act(a, { action: "send", to: "alpha", message: "to myself" }),
        await act(a, { action: "ask", to: "bravo", message: "x", timeoutMs: -1 }),
        // Out of the broker's range: refused as a parameter here, not sent and refused as "not delivered".
        await act(a, { action: "ask", to: "bravo", message: "x", timeoutMs: 2500.5 }),
        await act(a, { action: "ask", to: "bravo", message: "x", timeoutMs: 2_592_000_001 })
      ]
      assert.isTrue(bad.every((result) => result.isError), JSON.stringify(bad))
      assert.match(bad[0]?.text ?? "", /action/)
      assert.strictEqual(bad[1]?.text, "Missing 'to' or 'message' parameter")
      assert.strictEqual(bad[2]?.text, "Missing 'to' or 'message' parameter")
      assert.strictEqual(bad[3]?.text, "Missing 'message' parameter")
      assert.match(bad[4]?.text ?? "", /attachments/)
      assert.match(bad[5]?.text ?? "", /^Invalid message: /)
      assert.match(bad[6]?.text ?? "", /scope/)
      assert.strictEqual(bad[7]?.text, "Cannot message the current session")
      assert.match(bad[8]?.text ?? "", /^Invalid timeoutMs: -1/)
      assert.match(bad[9]?.text ?? "", /^Invalid timeoutMs: 2500\.5 \(must be a whole number of milliseconds from 1 to 2592000000/)
      assert.match(bad[10]?.text ?? "", /^Invalid timeoutMs: 2592000001 \(must be a whole number/)
      assert.strictEqual(b.calls.length, 2, "bravo's model was never woken")
      assert.deepStrictEqual(intercomMessages(b.session()), [])

      assert.deepStrictEqual(await act(a, { action: "send", to: "bravo", message: "hello" }), {
        text: "Message sent to bravo",
        isError: false
      })
      assert.match((await act(a, { action: "reply", message: "x" })).text, /^No active intercom context to reply to$/)
      assert.match((await act(a, { action: "send", to: "nobody-here", message: "x" })).text, /^Message to "nobody-here" was not delivered: Session not found$/)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("pending lists an unanswered ask with its reply call; /intercom outside the TUI notifies the listing", async () => {
    const a = await openPi(world, { name: "asker" })
    const b = await openPi(world, { name: "answerer" })
    try {
      await act(b, { action: "status" })
      // B's triggered turn on the ask checks `pending` first, then replies with the exact id.
      b.script(call("intercom", { action: "pending" }), (messages) => {
        const pending = messages.at(-1)
        const id = /replyTo: "([^"]+)"/.exec(pending === undefined ? "" : textOf(pending))?.[1] ?? ""
        return call("intercom", { action: "reply", replyTo: id, message: "done" })
      }, say("ok"))
      const answered = nextEvent(b, (event) => event.type === "agent_settled" && b.calls.length >= 5)
      // delivery "steer": B's idle health travels on B's socket and may reach the broker after A's ask reads it; this test is not about peer_busy (C-HLT-6).
      const asked = await act(a, { action: "ask", to: "answerer", message: "is   the\nbuild green?", delivery: "steer" })
      await answered
      assert.deepStrictEqual(asked, { text: "**Reply from answerer:**\ndone", isError: false })
      const pending = toolResults(b.session()).find((text) => text.startsWith("**Pending asks:**")) ?? ""
      assert.match(pending, /^\*\*Pending asks:\*\*\n- asker · [^ ]+ · asked \d+s ago · expires in (?:10m|9m \d+s) · is the build green\?\n  reply: intercom\(\{ action: "reply", replyTo: "[^"]+", message: "\.\.\." \}\)$/)
      await b.session().prompt("/intercom all")
      assert.strictEqual(b.calls.length, 5, "the command ran no model turn")
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("peek, steer and the worker forms of stop and result reach the session with their run handle (C-WKR-2); without a Workers port they say so", async () => {
    const a = await openPi(world, { name: "overseer" })
    try {
      for (const params of [
        { action: "peek", run: "run-3" },
        { action: "steer", run: "run-3", message: "faster" },
        { action: "stop", run: "run-3" },
        { action: "result", run: "run-3" }
      ]) {
        const result = await act(a, params)
        assert.isTrue(result.isError, JSON.stringify(result))
        assert.match(result.text, /^This session supervises no workers, so there is nothing to (peek|steer|stop|result)\./)
      }
      const bus = await act(a, { action: "peek", run: "operator#3" })
      assert.match(bus.text, /^operator#3 is a bus handle \(from list\)/)
    } finally {
      await a.quit()
    }
  })
})

