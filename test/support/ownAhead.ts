/**
 * Worlds shared by the tests of a reader's own items offered ahead of a
 * head that waits (ParkedDrain.offerOwnAhead; test/broker/own-ahead*.test.ts),
 * on the in-memory network with running fibers (support/memory.ts): a
 * session whose sends to `stuck`, which never reads, wait at the head of its
 * parked list, with something addressed to the session itself behind them.
 */
import { Effect } from "effect"
import { encodeFrames } from "../../src/protocol/index.ts"
import { message, registerFrame, send } from "./broker.ts"
import { withMemoryBroker } from "./memory.ts"

/** Outboxes of two frames, links of four: a session that does not read holds six frames, then its senders wait. */
export const small = { outboxCapacity: 2, linkCapacity: 4 } as const

/** `count` sends to `to`, as frame texts. */
export const sendsTo = (to: string, count: number, text: string): Array<string> =>
  Array.from({ length: count }, (_, i) => JSON.stringify({ type: "send", to, message: message(`${text} ${i}`) }))

/**
 * A reply forced behind the asker's own sends to `stuck`: the asker asked
 * `answerer` and went away; back (not reading), it sends `afterRegister` in
 * the batch of its `register` (with `features`), behind its mailbox flush;
 * the answerer's reply waits behind its own mail in that flush, and the
 * answerer's close forces it to the list's end. Then the asker asks for its
 * settling `list` (`requestId` "settle") and reads again: the test reads
 * what reaches it.
 */
export const replyForcedBehind = (features: ReadonlyArray<string>, afterRegister: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker(small)
    const stuck = yield* broker.session({ sessionId: "stuck" })
    yield* stuck.client.pause
    // Another's mail fills `stuck`'s outbox and link: any later send to it waits.
    const filler = yield* broker.session({ sessionId: "filler" })
    yield* filler.client.sendRaw(encodeFrames(sendsTo("stuck", 10, "fill")))
    const answerer = yield* broker.session({ sessionId: "answerer" })
    const away = yield* broker.session({ sessionId: "asker", frame: { features: [...features] } })
    const question = message("well?", { expectsReply: true })
    yield* send(away.client, "answerer", question, { askTimeoutMs: 600_000 })
    yield* answerer.client.next("message", (frame) => frame.message.id === question.id)
    yield* away.client.destroy
    // Mail for the absent asker waits in its mailbox.
    for (const text of sendsTo("asker", 20, "mail")) yield* answerer.client.sendText(text)
    yield* answerer.client.roundTrip
    // Back, not reading yet: its flush is parked, what it sends behind it (one batch).
    const asker = yield* broker.connect("asker")
    yield* asker.pause
    yield* asker.sendRaw(encodeFrames([
      JSON.stringify(registerFrame({ sessionId: "asker", frame: { features: [...features] } })),
      ...afterRegister
    ]))
    yield* answerer.client.send({ type: "send", to: "asker", message: message("the answer", { replyTo: question.id }) })
    yield* answerer.client.destroy
    yield* asker.send({ type: "list", requestId: "settle", limit: 1, settle: true })
    yield* asker.resume
    return { asker, question }
  })

/**
 * The asker's `list` ("probe") parked behind its own sends (`sends`, one
 * batch, to `stuck`, which does not read): it stopped reading and a
 * bystander's mail filled its outbox and link. The asker is left paused.
 */
export const listParkedBehind = (sends: ReadonlyArray<string>, features: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const broker = yield* withMemoryBroker(small)
    const stuck = yield* broker.session({ sessionId: "stuck" })
    yield* stuck.client.pause
    const bystander = yield* broker.session({ sessionId: "bystander" })
    const asker = yield* broker.session({ sessionId: "asker", frame: { features: [...features] } })
    // Its sends to `stuck` park; its drainer waits on `stuck`'s room.
    yield* asker.client.sendRaw(encodeFrames([...sends]))
    // It stops reading; another's mail fills its outbox and link.
    yield* asker.client.pause
    for (const text of sendsTo("asker", 10, "mail")) yield* bystander.client.sendText(text)
    // Its list's answer meets that full outbox: parked behind the sends, while the drainer waits on them.
    yield* asker.client.send({ type: "list", requestId: "probe", limit: 1 })
    return asker.client
  })
