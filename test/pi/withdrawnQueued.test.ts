/**
 * A message its sender withdraws while it waits in pi's queue (a steer, or a
 * follow-up for the sender's `queue`), after the extension handed it to pi:
 * in a real pi session with the scripted model, the model's request shows it
 * marked withdrawn (`Withdrawn: <name> cancelled this message …`), not live
 * with the reply hint, and the session saves it so (src/pi/queuedInbound.ts,
 * the extension's `message_end`); a withdrawn follow-up starts no intercom
 * turn, so a reply without `to` in the request pi still makes for it finds
 * nothing to answer. A passive message pi holds until the agent's turn ends
 * (saved then with no `message_end` the extension sees) is marked in place
 * when its withdrawal comes — pi keeps the content array and details object
 * it was handed — and saved so, with no `turn_end` or `agent_before_settle`
 * handler (each makes pi build the boundary context). The sender is a plain client of the
 * world's broker; the receiver's `cancellation_requested` receipt says its
 * session noted the withdrawal, so no sleep orders anything.
 */
import type { Message } from "@earendil-works/pi-ai"
import { Effect, Exit, Scope } from "effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "vitest"
import { IntercomClient } from "../../src/client/IntercomClient.ts"
import type { IntercomClientService } from "../../src/client/models.ts"
import { registrationOf, subscribe } from "../client/support.ts"
import {
  act,
  call,
  closeWorld,
  intercomMessages,
  makeWorld,
  nextEvent,
  openPi,
  say,
  textOf,
  toolResults
} from "./support.ts"

const world = makeWorld()
afterAll(() => closeWorld(world))

const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)

interface Sender {
  readonly client: IntercomClientService
  /** Resolves once the receiver's `cancellation_requested` receipt for `messageId` came: it noted the withdrawal. */
  readonly cancelTold: (messageId: string) => Promise<void>
  readonly close: () => Promise<void>
}

