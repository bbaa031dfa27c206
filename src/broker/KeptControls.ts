/**
 * Controls (a cancel, a supersede: ControlFrame.ts) kept for the client
 * instance given the message they are about, while its session is away.
 *
 * Why (helper ctlback): a client reads a message and confirms it; its sender
 * then cancels or supersedes it, and the broker writes the control; the
 * connection drops before its client confirms the control (or before it is
 * written). The message does not come back (it was confirmed), so the
 * control comes back alone, with the session away — and was dropped: the
 * client's return never learned that the message it showed was withdrawn,
 * while its sender had been answered `delivered` for the cancel. Now such a
 * control is kept here for the client instance it was written to, which
 * was given the message (`ControlFrame.instance`; not the message's receipt
 * route, which goes after an hour: review revm M1), and that instance's return (its reconnect:
 * `mayHold`) gets it at its registration, before the mailbox's mail (a
 * supersede's new message, given back in the same close, queues there and
 * goes right behind it, as it was written). Any other registration of the
 * session gets none (it never got the message) and leaves them for that
 * instance, as the mailbox's flush leaves a cancelled copy for the
 * instances that read it (WithdrawnCopies.ts; review revm M2, M3) — while
 * that instance may still register as itself: one that sent no
 * `instanceId` never can once another registered the id, and its controls
 * go then (`takeFor`'s `mayReturn`; review revba BA1) — and one that is
 * not the id's last known holder registered with nothing known of the id
 * (it registered after an `instanceId` holder, or by a takeover, or another
 * client took the id over from another group and holds it there) never
 * can at all, so nothing is kept for it even with its session away
 * (MailReturns asks `mayReturn` then too; reviews revbe BE2, revbk BK2:
 * kept at a close, it held the idle exit for no one). An instance that
 * moved the session to another group keeps its controls here while it
 * holds the id there (review revbk BK1). For a
 * client that sends no `instanceId` "that instance's return" is the
 * broker's guess, as for every control it routes: the next registration of
 * the id with none, when the instance registered with nothing known of the
 * id (ClientInstances.returning) — a new process of that client is taken
 * for it and given its controls (docs/protocol.md; review revba BA4).
 * Also kept, with another instance holding the session (which is never
 * given them), are the controls MailReturns keeps for the instance that
 * read their message — given back alone at the old close, left in a
 * takeover's hand-over, refused at the old connection, or whose withdrawn
 * message came back there and went nowhere (review revba BA3) — but only
 * for an instance that can register as itself again, one that sent an
 * `instanceId` (Registration.mayReturn; review revba BA1): any other would
 * wait here for no one.
 * A control whose message comes back in the same close with its session
 * away is not kept here
 * (the mailbox decides that message's fate, with a cancel made again when
 * its client may have read it: WithdrawnCopies.ts), nor one whose message
 * an earlier give-back dropped never written (its record says no client
 * read it: Receipts.droppedUnread; helper sim111) — such as a control parked
 * at its sender's reader behind a full outbox while its session's
 * `unregister` handed the message back, which reached the old connection
 * only after. A control still parked so when its withdrawn message comes
 * back with its session away never gets here: it is taken out of the
 * parked lists with that message (Output.dropParkedControls; review revao).
 *
 * Each control is kept as long as the mailbox keeps mail (its retention),
 * counted from when it was kept (review revr R1: not from the last control
 * kept for its session, which let a control kept for another instance
 * renew it) — or from the reading a clock stepped back to below it, as the
 * lists are re-dated (AgedMap.ts; `redateKept`, review revdf DF4) — at most
 * MAX_KEPT_PER_RECEIVER for one session and MAX_RECEIVERS sessions (the
 * oldest go); memory only, like custody's controls, so a broker restart
 * forgets them. A memory broker's idle exit waits for those kept at a close
 * as for the mailbox's mail, a cancelled copy among it (MailDelivery.held):
 * exiting would forget them just the same, and the rule is one for
 * everything kept for a session that is away. Not for those kept at an
 * `unregister` (`holdsExit` false; review revv V2): a client's orderly
 * shutdown is `unregister`, then the close, and a client given no
 * `instanceId` makes a new one per client, so the instance they are kept for
 * mostly never comes back — held, they would keep such a broker up for the
 * mailbox's retention (a day by default). They are still kept, aged and
 * bounded alike, for a client that registers the same instance again (pi's
 * `/reload`) while the broker is up. One kept because a closed connection
 * refused it (MailReturns' `keepRefused`), or left in a takeover's
 * hand-over, holds the exit as one kept at a close does, unless its own
 * session left that connection by `unregister` — told by its session's key
 * (`Peer.leftBy`), as at a close's give-back, since the connection may have
 * registered another session since (review revba BA2).
 *
 * Owner: MailDelivery, in the Router's synchronous code: the close path
 * and an `unregister`'s hand-back (`keep`; helper unregctl: the same
 * instance may register again after its own `unregister`), registration
 * (`takeFor`), and the clean-ups and idle watcher's question (`expire`,
 * `count`, `oldestAt`) only.
 */
