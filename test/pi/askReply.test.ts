/**
 * Two real pi sessions in one process (pi's SDK, scripted model turns) with
 * the extension loaded from dist/: the extension spawns the broker, A asks B,
 * B's model gets the ask as a triggered custom message and calls `reply`,
 * and A's tool result holds the reply. Also: a busy recipient gets a message
 * after the tool boundary, once; names and models follow pi. A reply in the
 * turn of an ask whose asker stopped waiting is an error that says so.
 */
import { afterAll, assert, describe, it } from "vitest"
import { act, call, closeWorld, entriesOf, intercomMessages, makeWorld, nextEvent, openPi, say, textOf, toolResults } from "./support.ts"

/** Whether each tool result of a session is an error, in order. */
const toolErrors = (session: ReturnType<Awaited<ReturnType<typeof openPi>>["session"]>): ReadonlyArray<boolean> =>
  session.messages.filter((message) => message.role === "toolResult").map((message) =>
    "isError" in message && message.isError === true
  )

const world = makeWorld()
afterAll(() => closeWorld(world))

describe("pi extension: two sessions", () => {
  it("A asks B; B's model gets the ask as a triggered message and replies; A's tool result holds the reply", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "bravo" })
    try {
      // B registers at session_start; its first status call is the barrier that it is on the bus.
      b.script(call("intercom", { action: "status" }), say("ready"))
      await b.session().prompt("check in")
      assert.match(toolResults(b.session())[0] ?? "", /^\*\*Intercom Status:\*\*\nConnected: Yes/)

      b.script(call("intercom", { action: "reply", message: "42" }), say("answered"))
      // delivery "steer": B's idle health travels on B's socket and may reach the broker after A's ask reads it; this test is not about peer_busy (C-HLT-6).
      a.script(call("intercom", { action: "ask", to: "bravo", message: "What is 6 * 7?", delivery: "steer" }), say("done"))
      const bSettled = nextEvent(b, (event) => event.type === "agent_settled" && b.calls.length >= 4)
      await a.session().prompt("ask bravo")
      await bSettled

      assert.deepStrictEqual(toolResults(a.session()), ["**Reply from bravo:**\n42"])
      // B saw the ask as a custom message that started its turn (no user prompt before it), with the reply hint.
      const asked = b.calls[2] ?? []
      assert.deepStrictEqual(asked.slice(-1).map((message) => message.role), ["user"])
      assert.match(textOf(asked.at(-1) ?? { role: "x" }), /^\*\*From .+\*\* \(.+\)\n\nTo reply, use the intercom tool: intercom\(\{ action: "reply", message: "\.\.\." \}\)\n\nWhat is 6 \* 7\?$/)
      assert.strictEqual(intercomMessages(b.session()).length, 1)
      assert.match(toolResults(b.session())[1] ?? "", /^Reply sent to /)
      // C-TOOL-8: history entries on both sides.
      assert.strictEqual(entriesOf(a.session(), "intercom_sent").length, 1)
      assert.strictEqual(entriesOf(a.session(), "intercom_received").length, 1)
      assert.strictEqual(entriesOf(b.session(), "intercom_sent").length, 1)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("B replies with replyError: A's ask tool result is an error whose text is exactly that", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "charlie" })
    try {
      b.script(call("intercom", { action: "status" }), say("ready"))
      await b.session().prompt("check in")
      b.script(call("intercom", { action: "reply", replyError: "cannot reach the database" }), say("answered"))
      // delivery "steer": B's idle health travels on B's socket and may reach the broker after A's ask reads it; this test is not about peer_busy (C-HLT-6).
      a.script(call("intercom", { action: "ask", to: "charlie", message: "How many users?", delivery: "steer" }), say("done"))
      const bSettled = nextEvent(b, (event) => event.type === "agent_settled" && b.calls.length >= 4)
      await a.session().prompt("ask charlie")
      await bSettled
      assert.deepStrictEqual(toolResults(a.session()), ["cannot reach the database"])
      assert.isTrue(toolErrors(a.session())[0])
      assert.match(toolResults(b.session())[1] ?? "", /^Reply sent to /)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("a busy recipient (a long tool running) gets a message after the tool boundary, once", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "busy-bee" })
    try {
      b.script(call("intercom", { action: "status" }), say("ready"))
      await b.session().prompt("check in")
      b.script(
        call("wait_for_intercom", {}),
        (messages) => say(`after the tool: ${messages.map((m) => m.role).join(",")}`)
      )
      const busy = nextEvent(b, (event) => event.type === "tool_execution_start" && event.toolName === "wait_for_intercom")
      const bRun = b.session().prompt("wait")
      await busy
      a.script(call("intercom", { action: "send", to: "busy-bee", message: "fyi: build is green" }), say("done"))
      await a.session().prompt("send")
      await bRun
      assert.deepStrictEqual(toolResults(a.session()), ["Message sent to busy-bee"])
      // The steered message reached B's model once: after the tool result, before its next call.
      const lastCall = b.calls.at(-1) ?? []
      assert.deepStrictEqual(lastCall.slice(-3).map((message) => message.role), ["assistant", "toolResult", "user"])
      assert.match(textOf(lastCall.at(-1) ?? { role: "x" }), /\n\nfyi: build is green$/)
      assert.strictEqual(b.calls.length, 4)
      assert.strictEqual(intercomMessages(b.session()).length, 1)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("C-RPL-2: a message steered into the turn an ask triggered does not take the turn over: reply without `to` answers the asker", async () => {
    const x = await openPi(world)
    const b = await openPi(world, { name: "relay-bee" })
    const y = await openPi(world, { name: "chatty-y" })
    try {
      await act(b, { action: "status" })
      await act(y, { action: "status" })
      // B's turn starts with X's ask; while B waits in a tool, Y's plain message is steered into the same turn.
      b.script(call("wait_for_intercom", {}), call("intercom", { action: "reply", message: "42" }), say("done"))
      const busy = nextEvent(b, (event) => event.type === "tool_execution_start" && event.toolName === "wait_for_intercom")
      const bSettled = nextEvent(b, (event) => event.type === "agent_settled")
      x.script(call("intercom", { action: "ask", to: "relay-bee", message: "What is 6 * 7?", delivery: "steer", timeoutMs: 20000 }), say("ok"))
      const asking = x.session().prompt("ask relay-bee")
      await busy
      await act(y, { action: "send", to: "relay-bee", message: "fyi: build is green" })
      await asking
      await bSettled
      assert.deepStrictEqual(toolResults(x.session()), ["**Reply from relay-bee:**\n42"])
      assert.match(toolResults(b.session()).at(-1) ?? "", /^Reply sent to /)
      assert.notMatch(toolResults(b.session()).at(-1) ?? "", /chatty-y/)
      assert.deepStrictEqual(intercomMessages(y.session()), [])
    } finally {
      await x.quit()
      await b.quit()
      await y.quit()
    }
  })

  it("a reply in the turn of an ask whose asker stopped waiting is an error saying so and what to do, not a reply sent", async () => {
    const a = await openPi(world, { name: "impatient" })
    const b = await openPi(world, { name: "slowpoke" })
    try {
      await act(b, { action: "status" })
      // B's turn starts with A's ask and stays in a tool until a later message comes; only then does it reply.
      b.script(call("wait_for_intercom", {}), call("intercom", { action: "reply", message: "42" }), say("done"))
      const busy = nextEvent(b, (event) => event.type === "tool_execution_start" && event.toolName === "wait_for_intercom")
      const bSettled = nextEvent(b, (event) => event.type === "agent_settled")
      a.script(call("intercom", { action: "ask", to: "slowpoke", message: "What is 6 * 7?", delivery: "steer", timeoutMs: 300 }), say("ok"))
      const asking = a.session().prompt("ask slowpoke")
      await busy
      // A's ask ends at its deadline (the broker's, ask-expiry-v1): A no longer waits. Its next message wakes B's tool.
      await asking
      assert.match(toolResults(a.session())[0] ?? "", /^No reply from "slowpoke" within 0\.3 seconds/)
      await act(a, { action: "send", to: "slowpoke", message: "never mind" })
      await bSettled
      // Expired here, or refused by the broker that closed it first: either way the same plain words.
      assert.match(
        toolResults(b.session()).at(-1) ?? "",
        /impatient no longer waits for an answer(?:, so this reply was not sent)?\. If impatient still needs it, send it to impatient as a plain message \(a send without replyTo\)\.$/
      )
      assert.isTrue(toolErrors(b.session()).at(-1))
      assert.deepStrictEqual(toolResults(a.session()).filter((text) => text.includes("42")), [], "A was given no answer")
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("C-HLT-5: a default ask to a recipient busy in a long tool is delivered, but returns at once with peer_busy", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "busy-ask" })
    try {
      b.script(call("intercom", { action: "status" }), say("ready"))
      await b.session().prompt("check in")
      b.script(call("wait_for_intercom", {}), say("saw it"))
      const busy = nextEvent(b, (event) => event.type === "tool_execution_start" && event.toolName === "wait_for_intercom")
      const bRun = b.session().prompt("wait")
      await busy
      a.script(call("intercom", { action: "ask", to: "busy-ask", message: "are you free?" }), say("done"))
      await a.session().prompt("ask")
      await bRun
      const [result] = toolResults(a.session())
      assert.match(result ?? "", /^Question sent to busy-ask, but busy-ask is busy \(accepts_asks:false\)/)
      assert.include(result ?? "", "Delivery does not mean the question was consumed")
      // The question did reach B, once.
      assert.strictEqual(intercomMessages(b.session()).length, 1)
    } finally {
      await a.quit()
      await b.quit()
    }
  })
})