/** A plain client named "sender" of the world's broker (a pi session started it). */
const openSender = async (): Promise<Sender> => {
  const scope = Effect.runSync(Scope.make())
  const intercomDir = path.join(world.agentDir, "intercom")
  const client = await run(Scope.provide(
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
  const controls = await run(Scope.provide(subscribe(client.controls, "the sender's receipts"), scope))
  return {
    client,
    cancelTold: (messageId) =>
      run(Effect.asVoid(controls.next(
        (event) =>
          event._tag === "Receipt" && event.receipt.messageId === messageId && event.receipt.status === "cancellation_requested",
        "20 seconds"
      ))),
    close: () => run(Scope.close(scope, Exit.void))
  }
}

/** The model request's message that carries `body`, as text. */
const seen = (request: ReadonlyArray<Message>, body: string): string | undefined =>
  request.map(textOf).find((text) => text.endsWith(body))

// Real pi SDK sessions and a broker process: more room than the default on a loaded 2-core machine.
describe("pi extension: a message withdrawn while it waits in pi's queue", { timeout: 60_000 }, () => {
  for (const delivery of ["queue", "steer"] as const) {
    it(`an ask delivered as ${delivery === "queue" ? "a follow-up" : "a steer"} and cancelled before the model got it reaches the model marked withdrawn${delivery === "queue" ? ", starting no intercom turn" : ""}`, async () => {
      const b = await openPi(world, { name: "bravo" })
      const sender = await openSender()
      try {
        await act(b, { action: "status" }) // B is on the bus
        const id = `q-${delivery}-${randomUUID()}`
        const body = `please delete the ${delivery} branch`
        // Busy in a tool until two messages were handed to pi: the ask, then a passive note that ends the tool.
        // The follow-up still gets the request pi's queue calls for, and a reply there without `to` finds no
        // intercom turn: the withdrawn ask started none.
        b.script(
          call("wait_for_intercom", { messages: 2 }),
          say("done with the tool"),
          ...(delivery === "queue" ? [call("intercom", { action: "reply", message: "deleted" }), say("the follow-up's turn")] : [])
        )
        const before = b.calls.length
        const busy = nextEvent(b, (event) => event.type === "tool_execution_start" && event.toolName === "wait_for_intercom")
        const bRun = b.session().prompt("work")
        await busy
        const handed = nextEvent(b, (event) => event.type === "tool_execution_update")
        await run(sender.client.send({
          to: b.session().sessionId,
          ...(delivery === "queue" ? { delivery: "queue" as const } : {}),
          message: { id, timestamp: Date.now(), content: { text: body }, expectsReply: true },
          askTimeoutMs: 600_000
        }))
        await handed // in pi's queue
        assert.isTrue(await run(sender.client.cancel(id)), "the cancel reached bravo")
        await sender.cancelTold(id) // bravo's session noted the withdrawal
        await run(sender.client.send({
          to: b.session().sessionId,
          delivery: "passive",
          message: { id: `note-${randomUUID()}`, timestamp: Date.now(), content: { text: "a passive note" } }
        }))
        await bRun

        // The follow-up waits for the run to stop (the third request); the steer joins the second.
        const calls = b.calls.slice(before)
        assert.strictEqual(calls.findIndex((request) => seen(request, body) !== undefined), delivery === "queue" ? 2 : 1)
        const text = seen(calls.at(-1) ?? [], body) ?? ""
        assert.include(text, "Withdrawn: sender cancelled this message before it reached you; it needs no action and no reply.")
        assert.notInclude(text, "To reply, use the intercom tool")
        // Saved so: the session's history (what a resume or a compaction reads) says withdrawn too.
        const stored = intercomMessages(b.session()).filter((message) => message.endsWith(body))
        assert.deepStrictEqual(stored, [text])
        if (delivery === "queue") {
          assert.strictEqual(toolResults(b.session()).at(-1), "No active intercom context to reply to")
        }
      } finally {
        await sender.close()
        await b.quit()
      }
    })
  }

  it("a passive message pi holds until the turn ends, cancelled meanwhile, is saved and reaches the model marked withdrawn", async () => {
    const b = await openPi(world, { name: "bravo" })
    const sender = await openSender()
    try {
      await act(b, { action: "status" }) // B is on the bus
      const id = `p-held-${randomUUID()}`
      const body = "a passive note about the held branch"
      // Busy in a tool until two messages were handed to pi: pi holds passive ones until the tool's turn ends.
      b.script(call("wait_for_intercom", { messages: 2 }), say("done with the tool"))
      const before = b.calls.length
      const busy = nextEvent(b, (event) => event.type === "tool_execution_start" && event.toolName === "wait_for_intercom")
      const bRun = b.session().prompt("work")
      await busy
      const handed = nextEvent(b, (event) => event.type === "tool_execution_update")
      await run(sender.client.send({
        to: b.session().sessionId,
        delivery: "passive",
        message: { id, timestamp: Date.now(), content: { text: body } }
      }))
      await handed // held by pi
      assert.isTrue(await run(sender.client.cancel(id)), "the cancel reached bravo")
      await sender.cancelTold(id) // bravo's session noted the withdrawal
      await run(sender.client.send({
        to: b.session().sessionId,
        delivery: "passive",
        message: { id: `note-${randomUUID()}`, timestamp: Date.now(), content: { text: "another passive note" } }
      }))
      await bRun

      const text = seen(b.calls.slice(before).at(-1) ?? [], body) ?? ""
      assert.include(text, "Withdrawn: sender cancelled this message before it reached you; it needs no action and no reply.")
      const stored = intercomMessages(b.session()).filter((message) => message.endsWith(body))
      assert.deepStrictEqual(stored, [text], "saved unmarked")
    } finally {
      await sender.close()
      await b.quit()
    }
  })

  it("the extension registers no turn_end or agent_before_settle handler (pi would build the boundary context for each)", async () => {
    const b = await openPi(world, { name: "charlie" })
    try {
      await act(b, { action: "status" }) // the extension is loaded and its generation started
      assert.isTrue(b.session().hasExtensionHandlers("message_end"), "the extension is not loaded: the test checks nothing")
      assert.isFalse(b.session().hasExtensionHandlers("turn_end"))
      assert.isFalse(b.session().hasExtensionHandlers("agent_before_settle"))
    } finally {
      await b.quit()
    }
  })
})
