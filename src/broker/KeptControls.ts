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
 * control is kept here for the instance the message's route names
 * (`Receipts.givenTo`), and that instance's return (its reconnect:
 * `mayHold`) gets it at its registration, before the mailbox's mail (a
 * supersede's new message, given back in the same close, queues there and
 * goes right behind it, as it was written). Any other registration of the
 * session takes the controls out and gets none: it never got the message.
 * A control whose message comes back in the same close is not kept here
 * (the mailbox decides that message's fate, with a cancel made again when
 * its client may have read it: WithdrawnCopies.ts).
 *
 * Kept as long as the mailbox keeps mail (its retention), at most
 * MAX_KEPT_PER_RECEIVER for one session and MAX_RECEIVERS sessions (the
 * oldest go); memory only, like custody's controls, so a broker restart
 * forgets them, and a memory broker's idle exit is not held up by them
 * (they are a courtesy to a client that may never come back, not mail).
 *
 * Owner: MailDelivery, in the Router's synchronous code: the close path
 * (`keep`) and registration (`takeFor`) only.
 */
import { AgedMap } from "./AgedMap.ts"
import type { ControlFrame } from "./ControlFrame.ts"
import { mayHold, type Session, type SessionInstance } from "./Registry.ts"

/** Sessions with kept controls, at most; past this the least recently kept go. */
const MAX_RECEIVERS = 4096

/** Controls kept for one session, at most; past this its oldest go. */
const MAX_KEPT_PER_RECEIVER = 256

/** One kept control and the client instance it is for. */
interface Kept {
  readonly instance: SessionInstance
  readonly control: ControlFrame
}

/** Controls whose message was read, kept for the instance that read it while its session is away (see the module header). */
export class KeptControls {
  /** By the session key of the control's receiver (`ControlFrame.to`), aged from the last one kept. */
  private readonly byReceiver = new AgedMap<string, Array<Kept>>(MAX_RECEIVERS)
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

  /** Keeps `control` for the client `instance` of its session, given the message it is about. */
  keep(control: ControlFrame, instance: SessionInstance, now: number): void {
    this.keptCount++
    const kept = this.byReceiver.get(control.to) ?? []
    if (kept.length >= MAX_KEPT_PER_RECEIVER) kept.shift()
    kept.push({ instance, control })
    this.byReceiver.set(control.to, kept, now)
  }

  /**
   * `receiver` registered: the controls kept for its session, taken out, in
   * the order they were kept — those for its client instance returned, the
   * rest dropped (it never got their messages). Lists kept at or before
   * `cutoff` are dropped first.
   */
  takeFor(receiver: Session, cutoff: number): ReadonlyArray<ControlFrame> {
    if (this.byReceiver.size === 0) return []
    this.byReceiver.expire(cutoff)
    const kept = this.byReceiver.delete(receiver.key)
    if (kept === undefined) return []
    const given = kept.flatMap((entry) => mayHold(entry.instance, receiver) ? [entry.control] : [])
    this.givenCount += given.length
    return given
  }
}
