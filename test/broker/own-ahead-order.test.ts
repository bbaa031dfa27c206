/**
 * The per-pair orders kept when a drainer offers its reader's own items
 * ahead of a head that waits (ParkedDrain.offerOwnAhead): the session's
 * sends to `stuck`, which never reads, wait at the head of its own parked
 * list; behind them, mail of the answerer's forced there at the answerer's
 * close (behind that sender's older mail in the session's mailbox flush,
 * ForcedOutput.parkOwn). That mail goes ahead of the sends — and with it
 * its sender's departure after it, a control frame after the message it is
 * about, while the acks of the sends stay behind them. Without the offer
 * ahead none of it reached the session until `stuck` read. On a Router
 * driven by hand (handRouter.ts): writers run, and drainers offer, only when
 * the test says.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { isAnswer } from "../../src/broker/OutboundItems.ts"
import type { OutboundItem, Peer } from "../../src/broker/Peer.ts"
import { frameText, type OutFrame } from "../../src/protocol/framing.ts"
import { message, registerFrame } from "../support/broker.ts"
import { recording, typedSessions } from "../support/frameTypes.ts"
import { handRouter, orderLabel } from "../support/handRouter.ts"

/** `count` sends to `to`. */
const sendsTo = (to: string, count: number, text: string) =>
  Array.from({ length: count }, (_, i) => ({ type: "send", to, message: message(`${text} ${i}`) }))

/** `orderLabel`, a control frame as `<action> <text of the message it is about>`, and an ack as `delivered`. */
const labeller = (texts: ReadonlyMap<string, string>) => (frame: OutFrame): Array<string> => {
  const parsed: { type: string; control?: { action: string; messageId: string } } = JSON.parse(frameText(frame))
  if (parsed.type === "message_control") {
    return [`${parsed.control?.action} ${texts.get(parsed.control?.messageId ?? "") ?? "?"}`]
  }
  if (parsed.type === "delivered") return ["delivered"]
  return orderLabel(frame)
}

/**
 * The asker is away while the answerer mails it; back, its mailbox flush is
 * parked on its own reader, its sends to `stuck` behind it (one batch).
 * `late` (the answerer's one batch, after the flush) waits behind the
 * answerer's mail in that flush; the answerer's close forces it to the end of
 * the asker's list, behind the sends, and its session leaves.
 */
const world = (late: (texts: Map<string, string>) => ReadonlyArray<Record<string, unknown>>) =>
  Effect.gen(function*() {
    const { attach, batch, close, router, tryDrain } = yield* handRouter({ outboxCapacity: 2 })
    const session = typedSessions({ attach, batch })
    const away = session("asker", [])
    const answerer = session("answerer", [])
    session("stuck", [])
    close(away.peer)
    batch(answerer.peer, sendsTo("asker", 4, "mail"))
    const asker = attach(recording(50, []))
    assert.isTrue(batch(asker, [registerFrame({ sessionId: "asker" }), ...sendsTo("stuck", 4, "m")]))
    const texts = new Map<string, string>()
    assert.isTrue(batch(answerer.peer, late(texts)), "the answerer's late mail did not wait: the test sets up nothing")
    close(answerer.peer)
    const label = labeller(texts)
    const labels: Array<string> = []
    for (let round = 0; round < 10; round++) {
      router.membership.notify()
      for (const frame of router.output.writes.takeForWrite(asker).frames) labels.push(...label(frame))
      while (tryDrain(asker)) continue
    }
    return { asker, labels }
  })

/** What is left in `reader`'s own parked list: `send` for an item to another, `ack` for an answer to it, `own` for other items to it. */
const left = (reader: Peer): Array<string> =>
  reader.parked.map(([to, item]: readonly [Peer, OutboundItem]) => (to !== reader ? "send" : isAnswer(item) ? "ack" : "own"))

describe("own items offered ahead of sends to a session that does not read keep every per-pair order", () => {
  it.effect("the answerer's forced mail reaches the asker, then the answerer's departure", () =>
    Effect.gen(function*() {
      const { labels } = yield* world(() => [{ type: "send", to: "asker", message: message("late") }])
      const mailAndLeft = labels.filter((label) => label.startsWith("mail") || label === "late" || label.startsWith("left"))
      // (`mail 0` fitted the outbox with the registration's answer, written before the test looks.)
      assert.deepStrictEqual(mailAndLeft, ["mail 1", "mail 2", "mail 3", "late", "left answerer"])
    }))

  it.effect("a cancel forced with the message it is about comes right after that message", () =>
    Effect.gen(function*() {
      const { labels } = yield* world((texts) => {
        const late = message("late")
        texts.set(late.id, "late")
        return [{ type: "send", to: "asker", message: late }, { type: "cancel_message", messageId: late.id }]
      })
      // The cancel is in the message's pair; the departure counts the messages only (DepartureHolds), and goes
      // after the last of them as it does when the head offers them.
      const pair = labels.filter((label) => label === "late" || label.startsWith("cancel"))
      assert.deepStrictEqual(pair, ["late", "cancel late"])
    }))

  it.effect("the acks of the sends waiting at the head stay in place, behind their sends; nothing else is left", () =>
    Effect.gen(function*() {
      const { asker, labels } = yield* world(() => [{ type: "send", to: "asker", message: message("late") }])
      assert.include(labels, "late")
      // One send fitted `stuck`'s outbox, and its ack followed it; the other three wait, each with its ack behind it.
      assert.deepStrictEqual(labels.filter((label) => label === "delivered"), ["delivered"])
      assert.deepStrictEqual(left(asker), ["send", "ack", "send", "ack", "send", "ack"])
    }))
})
