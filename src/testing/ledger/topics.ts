/**
 * The ledger's topic invariants (`topics-v1`, docs/testing.md):
 *
 * - `topic-revision-backwards`: on one connection, the revisions of a
 *   (publisher, topic) that a subscriber is sent never go down. Each
 *   connection is checked on its own: a broker restart or a new connection
 *   may legitimately send the same revision again, never a lower one on the
 *   same connection.
 * - `topic-double-interrupt`: one publication interrupts a subscriber's
 *   agent at most once (per session generation, for hosts that keep no topic
 *   store, as the simulation's do). A publication is known by its publisher, topic,
 *   `updatedAt` and text (a re-send after a reconnect, or a publication
 *   renumbered past a stale answer, is the same publication); the host sees
 *   it as a message with id `topic:<publisher>:<topic>:<revision>`.
 *
 * Owned by one `Ledger`; plain synchronous state.
 */
import { decodeBrokerFrameText, isFrameDecodeError } from "../../protocol/decode.ts"
import type { Message } from "../../protocol/frames.ts"
import type { LedgerState } from "./state.ts"
import { nameOf } from "./state.ts"
import { check } from "./trace.ts"

/** The topic side of one ledger. */
export class TopicLedger {
  /** Highest revision sent per link, publisher and topic. */
  private readonly sent = new Map<string, number>()
  /** Publications that interrupted, per receiver. */
  private readonly interrupted = new Set<string>()

  /** A client read frames: checks every `topic_record` among them. */
  read(state: LedgerState, linkId: number, owner: string, frames: ReadonlyArray<string>): void {
    for (const text of frames) {
      if (!text.startsWith(`{"type":"topic_record"`)) continue
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame) || frame.type !== "topic_record") continue
      const { from, record } = frame.entry
      const key = `${linkId}\u0000${from.id}\u0000${record.topic}`
      const before = this.sent.get(key) ?? 0
      check(state, record.revision >= before, "topic-revision-backwards", () =>
        `${nameOf(state, owner)} was sent revision ${record.revision} of ${nameOf(state, from.id)}'s topic ${record.topic} after revision ${before}`)
      this.sent.set(key, Math.max(before, record.revision))
    }
  }

  /**
   * A host was handed a message: a topic interruption counts once per
   * publication and receiver — per session generation when `generation` is
   * given, since a host without a topic store (the simulation's) keeps what
   * interrupted it for one generation (`Host.topicStore`).
   */
  handed(state: LedgerState, receiver: string, fromId: string, message: Message, generation?: string): void {
    if (!message.id.startsWith("topic:")) return
    const topic = message.id.slice(`topic:${fromId}:`.length, message.id.lastIndexOf(":"))
    const key = JSON.stringify([generation ?? "", receiver, fromId, topic, message.timestamp, message.content.text])
    check(state, !this.interrupted.has(key), "topic-double-interrupt", () =>
      `${nameOf(state, receiver)} was interrupted twice by ${nameOf(state, fromId)}'s publication on ${topic} ("${message.content.text}")`)
    this.interrupted.add(key)
  }
}
