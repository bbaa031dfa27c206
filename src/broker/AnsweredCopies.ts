/**
 * Copies of an ask answered before their client confirmed them: a reply
 * accepted while the replier's connection still holds the ask unconfirmed
 * (a client confirming what it handled replies first) marks that copy
 * (`answeredUnconfirmed`), as it does the copy an old connection of the
 * replier's session holds that a takeover by another instance has not
 * closed yet: `answeredCopy` tells them from an ask that expired (helpers
 * staleans, fixsa, replyclose). So does it a copy not written yet, or not
 * all: in the replier's outbox or write in progress (given back to its
 * connection at a rejoin, its client having read it on the one it left),
 * in an awaited old connection's write in progress or its untaken rest,
 * or kept by that takeover's hold (helper answerwip). Per reply that
 * costs, on the replier's connection and each old one a hold waits for, a
 * scan of at most `ANSWERED_SCAN` items of each of custody, write in
 * progress, untaken rest and (the replier's) outbox — a size check of each
 * that is empty — and the same of what the hold keeps (a size check while
 * no hold exists).
 *
 * A reply lost before it reached its asker (`lost`, from Asks.answerLost)
 * unmarks its ask: a copy of it given back past its deadline expired.
 * The Asks concern decides when a reply answers an ask (Asks.answeredBy);
 * this module owns the marks (weak: each goes with its object), read only
 * through `answeredCopy`.
 */
import type { AskEdge } from "./AskEdges.ts"
import type { CustodyHolds } from "./CustodyHold.ts"
import { mailAmong } from "./OutboundItems.ts"
import type { Mail, Peer } from "./Peer.ts"
import type { Session } from "./Registry.ts"

/** How many of a replier's oldest unconfirmed items a reply looks through for the ask it answers (`markAnswered`). */
const ANSWERED_SCAN = 64

/** The copies of asks answered before their client confirmed them, and the asks whose answer was lost since. */
export class AnsweredCopies {
  /**
   * Asks answered while their message was still held, unconfirmed, on the
   * replier's connection (Asks.answeredBy: `markAnswered`), marked on that message's `Mail`
   * object with the reply (which carries the edge it closed): should the connection drop, the
   * copy it gives back past its deadline was answered, not expired
   * (`answeredCopy`). Weak: the mark goes with the object, when its client
   * confirms it or the copy is dropped. Nothing is marked for an ask
   * confirmed before its reply.
   */
  private readonly answeredUnconfirmed = new WeakMap<Mail, Mail>()
  /** Edges closed by a reply that was lost before it reached its asker (`lost`): that ask is unanswered again. */
  private readonly lostAnswers = new WeakSet<AskEdge>()

  /**
   * The reply `reply`, sent by `replier` along the edge of the ask `key`
   * (`reply.answers`), was accepted: each copy of that ask that may still
   * come back is marked answered (see the module header).
   */
  markAnswered(holds: CustodyHolds, replier: Session, key: string, reply: Mail): void {
    // Its client read the ask on a connection it left (a rejoin): a copy given back to this one may not be
    // written yet, in its outbox or write in progress.
    this.markHeld(replier.peer, key, reply, true)
    // Another client instance took the session over and answered: the copy the old connection still holds,
    // given back at its close, was answered too (CustodyHold.ts: a hold waits for that close), as was one
    // the hold keeps (handed over from the old outbox).
    const old = holds.awaitedFor(replier.key)
    if (old !== undefined) for (const peer of old) this.markHeld(peer, key, reply, false)
    this.mark(mailAmong(holds.keptFor(replier.key), key, ANSWERED_SCAN), reply)
  }

  /**
   * Marks the ask `key` answered by `reply` (`answeredUnconfirmed`) where
   * `peer` may still give it back: among the `ANSWERED_SCAN` oldest items
   * of its custody, of its write in progress, of that write's untaken rest
   * and (`outbox`: the replier's own connection; a takeover's old one had
   * its outbox handed over) of its outbox. A size check of each that holds
   * nothing.
   */
  private markHeld(peer: Peer, key: string, reply: Mail, outbox: boolean): void {
    const custody = peer.custody
    if (custody !== undefined && custody.size > 0) this.mark(custody.heldMail(key, ANSWERED_SCAN), reply)
    this.mark(mailAmong(peer.writer.inFlight?.returnable, key, ANSWERED_SCAN), reply)
    this.mark(mailAmong(peer.untakenRest, key, ANSWERED_SCAN), reply)
    if (outbox) this.mark(mailAmong(peer.outbox, key, ANSWERED_SCAN), reply)
  }

  /** Marks the copy `ask`, when found, answered by `reply` (`answeredUnconfirmed`). */
  private mark(ask: Mail | undefined, reply: Mail): void {
    if (ask !== undefined) this.answeredUnconfirmed.set(ask, reply)
  }

  /** A reply that closed `edge` was lost before it reached its asker: the ask is unanswered again (`answeredCopy`). */
  lost(edge: AskEdge): void {
    this.lostAnswers.add(edge)
  }

  /**
   * The reply (with the edge it closed, `answers`) that answered this very
   * copy of the ask `mail`, while its client had not confirmed it
   * (`answeredUnconfirmed`), when that
   * reply was not lost since (`lost`); else undefined. A copy given back
   * so past its deadline goes silently (StaleAsks.drop, which owes its
   * asker the `expired` after all should that reply be lost later). Not known
   * for a copy answered while it was deeper in a place `markAnswered` scans
   * than `ANSWERED_SCAN`, nor after a restart for one answered before it:
   * such a copy counts as expired.
   */
  answeredCopy(mail: Mail): Mail | undefined {
    const reply = this.answeredUnconfirmed.get(mail)
    return reply?.answers !== undefined && !this.lostAnswers.has(reply.answers) ? reply : undefined
  }
}
