/**
 * A reader's own items offered ahead of a head that waits (ParkedDrain.offerOwnAhead),
 * with running fibers: the real broker core on the in-memory network, its
 * drainers, writers and output fiber at work, time the TestClock's (each
 * client action is a step that runs until the world is idle, support/memory.ts).
 * A session's sends to `stuck`, which never reads, wait at the head of its
 * parked list; what is addressed to the session itself behind them — a reply
 * forced there, the settling answer parked behind it, a `list` answer that met
 * its own full outbox — reaches it once it reads, while the sends stay parked.
 * Without the drainer's offer ahead (and its wake at the batch's end, for an
 * item that joins while it waits) they waited for `stuck` to read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ASK_EXPIRY_V1, ASK_TIMEOUT_V1, LIST_PAGE_V1 } from "../../src/protocol/features.ts"
import { encodeFrames } from "../../src/protocol/index.ts"
import { message, registerFrame, send } from "../support/broker.ts"
import { patientClock, withMemoryBroker } from "../support/memory.ts"

const EXPIRY = [ASK_TIMEOUT_V1, ASK_EXPIRY_V1, LIST_PAGE_V1]

/** Outboxes of two frames, links of four: a session that does not read holds six frames, then its senders wait. */
const small = { outboxCapacity: 2, linkCapacity: 4 } as const

/** `count` sends to `to`, as frame texts. */
const sendsTo = (to: string, count: number, text: string) =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ type: "send", to, message: message(`${text} ${i}`) }))

describe("own items ahead of a head that waits on a session that does not read, with running fibers", () => {
  it.effect("a reply forced behind the asker's sends to a session that does not read reaches it, and the settling answer follows it", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker(small)
      const stuck = yield* broker.session({ sessionId: "stuck" })
      yield* stuck.client.pause
      // Another's mail fills `stuck`'s outbox and link: any later send to it waits.
      const filler = yield* broker.session({ sessionId: "filler" })
      yield* filler.client.sendRaw(encodeFrames(sendsTo("stuck", 10, "fill")))
      const answerer = yield* broker.session({ sessionId: "answerer" })
      const away = yield* broker.session({ sessionId: "asker", frame: { features: EXPIRY } })
      const question = message("well?", { expectsReply: true })
      yield* send(away.client, "answerer", question, { askTimeoutMs: 600_000 })
      yield* answerer.client.next("message", (frame) => frame.message.id === question.id)
      yield* away.client.destroy
      // Mail for the absent asker waits in its mailbox.
      for (const text of sendsTo("asker", 20, "mail")) yield* answerer.client.sendText(text)
      yield* answerer.client.roundTrip
      // Back, not reading yet: its flush is parked, its sends to `stuck` behind it (one batch).
      const asker = yield* broker.connect("asker")
      yield* asker.pause
      yield* asker.sendRaw(encodeFrames([
        JSON.stringify(registerFrame({ sessionId: "asker", frame: { features: EXPIRY } })),
        ...sendsTo("stuck", 12, "m")
      ]))
      // The reply waits behind the answerer's mail in that flush; the answerer's close forces it to the list's end.
      yield* answerer.client.send({ type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) })
      yield* answerer.client.destroy
      yield* asker.send({ type: "list", requestId: "settle", limit: 1, settle: true })
      yield* asker.resume
      const reply = yield* asker.next("message", (frame) => frame.message.replyTo === question.id)
      const settled = yield* asker.next("sessions", (frame) => frame.requestId === "settle")
      const order = asker.received().filter((frame) => frame === reply || frame === settled)
      assert.deepStrictEqual(order.map((frame) => frame.type), ["message", "sessions"])
      // The sends to `stuck` still wait for it, and the acks of those read with the registration behind them.
      assert.strictEqual(asker.count("delivered"), 0)
      // And a later probe is answered at once.
      yield* asker.send({ type: "list", requestId: "probe", limit: 1 })
      yield* asker.next("sessions", (frame) => frame.requestId === "probe")
    })))

  it.effect("a list answer that met the session's own full outbox while its sends wait on a session that does not read reaches it once it reads", () =>
    patientClock(Effect.gen(function*() {
      const broker = yield* withMemoryBroker(small)
      const stuck = yield* broker.session({ sessionId: "stuck" })
      yield* stuck.client.pause
      const bystander = yield* broker.session({ sessionId: "bystander" })
      const asker = yield* broker.session({ sessionId: "asker" })
      // Its sends to `stuck` park; its drainer waits on `stuck`'s room.
      yield* asker.client.sendRaw(encodeFrames(sendsTo("stuck", 12, "m")))
      // It stops reading; another's mail fills its outbox and link.
      yield* asker.client.pause
      for (const text of sendsTo("asker", 10, "mail")) yield* bystander.client.sendText(text)
      // Its list's answer meets that full outbox: parked behind the sends to `stuck`, while the drainer waits on them.
      yield* asker.client.send({ type: "list", requestId: "probe", limit: 1 })
      yield* asker.client.resume
      yield* asker.client.next("sessions", (frame) => frame.requestId === "probe")
      assert.isBelow(asker.client.count("delivered"), 12, "the sends to `stuck` still wait for it")
    })))
})
