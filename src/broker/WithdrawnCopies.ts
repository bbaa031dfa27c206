/**
 * Size: about 440 lines, one concept: the cancelled copies' state and the
 * decisions about them.
 *
 * Mailbox copies their sender cancelled after a client read them: which
 * client instance each is kept for, and the `message_control` cancel that
 * goes with it.
 *
 * Why: a message written to a `received-v1` client whose connection closed
 * before it confirmed reading it goes back to the mailbox (MailDelivery's
 * `requeue`). Its client may have read it and shown it (pi's journal keeps
 * it). A `cancel_message` of it then used to take the copy out of the
 * mailbox, answer its sender `delivered`, and send nobody a control: the
 * same client coming back kept acting on a message its sender was told was
 * withdrawn (review revd, helper mbctl). Now the copy stays in the mailbox,
 * its replay record saying cancelled, and is noted here with the client
 * instance written it and the cancel's control — when it was written to
 * that client, which custody tells, with the instance it was written to
 * (`unconfirmed`: what a `received-v1` client never confirmed reading,
 * given back; its route's `OutboundRecord.receiverInstance` only when
 * custody knows none). A copy never written (the socket took none of it, or it waited in
 * the outbox) is taken out as before: nobody read it. A message cancelled
 * on its way and given back so with its session away is kept the same way
 * (`keepCancelled`), with a cancel made again: its client may
 * have read the message and not the cancel.
 *
 * A copy read by more than one client instance (a new process of the
 * session was given it after the first dropped, and dropped too) is kept
 * for each of them, the newest MAX_READERS: each one's return gets the
 * message and the cancel, the copy staying in the mailbox for the others
 * (review L6) — any of them may show it.
 *
 * When its session registers, the mailbox flush gives that instance
 * (`mayHold`: its rejoin or reconnect) the message again — its client drops
 * it if it read it already (RecentMessages.ts) — and the cancel right
 * behind it, as a cancel of a message still on its way reaches that
 * instance's rejoin; any other registration (another client, a new process,
 * a reader given it again already) gets neither and takes nothing: the copy
 * stays in the mailbox for the readers not told yet (`withheldFrom`; review
 * revm M2, M3). A copy that expires or is evicted from the mailbox goes
 * silently: its sender was answered already. Its route goes with it only
 * when it names one of the copy's readers (MailDelivery.copyLeft): one
 * naming a reader the cancel told while live names a write that may still
 * hold the message, whose give-back must find it withdrawn (review revbx
 * BX3).
 *
 * Memory only: the cancel's record rewrite drops the copy's stored row, as
 * before, so a durable broker that restarts keeps nothing of it (see
 * docs/protocol.md). Bounded by the mailbox, which holds each copy.
 *
 * What was read is marked on the objects themselves: the given-back item
 * (`OutboundMessage`, in a weak map, with the reader custody names), then
 * the mail object the mailbox holds for it (`Mail`, in a weak map, with the session key and
 * client instance given it, `Reader`), so nothing is kept once they are
 * gone. The mark is carried to each new copy of the message the mailbox
 * takes back (a return that dropped again before it was written the copy
 * still owes its client the cancel), and names the reader without a route,
 * which goes after an hour while the mailbox keeps the copy a day (review
 * revi I3, I7) — as custody names it however long the write waited
 * unconfirmed before the drop (review L2).
 *
 * A kept copy is found by its record key, and by the session it was given
 * to (`receiverKey`, which differs from the mail's own target when P49's
 * other holder of an identity took it: review revi I1). A new message
 * queued under the same record key (a resend after its replay record went)
 * takes the note out (`take`): it is not the copy that was read (I4).
 *
 * The decisions are made here too, each called by MailDelivery at its step
 * of the close path, the cancel or the flush, in the order those paths
 * decide: who read a message given back (`readersOf`), keeping a message
 * cancelled on its way as such a copy (`keepCancelled`), which registration
 * a kept copy is not for (`withheldFrom`), and giving it to the readers that
 * register or are live at the cancel (`give`).
 *
 * The same mark tells a supersede which mailbox copy is the superseded
 * message's own (`readBy`: the client instance the supersede told read that
 * very object; MailDelivery.superseded), where the record key is shared by
 * a later message under a reused id (reviews revcc, revcg).
 *
 * Owner: MailDelivery, in the Router's synchronous code. Only the close,
 * cancel, supersede and registration paths touch it, the mailbox's drops and
 * puts when it is not empty (a size check), and nothing on the ordinary send
 * path.
 */
