/**
 * `sessionNotifyPort`: notices and results as sends of the engine's own
 * session — acknowledged only when the broker accepted them, `passive` when
 * they must not wake the parent.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { NotDelivered } from "../../src/session/errors.ts"
import type { IntercomSessionService, SendRequest } from "../../src/session/models.ts"
import { sessionNotifyPort } from "../../src/workflow/sessionPort.ts"

const sent = (to: string) => ({
  _tag: "Sent" as const,
  to,
  targetId: undefined,
  messageId: "m-1",
  delivery: "socket_delivered" as const,
  replyTo: undefined,
  text: `Message sent to ${to}`
})

describe("sessionNotifyPort", () => {
  it.effect("wake sends steer, no wake sends passive; the port's parent is kept", () =>
    Effect.gen(function*() {
      const requests: Array<SendRequest> = []
      const send: IntercomSessionService["send"] = (request) => Effect.sync(() => (requests.push(request), sent(request.to)))
      const port = sessionNotifyPort({ send }, "boss")
      yield* port.send("boss", "done", { wake: true })
      yield* port.send("boss", "waiting", { wake: false })
      assert.strictEqual(port.parentSession, "boss")
      assert.deepStrictEqual(requests.map((r) => [r.to, r.message, r.delivery]), [["boss", "done", "steer"], ["boss", "waiting", "passive"]])
    }))

  it.effect("a refused or declined send is DeliveryRefused with the session's words (so it is retried, never counted as delivered)", () =>
    Effect.gen(function*() {
      const refused = sessionNotifyPort({
        send: (request) => Effect.fail(new NotDelivered({ kind: "Message", to: request.to, reason: "Session not found" }))
      }, "boss")
      const error = yield* Effect.flip(refused.send("boss", "done", { wake: true }))
      assert.strictEqual(error.reason, `Message to "boss" was not delivered: Session not found`)
      const declined = sessionNotifyPort({ send: () => Effect.succeed({ _tag: "Declined", text: "Message cancelled by user" }) }, "boss")
      assert.strictEqual((yield* Effect.flip(declined.send("boss", "done", { wake: true }))).reason, "the send was declined")
    }))
})
