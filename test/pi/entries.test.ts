/**
 * The plain readers of the extension's custom messages (src/pi/entries.ts):
 * `deliveredMessage` names the message a turn starts with by its sender and
 * its id, since two senders may use one message id.
 */
import { assert, describe, it } from "@effect/vitest"
import { deliveredMessage } from "../../src/pi/entries.ts"

describe("deliveredMessage", () => {
  it("reads the message id, the sender's session id and the intent", () => {
    const details = { messageId: "q-1", from: { id: "b0b0-1111", name: "B" }, expectsReply: true, intent: "trigger" }
    assert.deepStrictEqual(deliveredMessage(details), { messageId: "q-1", from: "b0b0-1111", intent: "trigger" })
  })

  it("details without the sender's id name no message", () => {
    assert.isUndefined(deliveredMessage({ messageId: "q-1", intent: "trigger" }))
    assert.isUndefined(deliveredMessage({ messageId: "q-1", from: { name: "B" }, intent: "trigger" }))
  })
})