import { DeliveryCode } from "../protocol/delivery.ts"
import { messageFrameFor } from "./RecipientFrames.ts"
import { ControlFrame } from "./ControlFrame.ts"
import * as Encode from "./encode.ts"
import { mailKeyOf } from "./Mailbox.ts"
import type { Mail, OutboundMessage, Written } from "./Peer.ts"
import { mayHold, type Session, type SessionInstance } from "./Registry.ts"
import type { RouterContext } from "./RouterContext.ts"

/** Who was written a message and never confirmed reading it: the session key and its client instance. */
export interface Reader {
  /** The registry key of the session its route named. */
  readonly receiverKey: string
  /** The client instance of that session given the message (its route's `receiverInstance`). */
  readonly instance: SessionInstance
}

/** Readers a copy's mark keeps (the newest): more instances than this reading one copy is not a case to keep whole. */
const MAX_READERS = 4

/** One reader a cancelled copy is kept for, and the control that withdraws the message for it. */
export interface KeptFor extends Reader {
  /** The `message_control` cancel, written right behind the message. */
  readonly control: ControlFrame
}

/** A cancelled mailbox copy: each reader not yet given it again, with its control (review L6: every one is told). */
export interface WithdrawnCopy {
  readonly readers: ReadonlyArray<KeptFor>
}

/** Whether `reader` is `receiver`: the session and client instance it names. */
const isReader = (reader: Reader, receiver: Session): boolean =>
  reader.receiverKey === receiver.key && mayHold(reader.instance, receiver)

/** Whether `copy` goes to `receiver`: one of the sessions and client instances it was given to. */
export const goesTo = (copy: WithdrawnCopy, receiver: Session): boolean => copy.readers.some((reader) => isReader(reader, receiver))

/** `readers` with `reader` the newest (once), the oldest let go past MAX_READERS. */
const withReader = (readers: ReadonlyArray<Reader>, reader: Reader): ReadonlyArray<Reader> => {
  const others = readers.filter((known) => known.receiverKey !== reader.receiverKey || known.instance !== reader.instance)
  others.push(reader)
  return others.length > MAX_READERS ? others.slice(others.length - MAX_READERS) : others
}

/** Whom a connection's custody wrote what it gives back (Custody.ts's `PeerCustody`). */
export interface WrittenTo {
  /** The client instance the session `key` registered as on that connection, if it did with custody. */
  readonly instanceOf: (key: string) => SessionInstance | undefined
}

/** What the cancelled copies need of the receipt routes (Receipts.ts, through MailDelivery's `MailRoutes`). */
export interface CopyRoutes {
  /** A message that leaves without reaching its receiver: its route, if one is left, goes (Receipts.dropRoute). */
  readonly lost: (senderKey: string, messageId: string) => void
  /** `mail` came back from a connection and went on to `receiver`'s (Receipts.handedOn). */
  readonly handedOn: (mail: Mail, receiver: Session) => void
  /** The session key and client instance a write gave a message to, if one was (Receipts.givenTo). */
  readonly givenTo: (
    senderKey: string,
    messageId: string
  ) => { readonly receiverKey: string; readonly receiverInstance: SessionInstance } | undefined
}

/**
 * The cancelled copies still in the mailbox, by mailbox key (`mailKeyOf`: the record key and the session the copy
 * waits for, so a cancelled copy is not confused with another message under its id waiting for another session)
 * and by receiver, and which copies were read.
 */
export class WithdrawnCopies {
  private readonly ctx: RouterContext
  private readonly routes: CopyRoutes
  /**
   * Puts a copy in the mailbox (MailDelivery's `put`: what its bounds push out goes as they say), at its
   * queue place `seq` when given (Mailbox.put).
   */
  private readonly put: (copy: Mail, seq?: number) => void
  private readonly copies = new Map<string, WithdrawnCopy>()
  /** Mailbox keys of the kept copies, by each session key given them (`KeptFor.receiverKey`). */
  private readonly byReceiver = new Map<string, Set<string>>()
  /**
   * Messages given back that their client was written and never confirmed reading, with who that was:
   * the instance custody knows for it (`WrittenTo`), which needs no route (review L2), or none (then its
   * route names it, `readersOf`).
   */
  private readonly readItems = new WeakMap<OutboundMessage, Reader | undefined>()
  /** Mailbox copies (and copies given out again) of such messages, with who read them, oldest first. */
  private readonly readCopies = new WeakMap<Mail, ReadonlyArray<Reader>>()
  /** Copies kept since the broker started (`keep` from outside, `keepCancelled`), for the broker's stats. */
  private keptCount = 0
  /** Copies given to a reader's return, the message and its cancel, since the broker started (`give`). */
  private givenCount = 0

