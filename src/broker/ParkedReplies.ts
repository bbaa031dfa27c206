/**
 * Output's side of `ask-expiry-v1`'s settling round trip: whether a reply to
 * an asker that the broker accepted (its edge closed) is still parked in
 * another connection's list — behind its sender's earlier mail to a session
 * whose outbox is full, since one batch's output keeps its order — and
 * whether the asker's `list` answer must wait behind it. The asker's round
 * trip at its own deadline is that `list` (Discovery.ts, Ask.ts): answered
 * first, it would end the asker's wait in ReplyTimeout although the reply is
 * on its way (review revag, D2).
 *
 * Ownership: no state of its own. It reads Output's readers with parked
 * output and their `parked` lists, which Output and its close side
 * (OutputEnd.ts) write; Output parks the answer and makes its drainer wait
 * (`Output.enqueueAnswer`, `place`). Runs per `list` from a client granted
 * the extension while some reader has parked output, and per offer of such
 * an answer — never per routed frame. Split from Output.ts (2026-12-06).
 */
import { ASK_EXPIRY_V1 } from "../protocol/features.ts"
import { isMessage } from "./OutboundItems.ts"
import type { OutboundItem, Peer } from "./Peer.ts"

/** A `list` answer (built by encode.ts, so the prefix is exact). */
const isSessionsAnswer = (frame: string): boolean => frame.startsWith(`{"type":"sessions"`)

/** Which `list` answers wait behind replies parked elsewhere (see the module header). */
export class ParkedReplies {
  private readonly parkedReaders: ReadonlySet<Peer>

  /** @param parkedReaders the readers whose own parked list may hold output (Output's). */
  constructor(parkedReaders: ReadonlySet<Peer>) {
    this.parkedReaders = parkedReaders
  }

  /**
   * Whether a reply (a message with `replyTo`) to `asker` is parked in the
   * list of a reader other than `asker` (a scan of the parked lists; one
   * field test while none is non-empty). `asker`'s own list is left out:
   * what of it is ahead of an answer there is offered first anyway.
   */
  parkedFor(asker: Peer): boolean {
    if (this.parkedReaders.size === 0) return false
    for (const reader of this.parkedReaders) {
      if (reader === asker) continue
      const parked = reader.parked
      for (let i = 0; i < parked.length; i++) {
        const [to, item] = parked[i]!
        if (to === asker && isMessage(item) && item.mail.message.replyTo !== undefined) return true
      }
    }
    return false
  }

  /**
   * Whether `item`, offered by `reader`'s drainer to `reader` itself, is a
   * `sessions` answer to a client granted `ask-expiry-v1` that must wait
   * behind a reply to it still parked elsewhere (`parkedFor`). It does not
   * wait while anything may wait for `reader`'s own parked output — mail
   * for it there that its senders' new mail waits behind (`parkedMail`), a
   * withheld return waiting for that output (`returnWaits`), a takeover's
   * custody hold — as the reply could be among what waits, and the two
   * drainers would wait on each other: then it goes at once, as before (the
   * asker's wait ends in ReplyTimeout, and the reply reaches the session as
   * a late one). Checked at each offer, so one that starts while the
   * answer waits lets it go at its next wake; of these only a withheld
   * return can (the reader's own frames are held behind the answer), and
   * that one waits on another connection's parked output, not this one's.
   */
  answerWaits(reader: Peer, item: OutboundItem): boolean {
    return typeof item === "string" && this.parkedReaders.size > 1 && reader.parkedMail === undefined &&
      reader.returnWaits === undefined && reader.custodyHolds === 0 && reader.features.has(ASK_EXPIRY_V1) &&
      isSessionsAnswer(item) && this.parkedFor(reader)
  }
}
