/**
 * Frames a reader holds behind parked output (PeerReader.ts) when its
 * session is taken over (P16) before they are handed back — simulation seed
 * 366 of `--held-return`, as a Router driven by hand: a session's
 * connection sends a recipient that does not read more than its outbox
 * takes, then a `send` and its `unregister`, which the reader holds; the
 * session registers again on a new connection, which takes the old one
 * over.
 *
 * - The held `unregister` is never handled (no departure: the session is
 *   taken over), and the broker's `ReaderObserver` says so: it reports the
 *   frames it handles as it handles them, and the held ones as dropped. The
 *   simulation's ledger counts a departure from there, not from the read.
 * - The answers to the sends the broker handled (`delivered`), parked
 *   behind a message that did not fit, are written to the old connection
 *   before its `taken_over`, in the order the sends came, ahead of the
 *   answers to the held sends; its parked messages to others stay parked.
 * - The held `send` is not lost without a word: the old connection is
 *   answered `delivery_failed` (`E_SENDER_NOT_FOUND`, the answer to a send
 *   from a connection that holds no session), before its `taken_over` — or,
 *   for a held retry of a send the broker handled, what its replay record
 *   says (P46). A base client's held `supervisor_send` (a protocol error, had
 *   it been handled) is answered `E_INVALID_MESSAGE` naming `supervisor-v1`
 *   instead: the client lacks the extension, its session is not the problem.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Peer } from "../../src/broker/Peer.ts"
import type { ReaderObserverService } from "../../src/broker/ReaderObserver.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { SUPERVISOR_V1, TAKEOVER_V1 } from "../../src/protocol/features.ts"
import type { Connection } from "../../src/transport/Connection.ts"
import { message, registerFrame } from "../support/broker.ts"
import { fakeConnection } from "../support/fakeConnection.ts"
import { handRouter } from "../support/handRouter.ts"

/**
 * A frame's type, with the message text of a `send` or `message`, the id of
 * a `delivered` and the id and code of a `delivery_failed`.
 */
const labelOf = (text: string): string => {
  const parsed: { type: string; message?: { id: string; content: { text: string } }; messageId?: string; code?: string } = JSON
    .parse(text)
  if (parsed.type === "send" || parsed.type === "message") return `${parsed.type} ${parsed.message?.content.text}`
  if (parsed.type === "delivered") return `delivered ${parsed.messageId}`
  if (parsed.type === "delivery_failed") return `delivery_failed ${parsed.messageId} ${parsed.code}`
  return parsed.type
}

/** A send to the recipient "a" of a message with id `id` and text `text`. */
const sendOf = (id: string, text: string = id): Record<string, unknown> => ({
  type: "send",
  to: "a",
  message: { ...message(text), id }
})

/** A `delivery_failed` frame as written: its message id and reason. */
interface Refusal {
  readonly messageId: string
  readonly reason: string
}

/** A connection whose writes complete at once, noting each frame it writes in `written` (and each refusal in `answers`). */
const noting = (id: number, written: Array<string>, answers: Array<Refusal> = []): Connection => ({
  ...fakeConnection(id, false),
  write: (frames: ReadonlyArray<OutFrame>) => {
    for (const frame of frames) {
      const text = frameText(frame)
      written.push(labelOf(text))
      const parsed: { type: string; messageId?: string; reason?: string } = JSON.parse(text)
      if (parsed.type === "delivery_failed") answers.push({ messageId: parsed.messageId ?? "", reason: parsed.reason ?? "" })
    }
    return undefined
  }
})

/**
 * The seed-366 story up to the takeover; `features` are the old
 * connection's, `held` the frames its reader holds (by default a send,
 * `held-send`, and the unregister).
 */
const story = (
  features: ReadonlyArray<string>,
  held: ReadonlyArray<Record<string, unknown>> = [sendOf("held-send", "held"), { type: "unregister" }]
) =>
  Effect.gen(function*() {
    const handled: Array<string> = []
    const dropped: Array<string> = []
    // Both kinds of report in the order the observer was told them.
    const told: Array<string> = []
    const readers: ReaderObserverService = {
      handled: (connectionId, frames, from, to) => {
        for (let i = from; i < to; i++) handled.push(`#${connectionId} ${labelOf(frames[i]!)}`)
        told.push(`handled #${connectionId} ${frames.slice(from, to).map(labelOf).join(", ")}`)
      },
      dropped: (connectionId, frames) => {
        for (const frame of frames) dropped.push(`#${connectionId} ${labelOf(frame)}`)
        told.push(`dropped #${connectionId} ${frames.map(labelOf).join(", ")}`)
      }
    }
    const { attach, router } = yield* handRouter({ outboxCapacity: 2 }, undefined, { readers })
    const read = (peer: Peer, frames: ReadonlyArray<Record<string, unknown>>): void =>
      peer.reader.frames(frames.map((frame) => JSON.stringify(frame)))
    // The recipient does not read: its writer's first write never completes, its outbox fills.
    const recipient = attach(fakeConnection(1, true))
    read(recipient, [registerFrame({ sessionId: "a" })])
    const written: Array<string> = []
    const answers: Array<Refusal> = []
    const old = attach(noting(2, written, answers))
    read(old, [registerFrame({ sessionId: "d", frame: { features } })])
    read(old, [0, 1, 2, 3].map((i) => sendOf(`m${i}`)))
    assert.isDefined(old.reader.drainer, "no output was parked: the test sets up nothing")
    // What was written before the takeover: the answers to the sends that fitted.
    const before = [...written]
    // Held behind the parked output: the last send and the unregister.
    read(old, held)
    assert.notInclude(handled, "#2 unregister", "the held unregister was handled before the takeover: the test sets up nothing")
    written.length = 0
    // The session registers again on a new connection: a takeover of the old one.
    const fresh = attach(fakeConnection(3, false))
    read(fresh, [registerFrame({ sessionId: "d" })])
    return { handled, dropped, told, written, answers, before, old, fresh, recipient, heldId: "held-send", router }
  })