  /**
   * @param routes told when a kept copy leaves or is handed on, and asked whom a write gave a message.
   * @param put puts a copy kept here in the mailbox (MailDelivery's, which owns the mailbox).
   */
  constructor(ctx: RouterContext, routes: CopyRoutes, put: (copy: Mail, seq?: number) => void) {
    this.ctx = ctx
    this.routes = routes
    this.put = put
  }

  /** `items`, given back by custody, were written to their client (`writtenTo`) and never confirmed read (Custody.ts). */
  unconfirmed(items: ReadonlyArray<Written>, writtenTo: WrittenTo): void {
    for (const item of items) {
      if (!("mail" in item)) continue
      const instance = writtenTo.instanceOf(item.to)
      this.readItems.set(item, instance === undefined ? undefined : { receiverKey: item.to, instance })
    }
  }

  /** Who read the mail object `mail` (a mailbox copy, or one given out again from it), oldest first; undefined when nobody did. */
  readersOfCopy(mail: Mail): ReadonlyArray<Reader> | undefined {
    return this.readCopies.get(mail)
  }

  /**
   * Whether `receiver` (its session and client instance, as `mayHold` takes
   * it) read the mail object `mail`: that very object's mark names it. The
   * mark rides on the object, not on its record key, so a later message
   * queued under a reused id (another object, which no client read) never
   * carries it: how a supersede tells the copy of the message it names from
   * such a message (MailDelivery.superseded). A supersede path only.
   */
  readBy(mail: Mail, receiver: Session): boolean {
    return this.readCopies.get(mail)?.some((reader) => isReader(reader, receiver)) === true
  }

  /**
   * Who read `outbound`, given back, and never confirmed it, oldest first:
   * those its mail object was marked read by (earlier connections', carried
   * across give-backs: review revi I3), and, when this connection was
   * written it (`unconfirmed`), the client instance custody says it was
   * written to (however long ago: review L2), or else the one its route
   * names. Undefined when nobody read it. A close path only.
   */
  readersOf(outbound: OutboundMessage): ReadonlyArray<Reader> | undefined {
    const earlier = this.readCopies.get(outbound.mail)
    if (!this.readItems.has(outbound)) return earlier
    let reader = this.readItems.get(outbound)
    if (reader === undefined) {
      const given = this.routes.givenTo(outbound.mail.senderKey, outbound.mail.message.id)
      if (given === undefined) return earlier
      reader = { receiverKey: given.receiverKey, instance: given.receiverInstance }
    }
    return withReader(earlier ?? [], reader)
  }

