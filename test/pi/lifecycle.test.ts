/**
 * The extension across pi's session lifecycle, in real pi SDK sessions:
 * `/reload` during an ask, `/new`, `/fork`, `/resume` with mail queued while
 * away, quit; the saved-session journal (restore once, never taken over by a
 * fork, never inserted twice), Esc-clear redelivery, and the broker keeping
 * mail until pi has written the session file (C-DLV-14, C-DLV-16, C-ORD-35),
 * at most `unsavedMessageLimit` of it, with warnings.
 */
import { SessionManager } from "@earendil-works/pi-coding-agent"
import * as Effect from "effect/Effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { subscribe } from "../client/support.ts"
import {
  act,
  call,
  closeWorld,
  entriesOf,
  intercomMessages,
  listedIds,
  makeWorld,
  nextEvent,
  openPi,
  type Pi,
  recordingUI,
  say,
  toolResults,
  writeConfig
} from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))


const settledAfter = (pi: Pi, calls: number) =>
  nextEvent(pi, (event) => event.type === "agent_settled" && pi.calls.length >= calls)

/** Resolves once `pi`'s transcript holds at least `count` intercom messages (at once if it does). */
const intercomMessageCount = async (pi: Pi, count: number): Promise<void> => {
  if (intercomMessages(pi.session()).length >= count) return
  await nextEvent(pi, () => intercomMessages(pi.session()).length >= count)
}

/** The body of an intercom message as the model saw it (after its header). */
const body = (text: string): string | undefined => text.split("\n\n").at(-1)

/**
 * Session `bId` connects again after a quit, `a` sends it "after the quit",
 * and it holds exactly that: nothing kept from before the quit comes again.
 */
const reopenedGetsOnlyNewMail = async (a: Pi, bId: string): Promise<void> => {
  const again = await openPi(world, { sessionManager: SessionManager.inMemory(world.cwd, { id: bId }) })
  try {
    await act(a, { action: "send", to: bId, message: "after the quit" })
    await intercomMessageCount(again, 1)
    assert.deepStrictEqual(intercomMessages(again.session()).map(body), ["after the quit"])
  } finally {
    await again.quit()
  }
}

