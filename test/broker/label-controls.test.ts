/**
 * Names, ids and attachment labels are shown on one line by every `list`
 * consumer and every message's reader, so the broker refuses a control
 * character in them (`LABEL_CONTROL`: C0 with TAB, LF and CR, DEL, C1): a
 * `register` or `presence` with an `error` frame naming the field (then the
 * connection ends), a `send` whose attachment holds one with
 * `E_INVALID_MESSAGE`. An attachment's content is a text body: TAB, LF and
 * CR pass, as in a message text (C-TOOL-6). Real sockets.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type Attachment } from "../../src/protocol/frames.ts"
import { assertDelivered, assertFailed } from "../support/assertions.ts"
import { list, message, registerFrame, send, type TestBroker, withBroker } from "../support/broker.ts"

const registration = (field: string, code: string) =>
  `Registration refused: "${field}" contains the control character U+${code}, which ${field} may not hold. Use a ${field} without control characters.`

/** `frame` sent as a register: answered with `error` text `expected`, the connection closed, nobody told. */
const refusedRegister = (broker: TestBroker, frame: Record<string, unknown>, expected: string) =>
  Effect.gen(function*() {
    const watcher = yield* broker.session({ sessionId: "watcher" })
    const bad = yield* broker.connect("bad")
    yield* bad.send(frame)
    assert.strictEqual((yield* bad.next("error")).error, expected)
    yield* bad.waitClosed()
    yield* watcher.client.roundTrip
    yield* watcher.client.expectNothing("session_joined")
    assert.deepStrictEqual((yield* list(watcher.client)).map((session) => session.id), ["watcher"])
  })

describe("control characters in names and ids", () => {
  it.live("a register whose name holds ESC is refused with an error frame naming the field and the character", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      yield* refusedRegister(broker, registerFrame({ sessionId: "evil", name: "ok\u001b[2J\u001b]0;owned\u0007" }), registration("name", "001B"))
    }))

  it.live("so is one whose name holds TAB, LF or the C1 CSI U+009B", () =>
    Effect.gen(function*() {
      for (const [name, code] of [["a\tb", "0009"], ["line\nforged", "000A"], ["x\u009b31m", "009B"]] as const) {
        const broker = yield* withBroker()
        yield* refusedRegister(broker, registerFrame({ sessionId: "evil", name }), registration("name", code))
      }
    }), 20_000)

  it.live("a sessionId holding a C1 control (NEL, U+0085) is refused as C0 ones were", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      yield* refusedRegister(broker, registerFrame({ sessionId: "evil\u0085" }), registration("sessionId", "0085"))
    }))

  it.live("a presence update whose name holds ESC is refused; the session leaves and its peers keep the old name", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const watcher = yield* broker.session({ sessionId: "watcher" })
      const bad = yield* broker.session({ sessionId: "bad", name: "fine" })
      yield* watcher.client.next("session_joined", (frame) => frame.session.id === "bad")
      yield* bad.client.send({ type: "presence", name: "x\u001b[31my" })
      assert.strictEqual(
        (yield* bad.client.next("error")).error,
        `Presence update refused: "name" contains the control character U+001B, which name may not hold. Use a name without control characters.`
      )
      yield* watcher.client.next("session_left", (frame) => frame.sessionId === "bad")
      // bad's connection is closed; a round trip on the watcher reads everything queued for it before.
      yield* watcher.client.roundTrip
      yield* watcher.client.expectNothing("presence_update")
    }))

  it.live("names with printable Unicode, emoji and zero-width joiners still register", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const peer = yield* broker.session({ sessionId: "p", name: "Ünïcödé 👩‍💻 planner" })
      assert.strictEqual((yield* list(peer.client))[0]?.name, "Ünïcödé 👩‍💻 planner")
    }))
})

describe("control characters in attachments", () => {
  const attached = (attachment: Attachment) => message("see attached", { content: { text: "see attached", attachments: [attachment] } })
  const reason = (field: string, code: string, position: number) =>
    `Invalid message format: message.content.attachments[0].${field} contains the control character U+${code} at position ${position}; an attachment's name and language may hold no control character, its content only TAB, LF and CR. Nothing was sent: remove it and send again`

  it.live("a send whose attachment name, language or content holds a forbidden control is refused, naming it; nothing is delivered", () =>
    Effect.gen(function*() {
      const broker = yield* withBroker()
      const a = yield* broker.session({ sessionId: "a" })
      const b = yield* broker.session({ sessionId: "b" })
      const refused: ReadonlyArray<readonly [Attachment, string]> = [
        [{ type: "file", name: "a.ts\u001b[2J", content: "x" }, reason("name", "001B", 5)],
        [{ type: "file", name: "a\nb.ts", content: "x" }, reason("name", "000A", 2)],
        [{ type: "snippet", name: "a.ts", content: "x", language: "ts\u009b" }, reason("language", "009B", 3)],
        [{ type: "snippet", name: "a.ts", content: "let x\u0007 = 1", language: "ts" }, reason("content", "0007", 6)]
      ]
      for (const [attachment, expected] of refused) {
        assertFailed(yield* send(a.client, "b", attached(attachment)), "E_INVALID_MESSAGE", expected)
      }
      const fine = attached({ type: "snippet", name: "a.ts", content: "if (x) {\n\treturn 1\r\n}", language: "ts" })
      assertDelivered(yield* send(a.client, "b", fine))
      // The refused ones were never delivered: the first message b gets is the fine one.
      const first = yield* b.client.next("message")
      assert.strictEqual(first.message.id, fine.id)
      assert.deepStrictEqual(first.message.content, fine.content)
    }))
})