  /**
   * `outbound`, cancelled by its sender on its way and given back with its
   * recipient away, goes back to the mailbox as a cancelled copy for the
   * client instance given it when that client was written it and never
   * confirmed it (`unconfirmed`): it may show it, and the cancel written
   * behind it may not have reached it. Its control is made again (the one
   * given back with it is dropped with the recipient away), from the sender
   * as the message names it, stamped as the cancel first made for it
   * (DeliveryRecords.cancelStamp), which that client may have read. Written on an earlier connection counts
   * (`readersOf`: a return that dropped before the copy was written to it).
   * False when it is not so kept: never written, superseded (the new
   * message tells its client), no instance known, or none of its readers
   * can register as itself again (`mayReturn`: Registration.mayReturn; the
   * caller drops it as a copy kept would go at its expiry, silently — its
   * sender was answered already); true when noted, even
   * if the bounds pushed the copy out at once (then it went silently,
   * MailDelivery's `evicted`, and each reader's control goes to
   * `pushedOut`, for the caller to keep alone for that reader's return: its
   * control still parked was dropped for this copy's).
   */
  keepCancelled(
    outbound: OutboundMessage,
    now: number,
    mayReturn: (reader: Reader) => boolean,
    pushedOut: (control: ControlFrame) => void
  ): boolean {
    const { mail } = outbound
    const given = this.readersOf(outbound)
    if (given === undefined) return false
    const reused = this.ctx.records.fateUnderReusedId(mail, outbound.to)
    const withdrawal = reused === undefined ? this.ctx.records.withdrawal(mail.senderKey, mail.message.id, now) : reused === "live" ? undefined : reused
    if (withdrawal === undefined || withdrawal.ok || withdrawal.code !== DeliveryCode.DeliveryCancelled) return false
    // A copy kept already for readers of it that dropped before this one (each told reader holds its own
    // object, marked with itself and those still owed): they stay owed it too (review revs S2).
    const key = mailKeyOf(mail)
    const earlier = this.copies.size > 0 ? this.copies.get(key) : undefined
    let readers: ReadonlyArray<Reader> = earlier?.readers ?? []
    // Only for a reader that can register as itself again: no registration takes a copy kept for another
    // (`withheldFrom`), which held a memory broker's idle exit for the mailbox's retention (review revbk BK3).
    for (const reader of given) if (mayReturn(reader)) readers = withReader(readers, reader)
    if (readers.length === 0) return false
    // Stamped as the cancel first made for it, which its client may have read: a stamp of its own would make the
    // client pass the same cancel on twice, as another message's under a reused id (review revbm BM2).
    const timestamp = this.ctx.records.cancelStamp(mail.senderKey, mail.message.id) ?? this.ctx.stamps.next()
    const text = Encode.controlFrame(mail.fromJson, { messageId: mail.message.id, action: "cancel", timestamp })
    const kept = readers.map((reader): KeptFor => ({
      ...reader,
      control: new ControlFrame(text, reader.receiverKey, mail.senderKey, 0, mail.recordKey, reader.instance)
    }))
    // Noted before the put, so that a copy the bounds push out at once goes silently (MailDelivery's `evicted`).
    // Counted once per copy: one kept already only gains readers.
    if (earlier === undefined) this.keep(key, { readers: kept })
    else this.note(key, { readers: kept })
    const copy: Mail = { ...mail, queuedAt: now }
    this.markRead(copy, readers)
    this.put(copy)
    // Pushed out at once (its note taken with it): the readers are still owed the cancel, without the message.
    if (!this.copies.has(key)) for (const reader of kept) pushedOut(reader.control)
    return true
  }

  /**
   * A cancelled copy taken from the mailbox for `sessions`, each one of the
   * client instances it is kept for (`goesTo`: the session registering, or
   * every reader live at the cancel, review revm M5): to each, the message
   * again and its cancel right behind it (the record stays cancelled; the
   * route moves on to its connection), and the copy goes back to the
   * mailbox, as it was, for the other instances that read it and are not
   * told yet, if any (review L6): at its place in age and queue order
   * (`seq`, the place it was taken from), so it expires at its retention
   * (review revr R2). The mailbox's flush takes a copy for no other
   * instance (review revm M2, M3). A copy kept so at the `cancel` counts
   * in `counts.kept` (review revr R5); one kept again at a reader's
   * `return` was counted when it was first kept.
   */
  give(
    mail: Mail,
    copy: WithdrawnCopy,
    sessions: ReadonlyArray<Session>,
    now: number,
    seq: number | undefined,
    at: "cancel" | "return"
  ): void {
    let rest: Array<KeptFor> | undefined
    // Once per session, should two readers name it (an instance, and the one from before a restart).
    const told: Array<{ readonly session: Session; readonly reader: KeptFor }> = []
    for (const reader of copy.readers) {
      const session = sessions.find((receiver) => isReader(reader, receiver))
      if (session === undefined) {
        rest ??= []
        rest.push(reader)
      } else if (!told.some((given) => given.session === session)) told.push({ session, reader })
    }
    for (const { reader, session } of told) {
      // Each told session its own mail object, marked read by it and by the readers still owed the copy (not
      // by the others told now): should its connection drop before its client confirms, `keepCancelled` keeps
      // the copy for those, never again for a reader told here that confirmed (review revr R4).
      const given: Mail = { ...mail }
      this.markRead(given, [...(rest ?? []), reader])
      this.ctx.output.enqueue(session.peer, { frame: messageFrameFor(given, session.peer, this.ctx.stamps.at(now)), mail: given, to: session.key, senderSince: 0 })
      this.routes.handedOn(given, session)
      this.ctx.output.enqueue(session.peer, reader.control)
      this.givenCount++
    }
    if (rest === undefined) return
    const key = mailKeyOf(mail)
    if (at === "cancel") this.keep(key, { readers: rest })
    else this.note(key, { readers: rest })
    this.markRead(mail, rest)
    this.put(mail, seq)
  }

