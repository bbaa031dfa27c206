/**
 * pi's client instance across a pi restart (instance.ts): a pi session that
 * resumes a session file continues the client instance its checkpoints name,
 * so the broker's cancel of a message it restored from its journal reaches
 * it; a session of the same id without that journal is another instance; and
 * a second session resuming the file while the first runs takes a fresh one
 * (a takeover, as before), never the live one's, and leaves the journal's
 * undelivered messages to the first, which shows them — decided per
 * checkpoint, by whether a live generation holds the instance it names, not by
 * the instance the latest checkpoint names. The pi sessions are pi SDK
 * sessions in this test's process (the broker is a process of its own): two
 * processes are kept apart by the same kernel lock (FileLock.ts), which its
 * own tests run across processes.
 */
import { SessionManager } from "@earendil-works/pi-coding-agent"
import { Effect, Exit, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import { claimInstance, instancesDir } from "../../src/pi/instance.ts"
import { checkpointEntry } from "../../src/pi/journal.ts"
import type { IntercomClientService } from "../../src/client/models.ts"
import { registrationOf, subscribe } from "../client/support.ts"
import {
  act,
  actResult,
  call,
  closeWorld,
  intercomMessages,
  makeWorld,
  nextEvent,
  openPi,
  type Pi,
  recordingUI,
  say
} from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

interface Sender {
  readonly client: IntercomClientService
  /** Resolves once the receiver's `cancellation_requested` receipt for `messageId` came (it dropped the pending ask first). */
  readonly cancelTold: (messageId: string) => Promise<void>
  readonly close: () => Promise<void>
}

/** A plain client of the world's broker (a pi session runs it), open until `close`. */
const openSender = async (): Promise<Sender> => {
  const scope = Effect.runSync(Scope.make())
  const intercomDir = path.join(world.agentDir, "intercom")
  const client = await Effect.runPromise(Scope.provide(
    IntercomClient.make({
      agentDir: world.agentDir,
      intercomDir,
      socketPath: path.join(intercomDir, "broker.sock"),
      sessionId: `sender-${randomUUID()}`,
      registration: registrationOf("sender"),
      launch: false
    }),
    scope
  ))
  const controls = await Effect.runPromise(Scope.provide(subscribe(client.controls, "the sender's receipts"), scope))
  return {
    client,
    cancelTold: (messageId) =>
      Effect.runPromise(Effect.asVoid(controls.next(
        (event) =>
          event._tag === "Receipt" && event.receipt.messageId === messageId && event.receipt.status === "cancellation_requested",
        "20 seconds"
      ))),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)

/** The ask `id` from the sender to `to`. */
const ask = (sender: IntercomClientService, to: string, id: string, text: string, delivery?: "queue") =>
  run(sender.send({
    to,
    ...(delivery === undefined ? {} : { delivery }),
    message: { id, timestamp: Date.now(), content: { text }, expectsReply: true },
    askTimeoutMs: 600_000
  }))

const delivered = (pi: Pi): number => intercomMessages(pi.session()).filter((text) => text.endsWith("cancel me later")).length

/** Resolves once the ask restored from the journal reached `pi`'s model and the run it started settled; checks it came once. */
const restoredOnce = async (pi: Pi): Promise<void> => {
  if (delivered(pi) === 0 || pi.session().isStreaming) {
    await nextEvent(pi, (event) => event.type === "agent_settled" && delivered(pi) > 0)
  }
  assert.strictEqual(delivered(pi), 1)
}

/** The custom types of the entries of a session file, and each entry's text, in order. */
const fileEntries = (file: string): ReadonlyArray<{ readonly customType: unknown; readonly text: string }> =>
  fs.readFileSync(file, "utf8").trim().split("\n").map((line) => {
    const entry: unknown = JSON.parse(line)
    return { customType: typeof entry === "object" && entry !== null ? Reflect.get(entry, "customType") : undefined, text: line }
  })

/**
 * A file-backed session that accepted (checkpointed, confirmed) the ask `id`
 * as a follow-up while busy, and quit before the model got it: its file holds
 * the checkpoint, naming the instance that received it, and no delivery; the
 * quit removed that instance's lock file.
 * Returns the session id, the file and that instance.
 */
const quitWithAskInHand = async (
  sender: IntercomClientService,
  dir: string,
  id: string
): Promise<{ readonly sessionId: string; readonly file: string }> => {
  const b = await openPi(world, { sessionManager: SessionManager.create(world.cwd, dir) })
  let sessionId = ""
  let file = ""
  try {
    await act(b, { action: "status" }) // a prompt: pi writes the session file; B is on the bus
    sessionId = b.session().sessionId
    file = b.session().sessionFile ?? ""
    b.script(call("wait_for_intercom", { until: "abort" }))
    const queued = nextEvent(b, (event) => event.type === "tool_execution_update")
    void b.session().prompt("work").catch(() => undefined)
    await ask(sender, sessionId, id, "cancel me later", "queue")
    await queued // checkpointed, and in pi's follow-up queue
  } finally {
    await b.quit() // pi drops its queue; the client confirms what it read before it leaves: the broker's route names its instance
  }
  // What the quit left: the checkpoint, naming an instance, and no delivery of the ask.
  const entries = fileEntries(file)
  const checkpoints = entries.filter((entry) => entry.customType === "intercom_received")
  assert.strictEqual(checkpoints.length, 1)
  const instance = /"instance":"([0-9a-f-]{36})"/.exec(checkpoints[0]?.text ?? "")?.[1]
  assert.isDefined(instance, "the checkpoint names its instance")
  // A clean quit removed the instance's lock file as it let go (FileLock.ts `holdRemovableFileLock`).
  assert.isFalse(fs.existsSync(path.join(instancesDir(path.join(world.agentDir, "intercom")), `${instance}.lock`)))
  assert.isFalse(entries.some((entry) => entry.customType === "intercom_message"), "the model never got the ask")
  return { sessionId, file }
}

/** The `pending` action's text. */
const pending = (pi: Pi) => act(pi, { action: "pending" })

// Real pi SDK sessions and a broker process: more room than the default on a loaded 2-core machine.
describe("pi's client instance across a restart", { timeout: 60_000 }, () => {
  it("a session resuming the session file after the first ended continues its instance: the cancel of an ask restored from the journal reaches it", async () => {
    const sender = await openSender()
    try {
      const { file, sessionId } = await quitWithAskInHand(sender.client, path.join(world.root, "sessions-resume"), "m-resume")
      const b = await openPi(world, { sessionManager: SessionManager.open(file) })
      try {
        b.script(say("restored"))
        await restoredOnce(b)
        assert.strictEqual(b.session().sessionId, sessionId)
        assert.include(await pending(b), "m-resume")
        // The broker gave the ask to the instance that quit; this process is that instance again.
        assert.isTrue(await run(sender.client.cancel("m-resume")), "the cancel reached the resumed process")
        await sender.cancelTold("m-resume") // its receipt: the resumed process dropped the pending ask first
        assert.strictEqual(await pending(b), "No unresolved inbound asks.")
        assert.deepStrictEqual(b.errors, [])
      } finally {
        await b.quit()
      }
    } finally {
      await sender.close()
    }
  })

  it("a session of the same id that did not restore the journal (not resumed from the file) is another instance: the cancel is refused", async () => {
    const sender = await openSender()
    try {
      const { sessionId } = await quitWithAskInHand(sender.client, path.join(world.root, "sessions-fresh"), "m-fresh")
      // json: on the bus once open.
      const other = await openPi(world, { sessionManager: SessionManager.inMemory(world.cwd, { id: sessionId }), mode: "json" })
      try {
        assert.match(await act(other, { action: "status" }), /Connected: Yes/)
        assert.isFalse(await run(sender.client.cancel("m-fresh")), "the cancel went to a process that never got the ask")
      } finally {
        await other.quit()
      }
    } finally {
      await sender.close()
    }
  })

  it("two sessions that read the file before either showed its ask: the one holding the journal's instance shows it, the other leaves it to that one and warns", async () => {
    const sender = await openSender()
    try {
      const { file } = await quitWithAskInHand(sender.client, path.join(world.root, "sessions-both"), "m-both")
      // Both read the file now, as two pi processes started on it at once do: the ask is undelivered in each.
      const firstManager = SessionManager.open(file)
      const secondManager = SessionManager.open(file)
      const first = await openPi(world, { sessionManager: firstManager, ui: recordingUI() })
      let second: Pi | undefined
      try {
        first.script(say("restored"))
        await restoredOnce(first) // the holder of the journal's instance has the ask
        const secondUI = recordingUI()
        second = await openPi(world, { sessionManager: secondManager, ui: secondUI })
        // Its runtime is built (the journal read) once a tool call ran: the ask would be pending from then.
        assert.strictEqual(await pending(second), "No unresolved inbound asks.", "the second left the ask to the first")
        assert.strictEqual(delivered(second), 0, "its model never got the ask")
        const notice = await secondUI.nextNotice((shown) => shown.message.includes("open in another pi process"))
        assert.include(notice.message, "1 message this session received earlier")
        assert.strictEqual(notice.type, "warning")
        assert.strictEqual(delivered(first), 1)
        assert.deepStrictEqual(second.errors, [])
      } finally {
        await second?.quit()
        await first.quit()
      }
    } finally {
      await sender.close()
    }
  })

  it("a second session resuming the file while the first runs (both in this process) takes a fresh instance: it takes the id over, the cancel does not reach it; a /reload of the first continues the instance", async () => {
    const sender = await openSender()
    try {
      const { file } = await quitWithAskInHand(sender.client, path.join(world.root, "sessions-twice"), "m-twice")
      const firstUI = recordingUI()
      const first = await openPi(world, { sessionManager: SessionManager.open(file), ui: firstUI })
      let second: Pi | undefined
      try {
        first.script(say("restored"))
        await restoredOnce(first) // the first process has the ask (its delivery is in the file now)
        second = await openPi(world, { sessionManager: SessionManager.open(file), ui: recordingUI() })
        assert.isFalse((await actResult(second, { action: "status" })).isError) // it registers: a takeover
        assert.strictEqual(await pending(second), "No unresolved inbound asks.", "the second never got the ask")
        assert.isFalse(await run(sender.client.cancel("m-twice")), "the cancel went to the process that never got the ask")
        // A takeover, told as one (a shared instance would be taken for the first one's own reconnect, silently).
        await firstUI.nextNotice((notice) => notice.message.includes("taken over"))
        await second.quit()
        second = undefined
        // The first takes the id back with a new generation: the instance its journal names, which it holds again.
        await first.session().reload()
        await first.rebind()
        assert.match(await act(first, { action: "status" }), /Connected: Yes/)
        assert.isTrue(await run(sender.client.cancel("m-twice")), "the cancel reached the process that has the ask")
        assert.deepStrictEqual(first.errors, [])
      } finally {
        await second?.quit()
        await first.quit()
      }
    } finally {
      await sender.close()
    }
  })

  it("the second session, after a message of its own (its checkpoint the latest) and a /reload, still leaves the first's ask to the first", async () => {
    const sender = await openSender()
    try {
      const { file, sessionId } = await quitWithAskInHand(sender.client, path.join(world.root, "sessions-reload"), "m-reload")
      // Both read the file before either showed the ask, as two pi processes started on it at once do.
      const firstManager = SessionManager.open(file)
      const secondManager = SessionManager.open(file)
      const first = await openPi(world, { sessionManager: firstManager, ui: recordingUI() })
      let second: Pi | undefined
      try {
        first.script(say("restored"))
        await restoredOnce(first)
        second = await openPi(world, { sessionManager: secondManager, ui: recordingUI() })
        assert.strictEqual(await pending(second), "No unresolved inbound asks.", "the second left the ask to the first")
        // A message of the second's own: checkpointed, naming its fresh instance, the latest checkpoint now.
        const s = second
        s.script(say("got it"))
        const got = nextEvent(s, (event) =>
          event.type === "agent_settled" && intercomMessages(s.session()).some((text) => text.endsWith("hello second")))
        await run(sender.client.send({
          to: sessionId,
          message: { id: "m-own", timestamp: Date.now(), content: { text: "hello second" }, expectsReply: false }
        }))
        await got
        await s.session().reload()
        await s.rebind()
        assert.strictEqual(await pending(s), "No unresolved inbound asks.", "the first, live, holds the instance the ask's checkpoint names")
        assert.strictEqual(delivered(s), 0, "its model never got the ask")
        assert.strictEqual(delivered(first), 1)
        assert.deepStrictEqual(s.errors, [])
      } finally {
        await second?.quit()
        await first.quit()
      }
    } finally {
      await sender.close()
    }
  })

  it("a resume restores the ask checkpointed by an instance nobody holds, though the latest checkpoint names one a live generation holds (whose message it leaves, and says so)", async () => {
    const sender = await openSender()
    const holder = await run(Scope.make())
    try {
      const { file, sessionId } = await quitWithAskInHand(sender.client, path.join(world.root, "sessions-orphan"), "m-orphan")
      // Another generation checkpointed a message of its own later, and still runs holding its instance.
      const other = randomUUID()
      const held = await run(Scope.provide(claimInstance({ intercomDir: path.join(world.agentDir, "intercom"), inherited: other }), holder))
      assert.strictEqual(held.instanceId, other)
      const manager = SessionManager.open(file)
      const from = { id: "sender-x", cwd: world.cwd, model: "m", pid: 1, startedAt: 1, lastActivity: 1 }
      const theirs = { id: "m-theirs", timestamp: 1, content: { text: "a note for the other one" } }
      manager.appendCustomEntry("intercom_received", checkpointEntry(sessionId, { from, message: theirs, receivedAt: 1 }, other))
      const ui = recordingUI()
      const b = await openPi(world, { sessionManager: manager, ui })
      try {
        b.script(say("restored"))
        await restoredOnce(b) // nobody holds the instance that received the ask: restored here
        assert.include(await pending(b), "m-orphan")
        assert.isFalse(intercomMessages(b.session()).some((text) => text.endsWith("a note for the other one")), "left to its live holder")
        const notice = await ui.nextNotice((shown) => shown.message.includes("open in another pi process"))
        assert.include(notice.message, "1 message this session received earlier")
        assert.deepStrictEqual(b.errors, [])
      } finally {
        await b.quit()
      }
    } finally {
      await run(Scope.close(holder, Exit.void))
      await sender.close()
    }
  })
})