import { AgedMap } from "./AgedMap.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { mayHold, type Session, type SessionInstance } from "./Registry.ts"

/** Sessions with kept controls, at most; past this the least recently kept go. */
const MAX_RECEIVERS = 4096

/** Controls kept for one session, at most; past this its oldest go. */
const MAX_KEPT_PER_RECEIVER = 256

/** A kept control, when it was kept, and whether it holds a memory broker's idle exit (see the module header). */
interface Kept {
  readonly control: ControlFrame
  /** When it was kept, or the reading the clock stepped back to below it since (`redateKept`). */
  keptAt: number
  readonly holdsExit: boolean
}

/** The controls kept for one session, oldest first (their `keptAt` never decreases). */
interface KeptList {
  readonly key: string
  readonly kept: Array<Kept>
}

/** Controls whose message was read, kept for the instance that read it while its session is away (see the module header). */
export class KeptControls {
  /** By the session key of the control's receiver (`ControlFrame.to`), aged from its oldest control. */
  private readonly byReceiver = new AgedMap<string, KeptList>(MAX_RECEIVERS, (list, at) => redateKept(list.kept, at))
  /** The controls in `byReceiver`, over all its lists. */
  private controls = 0
  /** Those of them that hold a memory broker's idle exit (kept at a close: `holdsExit`). */
  private holding = 0
  /** Controls kept since the broker started (`keep`), for the broker's stats. */
  private keptCount = 0
  /** Controls given to their instance's return since the broker started (`takeFor`). */
  private givenCount = 0

  /** How many sessions have controls kept. */
  get size(): number {
    return this.byReceiver.size
  }

  /** Since the broker started: controls kept (`kept`), and controls given to their instance's return (`given`). */
  get counts(): { readonly kept: number; readonly given: number } {
    return { kept: this.keptCount, given: this.givenCount }
  }

  /** How many controls are kept, over all sessions. */
  get count(): number {
    return this.controls
  }

  /** How many of them hold a memory broker's idle exit: those kept at a close, not at an `unregister`. */
  get holdingCount(): number {
    return this.holding
  }

  /**
   * When the oldest control kept was kept, if any is — whether it holds the
   * idle exit or not: the first moment `expire` lets some control go.
   */
  get oldestAt(): number | undefined {
    return this.byReceiver.oldestAt
  }

  /** Drops the controls kept at or before `cutoff` (the mailbox's retention ago); younger ones in the same list stay. */
  expire(cutoff: number): void {
    if (this.byReceiver.size === 0) return
    for (const list of this.byReceiver.expire(cutoff)) {
      const young = list.kept.findIndex((kept) => kept.keptAt > cutoff)
      if (young === -1) this.uncount(list.kept)
      else {
        this.uncount(list.kept.slice(0, young))
        this.reage(list.key, list.kept.slice(young))
      }
    }
  }