  /** The copy `copy` of a message was read by `readers`, oldest first (a new copy of it carries their mark). */
  markRead(copy: Mail, readers: ReadonlyArray<Reader>): void {
    this.readCopies.set(copy, readers)
  }

  /** How many mailbox copies are cancelled ones, kept for readers not given them yet. */
  get size(): number {
    return this.copies.size
  }

  /**
   * Since the broker started: cancelled copies kept for their readers (`kept`: at a cancel, also for the
   * readers away when others were told at once; once per copy, not again when a reader's return leaves it
   * for the rest), and copies given to a reader with their cancel (`given`: at its return, or live at the
   * cancel; a copy read by several instances counts once per reader told).
   */
  get counts(): { readonly kept: number; readonly given: number } {
    return { kept: this.keptCount, given: this.givenCount }
  }

  /** Keeps the mailbox copy `key` as cancelled, for the instances `copy` names (counted in `counts.kept`). */
  keep(key: string, copy: WithdrawnCopy): void {
    this.keptCount++
    this.note(key, copy)
  }

  /** Notes the mailbox copy `key` as cancelled, for the instances `copy` names. */
  private note(key: string, copy: WithdrawnCopy): void {
    this.take(key)
    this.copies.set(key, copy)
    for (const reader of copy.readers) {
      const keys = this.byReceiver.get(reader.receiverKey)
      if (keys === undefined) this.byReceiver.set(reader.receiverKey, new Set([key]))
      else keys.add(key)
    }
  }

  /** Whether the mailbox copy `key` is a cancelled one. */
  has(key: string): boolean {
    return this.copies.size > 0 && this.copies.has(key)
  }

  /**
   * Whether the mailbox copy `key` is a cancelled one, and `receiver`
   * is none of the client instances it is kept for: then its flush leaves it
   * in the mailbox for them (review revm M2, M3: a new instance of the
   * session it names, a reader told already, a session of P49's other
   * holder that never read it), and it goes silently at expiry or eviction
   * if none of them comes back.
   */
  withheldFrom(key: string, receiver: Session): boolean {
    if (this.copies.size === 0) return false
    const copy = this.copies.get(key)
    return copy !== undefined && !goesTo(copy, receiver)
  }

  /** The mailbox keys of the cancelled copies given to the session `receiverKey` (a copy: `take` may run over it). */
  keptFor(receiverKey: string): ReadonlyArray<string> | undefined {
    if (this.copies.size === 0) return undefined
    const keys = this.byReceiver.get(receiverKey)
    return keys === undefined ? undefined : [...keys]
  }

  /**
   * Lets go of the readers of the cancelled copy `key` that `gone`
   * says can never come back for it (a base client's instance, once another
   * instance became the id's last holder: Registration.mayReturn); true when
   * none is left, the copy forgotten (`take`): the caller drops it from the
   * mailbox as it would go at its expiry. The rest stay owed it.
   */
  release(key: string, gone: (reader: Reader) => boolean): boolean {
    const copy = this.copies.get(key)
    if (copy === undefined || !copy.readers.some(gone)) return false
    const rest = copy.readers.filter((reader) => !gone(reader))
    if (rest.length === 0) {
      this.take(key)
      return true
    }
    this.note(key, { readers: rest })
    return false
  }

  /** Forgets the copy `key` (it left the mailbox) and returns it, if it was a cancelled one. */
  take(key: string): WithdrawnCopy | undefined {
    if (this.copies.size === 0) return undefined
    const copy = this.copies.get(key)
    if (copy === undefined) return undefined
    this.copies.delete(key)
    for (const reader of copy.readers) {
      const keys = this.byReceiver.get(reader.receiverKey)
      if (keys === undefined) continue
      keys.delete(key)
      if (keys.size === 0) this.byReceiver.delete(reader.receiverKey)
    }
    return copy
  }
}