describe("frames held behind parked output when the session is taken over", () => {
  it.effect("the held unregister is reported dropped, never handled, and the session stays registered on the new connection", () =>
    Effect.gen(function*() {
      const { dropped, fresh, handled, old } = yield* story([])
      assert.deepStrictEqual(handled.filter((label) => label.startsWith("#2 ")), [
        "#2 register",
        "#2 send m0",
        "#2 send m1",
        "#2 send m2",
        "#2 send m3"
      ])
      assert.deepStrictEqual(dropped, ["#2 send held", "#2 unregister"])
      assert.include(handled, "#3 register")
      assert.isTrue(old.isClosing)
      assert.strictEqual(fresh.state, "registered")
      assert.strictEqual(fresh.session?.id, "d")
    }))

  it.effect("the observer is told of the new connection's register before the old connection's held frames are dropped by the takeover it causes", () =>
    Effect.gen(function*() {
      const { told } = yield* story([])
      // The register's batch ends the old connection at once; a watcher told after the batch would see the drop first.
      assert.deepStrictEqual(told.slice(-2), ["handled #3 register", "dropped #2 send held, unregister"])
    }))

  it.effect("the answers parked for the handled sends, then the held send's refusal, are written to the old connection in the order sent, before its taken_over", () =>
    Effect.gen(function*() {
      const { before, heldId, written } = yield* story([TAKEOVER_V1])
      // m0 fitted and was answered at once; the answers to m1–m3 were parked behind m1's message.
      assert.deepStrictEqual(before, ["registered", "delivered m0"])
      assert.deepStrictEqual(written, [
        "delivered m1",
        "delivered m2",
        "delivered m3",
        `delivery_failed ${heldId} E_SENDER_NOT_FOUND`,
        "taken_over"
      ])
    }))

  it.effect("the old connection's parked messages to others stay parked, in order, at the takeover", () =>
    Effect.gen(function*() {
      const { old, recipient } = yield* story([TAKEOVER_V1])
      assert.deepStrictEqual(
        old.parked.map(([to, item]) => to === recipient && typeof item === "object" && "mail" in item ? item.mail.message.id : "other"),
        ["m1", "m2", "m3"]
      )
    }))

  it.effect("a base client gets the parked answers and the held send's refusal too (no taken_over for it)", () =>
    Effect.gen(function*() {
      const { heldId, written } = yield* story([])
      assert.deepStrictEqual(written, ["delivered m1", "delivered m2", "delivered m3", `delivery_failed ${heldId} E_SENDER_NOT_FOUND`])
    }))

  it.effect("a held retry of a send the broker handled gets its recorded answer, not E_SENDER_NOT_FOUND", () =>
    Effect.gen(function*() {
      const { heldId, written } = yield* story([TAKEOVER_V1], [sendOf("m0"), sendOf("m2"), sendOf("held-send", "held"), { type: "unregister" }])
      assert.deepStrictEqual(written, [
        "delivered m1",
        "delivered m2",
        "delivered m3",
        "delivered m0",
        "delivered m2",
        `delivery_failed ${heldId} E_SENDER_NOT_FOUND`,
        "taken_over"
      ])
    }))

  it.effect("a base client's held supervisor_send is refused naming the extension it must ask for, not as a send from no session", () =>
    Effect.gen(function*() {
      const supervisorSend = { ...sendOf("held-sup", "to my supervisor"), type: "supervisor_send" }
      const { written, answers } = yield* story([], [supervisorSend, sendOf("held-send", "held"), { type: "unregister" }])
      assert.deepStrictEqual(written, [
        "delivered m1",
        "delivered m2",
        "delivered m3",
        "delivery_failed held-sup E_INVALID_MESSAGE",
        "delivery_failed held-send E_SENDER_NOT_FOUND"
      ])
      assert.strictEqual(
        answers.find((answer) => answer.messageId === "held-sup")?.reason,
        `"supervisor_send" frame without the ${SUPERVISOR_V1} extension: register with "${SUPERVISOR_V1}" in features to send to a supervisor`
      )
    }))

  it.effect("a supervisor-v1 child's held supervisor_send is answered as a held send is (E_SENDER_NOT_FOUND)", () =>
    Effect.gen(function*() {
      const supervisorSend = { ...sendOf("held-sup", "to my supervisor"), type: "supervisor_send" }
      const { written } = yield* story([TAKEOVER_V1, SUPERVISOR_V1], [supervisorSend, { type: "unregister" }])
      assert.deepStrictEqual(written, ["delivered m1", "delivered m2", "delivered m3", "delivery_failed held-sup E_SENDER_NOT_FOUND", "taken_over"])
    }))

  it.effect("a held send reusing a handled send's id for another message is answered E_MESSAGE_ID_REUSE", () =>
    Effect.gen(function*() {
      const { written } = yield* story([TAKEOVER_V1], [sendOf("m0", "another text"), { type: "unregister" }])
      assert.deepStrictEqual(written, ["delivered m1", "delivered m2", "delivered m3", "delivery_failed m0 E_MESSAGE_ID_REUSE", "taken_over"])
    }))
})
