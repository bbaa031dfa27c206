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
 * instances that read it (WithdrawnCopies.ts; review revm M2, M3).
 * A control whose message comes back in the same close is not kept here
 * (the mailbox decides that message's fate, with a cancel made again when
 * its client may have read it: WithdrawnCopies.ts).
 *
 * Kept as long as the mailbox keeps mail (its retention), at most
 * MAX_KEPT_PER_RECEIVER for one session and MAX_RECEIVERS sessions (the
 * oldest go); memory only, like custody's controls, so a broker restart
 * forgets them. A memory broker's idle exit waits for them as for the
 * mailbox's mail, a cancelled copy among it (MailDelivery.held): exiting
 * would forget them just the same, and the rule is one for everything kept
 * for a session that is away.
 *
 * Owner: MailDelivery, in the Router's synchronous code: the close path
 * (`keep`), registration (`takeFor`), and the clean-ups and idle watcher's
 * question (`expire`, `count`, `oldestAt`) only.
 */
import { AgedMap } from "./AgedMap.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { mayHold, type Session } from "./Registry.ts"

/** Sessions with kept controls, at most; past this the least recently kept go. */
const MAX_RECEIVERS = 4096

/** Controls kept for one session, at most; past this its oldest go. */
const MAX_KEPT_PER_RECEIVER = 256

/** Controls whose message was read, kept for the instance that read it while its session is away (see the module header). */
export class KeptControls {
  /** By the session key of the control's receiver (`ControlFrame.to`), aged from the last one kept. */
  private readonly byReceiver = new AgedMap<string, Array<ControlFrame>>(MAX_RECEIVERS)
  /** The controls in `byReceiver`, over all its lists. */
  private controls = 0
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

  /** When the oldest list was kept (its last control), if any is. */
  get oldestAt(): number | undefined {
    return this.byReceiver.oldestAt
  }

  /** Drops the lists kept at or before `cutoff` (the mailbox's retention ago). */
  expire(cutoff: number): void {
    if (this.byReceiver.size === 0) return
    for (const gone of this.byReceiver.expire(cutoff)) this.controls -= gone.length
  }

  /** Keeps `control` for the client instance of its session it was written to (`ControlFrame.instance`). */
  keep(control: ControlFrame, now: number): void {
    this.keptCount++
    const kept = this.byReceiver.get(control.to) ?? []
    if (kept.length >= MAX_KEPT_PER_RECEIVER) {
      kept.shift()
      this.controls--
    }
    kept.push(control)
    this.controls++
    for (const gone of this.byReceiver.set(control.to, kept, now)) this.controls -= gone.length
  }

  /**
   * `receiver` registered: the controls kept for its client instance, taken
   * out, in the order they were kept. Those kept for other instances of its
   * session stay for their return (review revm M2: another instance's
   * registration never got their messages, and takes nothing from those
   * that did). Lists kept at or before `cutoff` are dropped first.
   */
  takeFor(receiver: Session, cutoff: number): ReadonlyArray<ControlFrame> {
    if (this.byReceiver.size === 0) return []
    this.expire(cutoff)
    const kept = this.byReceiver.get(receiver.key)
    if (kept === undefined) return []
    const taken = kept.filter((control) => mayHold(control.instance, receiver))
    this.controls -= taken.length
    this.givenCount += taken.length
    if (taken.length === kept.length) this.byReceiver.delete(receiver.key)
    // The rest keep the list's age (from the last one kept).
    else if (taken.length > 0) this.byReceiver.update(receiver.key, kept.filter((control) => !mayHold(control.instance, receiver)))
    return taken
  }
}