describe("pi extension: lifecycle", () => {
  it("/reload during an ask (Esc, then /reload: pi refuses to reload mid-run): the ask is cancelled, nothing is written late, no stale-context error", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "slow" })
    try {
      await act(b, { action: "status" })
      b.script(say("thinking about it")) // B's turn on the ask: no reply yet
      // delivery "steer": B's idle health travels on B's socket and may reach the broker after A's ask reads it; this test is not about peer_busy (C-HLT-6).
      a.script(call("intercom", { action: "ask", to: "slow", message: "are you there?", delivery: "steer" }))
      const asked = nextEvent(b, (event) => event.type === "agent_settled")
      const asking = a.session().prompt("ask slow")
      await asked
      await a.session().abort()
      await asking
      await a.session().reload()
      await a.rebind()
      assert.deepStrictEqual(toolResults(a.session()), ["Cancelled"])
      // A's old generation left the bus before the new one joined (pi awaits session_shutdown),
      // and the broker dropped the ask with it. B forgets asks from a session that left: after a
      // round trip on B (its session_left came first), B's late reply has nothing to answer,
      // and nothing reaches A.
      await act(b, { action: "list" })
      assert.strictEqual(await act(b, { action: "reply", message: "yes" }), "No active intercom context to reply to")
      assert.match(await act(a, { action: "status" }), /^\*\*Intercom Status:\*\*\nConnected: Yes/)
      assert.strictEqual(entriesOf(a.session(), "intercom_received").length, 0, "no late intercom_received")
      assert.deepStrictEqual(intercomMessages(a.session()), [])
      assert.deepStrictEqual(a.errors, [])
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("a generation whose session is replaced before its runtime loaded touches no stale context (reload, then quit at once)", async () => {
    const a = await openPi(world)
    await act(a, { action: "status" })
    await a.session().reload() // session_start of the new generation: its runtime loads asynchronously
    await a.quit() // … and the session is gone before that: an unhandled stale-ctx throw would fail this file
    assert.deepStrictEqual(a.errors, [])
  })

  it("a second session_start without a shutdown (extensions bound again) closes the generation it replaces before the new one registers", async () => {
    const observer = await openPi(world)
    const a = await openPi(world)
    try {
      await act(a, { action: "status" })
      await a.rebind() // session_start again on the same extension instance, no session_shutdown between
      await act(a, { action: "status" })
      await act(observer, { action: "list", scope: "all" }) // the broker has logged both registrations
      const id = a.session().sessionId
      const lines = fs.readFileSync(path.join(world.agentDir, "intercom", "broker.log"), "utf8")
        .split("\n")
        .filter((line) => line.includes(`(${id})`))
        .map((line) => line.replace(/^\S+ INFO session (\S+).*$/, "$1"))
      // A replaced generation left first; one still registered would make this a "re-registered".
      assert.deepStrictEqual(lines, ["joined:", "left:", "joined:"])
      await a.quit()
      await act(observer, { action: "list", scope: "all" })
      assert.deepStrictEqual(listedIds(observer.session()), [observer.session().sessionId], "quit left the bus")
      assert.deepStrictEqual(a.errors, [])
    } finally {
      await a.quit()
      await observer.quit()
    }
  })

  it("a session pi disposes without session_shutdown (the SDK's AgentSession.dispose()) leaves the bus: its generation closes itself", async () => {
    const a = await openPi(world)
    await act(a, { action: "status" }) // a built generation, on the bus (the broker runs)
    await a.session().reload() // the old generation leaves; the new one joins
    await act(a, { action: "status" }) // … and is on the bus once this answers
    const id = a.session().sessionId
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const observer = yield* IntercomClient.make({
        agentDir: world.agentDir,
        intercomDir: path.join(world.agentDir, "intercom"),
        socketPath: path.join(world.agentDir, "intercom", "broker.sock"),
        sessionId: randomUUID(),
        launch: false,
        registration: { cwd: world.cwd, model: "observer", pid: process.pid, startedAt: 0, lastActivity: 0 }
      })
      const presence = yield* subscribe(observer.presenceEvents, "the observer's presence events")
      // The observer is on the bus, subscribed, and sees the reload's generation.
      assert.include((yield* observer.list).map((session) => session.id), id)
      // pi only makes the extension's context stale: no session_shutdown closes the generation.
      a.session().dispose()
      yield* presence.next((event) => event._tag === "Left" && event.sessionId === id)
    })))
    assert.deepStrictEqual(a.errors, [])
  })

  it("/new and /fork are new intercom sessions; quit leaves the bus", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { sessionManager: SessionManager.create(world.cwd, `${world.root}/sessions-b`) })
    try {
      await act(b, { action: "status" })
      const first = b.session().sessionId
      await b.runtime.newSession()
      await b.rebind()
      const fresh = await act(b, { action: "status" })
      assert.include(fresh, `Session ID: ${b.session().sessionId}`)
      assert.notStrictEqual(b.session().sessionId, first)
      const leaf = b.session().sessionManager.getEntries().find((entry) => entry.type === "message")
      assert.isDefined(leaf)
      await b.runtime.fork(leaf?.id ?? "", { position: "at" })
      await b.rebind()
      const forked = await act(b, { action: "status" })
      assert.include(forked, `Session ID: ${b.session().sessionId}`)
      await act(a, { action: "list", scope: "all" })
      const forkId = b.session().sessionId
      assert.deepStrictEqual(listedIds(a.session()), [a.session().sessionId, forkId], "the sessions /new and /fork replaced left")
      await b.quit()
      await act(a, { action: "list", scope: "all" })
      assert.deepStrictEqual(listedIds(a.session()), [a.session().sessionId], "quit left the bus")
      assert.deepStrictEqual(b.errors, [])
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("/resume: mail queued while away arrives exactly once; a reload does not bring it again", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { sessionManager: SessionManager.create(world.cwd, `${world.root}/sessions-r`) })
    try {
      await act(b, { action: "status" })
      const bId = b.session().sessionId
      const bFile = b.session().sessionFile ?? ""
      await b.runtime.newSession() // away from the saved session
      await b.rebind()
      assert.strictEqual(await act(a, { action: "send", to: bId, message: "while you were out" }), `Message queued for ${bId}`)
      b.script(say("got it"))
      const arrived = settledAfter(b, 3)
      await b.runtime.switchSession(bFile)
      await b.rebind()
      await arrived
      assert.strictEqual(b.session().sessionId, bId)
      assert.deepStrictEqual(intercomMessages(b.session()).map((text) => text.split("\n\n").at(-1)), ["while you were out"])
      await b.session().reload()
      await b.rebind()
      assert.match(await act(b, { action: "status" }), /Connected: Yes/)
      assert.strictEqual(intercomMessages(b.session()).length, 1)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("a checkpoint the agent never saw is restored once on reload, never taken over by a fork", async () => {
    const b = await openPi(world, { sessionManager: SessionManager.create(world.cwd, `${world.root}/sessions-j`) })
    try {
      await act(b, { action: "status" })
      const bId = b.session().sessionId
      const from = { id: "peer-00000001", name: "peer", cwd: world.cwd, model: "m", pid: 1, startedAt: 0, lastActivity: 0 }
      const message = { id: "m-restore", timestamp: 1, content: { text: "accepted before a crash" } }
      // What the extension writes when it accepts a message, left without its delivery (a crash in between).
      b.session().sessionManager.appendCustomEntry("intercom_received", {
        from: "peer",
        message: { text: message.content.text },
        messageId: message.id,
        timestamp: 1,
        inbound: { recipient: bId, from, message, receivedAt: 1 }
      })
      const leaf = b.session().sessionManager.getLeafId() ?? ""
      await b.runtime.fork(leaf, { position: "at" })
      await b.rebind()
      assert.match(await act(b, { action: "status" }), /Connected: Yes/)
      assert.deepStrictEqual(intercomMessages(b.session()), [], "the fork did not take the parent's message")
      const parentFile = b.session().sessionManager.getHeader()?.parentSession ?? ""
      b.script(say("restored"))
      const restored = settledAfter(b, b.calls.length + 1)
      await b.runtime.switchSession(parentFile)
      await b.rebind()
      await restored
      assert.strictEqual(b.session().sessionId, bId)
      assert.strictEqual(intercomMessages(b.session()).filter((text) => text.endsWith("accepted before a crash")).length, 1)
      await b.session().reload()
      await b.rebind()
      assert.match(await act(b, { action: "status" }), /Connected: Yes/)
      assert.strictEqual(intercomMessages(b.session()).filter((text) => text.endsWith("accepted before a crash")).length, 1)
    } finally {
      await b.quit()
    }
  })

  it("Esc: a follow-up (delivery queue) the user cleared before it reached the model is delivered again after the run settles, once", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "esc-queue" })
    try {
      await act(b, { action: "status" })
      b.script(call("wait_for_intercom", { until: "abort" }), say("after the message"))
      const queued = nextEvent(b, (event) => event.type === "tool_execution_update")
      const run = b.session().prompt("work")
      await act(a, { action: "send", to: "esc-queue", message: "do not lose me either", delivery: "queue" })
      await queued
      const again = settledAfter(b, 4)
      b.session().clearQueue() // Esc clears pi's follow-up queue as well as its steering queue
      await b.session().abort()
      await run
      await again
      assert.strictEqual(intercomMessages(b.session()).length, 1)
      assert.match(intercomMessages(b.session())[0] ?? "", /do not lose me either$/)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("Esc: a steered message the user cleared before it reached the model is delivered again after the run settles, once", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { name: "esc" })
    try {
      await act(b, { action: "status" })
      b.script(call("wait_for_intercom", { until: "abort" }), say("after the message"))
      const queued = nextEvent(b, (event) => event.type === "tool_execution_update")
      const run = b.session().prompt("work")
      await act(a, { action: "send", to: "esc", message: "do not lose me" })
      await queued
      const again = settledAfter(b, 4)
      b.session().clearQueue() // what pi's TUI does on Esc
      await b.session().abort()
      await run
      await again
      assert.strictEqual(intercomMessages(b.session()).length, 1)
      assert.match(intercomMessages(b.session())[0] ?? "", /do not lose me$/)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("a message received before pi wrote the session file stays the broker's: after a quit, the session's next connection gets it", async () => {
    const a = await openPi(world)
    // json: on the bus once open, with no prompt (a prompt would make pi write the file).
    const b = await openPi(world, { sessionManager: SessionManager.create(world.cwd, `${world.root}/sessions-unwritten`), mode: "json" })
    const bId = b.session().sessionId
    const file = b.session().sessionFile ?? ""
    try {
      // A passive message in a fresh session nobody has prompted: checkpointed and stored, in pi's memory only.
      const stored = nextEvent(b, (event) => event.type === "message_end" && event.message.role === "custom")
      assert.strictEqual(await act(a, { action: "send", to: bId, message: "fyi before any prompt", delivery: "passive" }), `Message sent to ${bId}`)
      await stored
      assert.isFalse(fs.existsSync(file), "test setup: pi has not written the session file")
      await b.quit()
      assert.isFalse(fs.existsSync(file), "test setup: a quit writes no file either")
      // The same session id connects again: the broker kept the message, unconfirmed, and hands it over
      // (one the broker was told was read never comes again: the wait below would time out).
      const again = await openPi(world, { sessionManager: SessionManager.inMemory(world.cwd, { id: bId }) })
      try {
        await intercomMessageCount(again, 1)
        assert.deepStrictEqual(intercomMessages(again.session()).map(body), ["fyi before any prompt"])
      } finally {
        await again.quit()
      }
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("once pi has written the session file (the first prompt), what was withheld is confirmed: the next connection does not get it again", async () => {
    const a = await openPi(world)
    const b = await openPi(world, { sessionManager: SessionManager.create(world.cwd, `${world.root}/sessions-written`), mode: "json" })
    const bId = b.session().sessionId
    const file = b.session().sessionFile ?? ""
    try {
      const stored = nextEvent(b, (event) => event.type === "message_end" && event.message.role === "custom")
      assert.strictEqual(await act(a, { action: "send", to: bId, message: "fyi before the first prompt", delivery: "passive" }), `Message sent to ${bId}`)
      await stored
      await act(b, { action: "status" })
      assert.isTrue(fs.existsSync(file), "test setup: the prompt made pi write the session file")
      await b.quit()
      // Mail the broker queued after the quit comes after anything it kept of b's.
      await reopenedGetsOnlyNewMail(a, bId)
    } finally {
      await a.quit()
      await b.quit()
    }
  })

  it("a session pi has not saved withholds at most unsavedMessageLimit messages: a warning at half of it; past it they are confirmed anyway, with a warning that says so", async () => {
    const a = await openPi(world)
    const ui = recordingUI()
    const config = path.join(world.agentDir, "intercom", "config.json")
    // Read when b's session starts (json: it joins the bus before openPi returns); no other session sees it.
    writeConfig(world, { unsavedMessageLimit: 2 })
    const opening = openPi(world, {
      sessionManager: SessionManager.create(world.cwd, `${world.root}/sessions-bounded`),
      mode: "json",
      ui
    })
    const b = await opening.finally(() => fs.rmSync(config))
    const bId = b.session().sessionId
    const file = b.session().sessionFile ?? ""
    const passive = async (text: string) => {
      const stored = nextEvent(b, (event) => event.type === "message_end" && event.message.role === "custom")
      assert.strictEqual(await act(a, { action: "send", to: bId, message: text, delivery: "passive" }), `Message sent to ${bId}`)
      await stored
    }
    try {
      await passive("one")
      // Half of the limit: a warning that says how many are held, why, and what to do.
      const holding = await ui.nextNotice((notice) => notice.message.includes("not confirmed yet"))
      assert.strictEqual(holding.type, "warning")
      assert.include(holding.message, "1 received message not confirmed yet: pi has not saved this session")
      assert.include(holding.message, "Send a prompt to save the session")
      assert.include(await ui.nextStatus("intercom", (text) => text.includes("not saved")), "1 message not saved yet")

      await passive("two")
      await passive("three")
      const released = await ui.nextNotice((notice) => notice.message.includes("are confirmed once pi has them"))
      assert.strictEqual(released.type, "warning")
      assert.include(released.message, "more than 2 messages (unsavedMessageLimit)")
      assert.include(released.message, "the 3 held, and what comes next, are confirmed once pi has them")
      assert.include(released.message, "a quit or crash before the first prompt loses them")
      assert.include(await ui.nextStatus("intercom", (text) => text.includes("send a prompt")), "messages not saved: send a prompt")
      assert.strictEqual(ui.notices.length, 2, "each warning once")
      assert.isFalse(fs.existsSync(file), "test setup: pi has not written the session file")

      await b.quit()
      // The broker was told: the session's next connection gets only what came after the quit.
      await reopenedGetsOnlyNewMail(a, bId)
    } finally {
      await a.quit()
      await b.quit()
    }
  })
})