  /**
   * Keeps `control` for the client instance of its session it was written
   * to (`ControlFrame.instance`); `holdsExit`: kept at a close, it holds a
   * memory broker's idle exit; kept at an `unregister`, it does not (see the
   * module header).
   */
  keep(control: ControlFrame, now: number, holdsExit: boolean): void {
    this.keptCount++
    this.controls++
    if (holdsExit) this.holding++
    const kept: Kept = { control, keptAt: now, holdsExit }
    const list = this.byReceiver.get(control.to)
    // A keep at a reading below earlier ones (the clock stepped back): the lists and controls dated past it count
    // from it (AgedMap.redate, `redateKept`; review revdf DF4), one comparison each otherwise.
    this.byReceiver.redate(now)
    if (list === undefined) {
      for (const gone of this.byReceiver.set(control.to, { key: control.to, kept: [kept] }, now)) this.uncount(gone.kept)
      return
    }
    // The list keeps its age (its oldest control's) unless the bound lets that one go.
    redateKept(list.kept, now)
    list.kept.push(kept)
    if (list.kept.length > MAX_KEPT_PER_RECEIVER) {
      const first = list.kept.shift()
      if (first !== undefined) this.uncount([first])
      this.reage(list.key, list.kept)
    }
  }

  /**
   * `receiver` registered: the controls kept for its client instance, taken
   * out, in the order they were kept. Those kept for other instances of its
   * session stay for their return (review revm M2: another instance's
   * registration never got their messages, and takes nothing from those
   * that did), each with its own age — unless that instance can never
   * register as itself again now that `receiver` holds the session
   * (`mayReturn` false: it sent no `instanceId`, so only the id's last
   * holder, which `receiver` becomes, may be continued without one; or the
   * bounds forgot it): those are dropped, since they would wait for no one
   * and, kept at a close, hold a memory broker's idle exit for the
   * mailbox's retention (review revba BA1). Controls kept at or before
   * `cutoff` are dropped first.
   */
  takeFor(receiver: Session, cutoff: number, mayReturn: (instance: SessionInstance) => boolean): ReadonlyArray<ControlFrame> {
    if (this.byReceiver.size === 0) return []
    this.expire(cutoff)
    const list = this.byReceiver.get(receiver.key)
    if (list === undefined) return []
    const taken: Array<ControlFrame> = []
    const rest: Array<Kept> = []
    const gone: Array<Kept> = []
    for (const kept of list.kept) {
      if (mayHold(kept.control.instance, receiver)) {
        taken.push(kept.control)
        if (kept.holdsExit) this.holding--
      } else if (mayReturn(kept.control.instance)) rest.push(kept)
      else gone.push(kept)
    }
    this.controls -= taken.length
    this.givenCount += taken.length
    this.uncount(gone)
    if (rest.length === 0) this.byReceiver.delete(receiver.key)
    else if (rest.length < list.kept.length) this.reage(receiver.key, rest)
    return taken
  }

  /**
   * Puts `kept` (not empty, oldest first) back as the list of `key`, aged from its oldest control. Controls dated
   * past the newest reading the lists were given (kept before a clock step back) are re-dated to it first, so
   * the list never goes back at a date the step's re-dating took from it (review revdf DF4).
   */
  private reage(key: string, kept: Array<Kept>): void {
    redateKept(kept, this.byReceiver.reading)
    const first = kept[0]
    if (first === undefined) return
    for (const gone of this.byReceiver.setAged(key, { key, kept }, first.keptAt)) this.uncount(gone.kept)
  }

  /** `gone` left the lists: no longer counted. */
  private uncount(gone: ReadonlyArray<Kept>): void {
    this.controls -= gone.length
    for (const kept of gone) if (kept.holdsExit) this.holding--
  }
}

/**
 * Re-dates to `at` the controls of `kept` (oldest first) dated past it: the clock stepped back below them, and
 * they count from the step, as the lists do (AgedMap.ts). One comparison when none is.
 */
const redateKept = (kept: Array<Kept>, at: number): void => {
  for (let i = kept.length - 1; i >= 0; i--) {
    const later = kept[i]
    if (later === undefined || later.keptAt <= at) return
    later.keptAt = at
  }
}
