/**
 * A join with no `session_left` before it (`missing-left`): a connection
 * that read X's `session_joined`, then reads another `session_joined` of X
 * with no `session_left` of X between, although X departed in between.
 * docs/protocol.md ("Discovery and presence"): a session a recipient saw
 * present that has gone always reaches it as `session_left`, also when it
 * left and joined again before the recipient caught up (the pair comes
 * together).
 *
 * "Departed in between" is the broker's view, as ledger/departure.ts counts
 * it: an `unregister` it handled or a connection it saw end, numbered per
 * broker incarnation and session. Each join frame is given, when the
 * broker's writer begins the write that holds it (`writeStarted`: it chose
 * the frames then), the count of departures before the registration it
 * shows; a client registers each connection with the same `startedAt`, so
 * only that moment tells the registrations apart. Matched to the client's
 * reads in order per connection (a join the write never handed over is
 * passed over). A second join whose count is higher than the first's is a
 * departure the connection was not told of. The legitimate cases:
 * - a takeover (P16), and a client's own rejoin under `rejoin-v1`, which the
 *   broker also handles as one: no departure, so the counts are equal;
 * - a departure the recipient held back behind X's mail (a replace-staged
 *   message of X's waiting for room after X's connection closed, or X's mail
 *   in the recipient's own parked flush) when X came back before that mail
 *   was out: the new join stands for it (WithheldDepartures.ts). The ledger
 *   cannot see which hold a recipient had; it passes over every rejoin
 *   around which a message X sent before that departure, addressed to the
 *   recipient, had not reached any of its connections yet (delivered later,
 *   or dropped). So this check also passes over the other holds of such mail
 *   (X's own output parked behind backpressure, a custody hold), where the
 *   pair is owed, and judges only rejoins with none of X's mail to the
 *   recipient outstanding. Less than it seems: the pair is written after
 *   the held mail, so a recipient reading it has read that mail and is
 *   judged; what goes unseen is a join without its departure written there
 *   ahead of the mail.
 * A connection's view starts afresh at each `registered` it reads.
 *
 * And the pair missing altogether (`missing-pair`, `finish`): at the end
 * of the run, a connection live to the end that read everything still
 * shows X by the join of a registration X left since, X back — it was told
 * neither the `session_left` nor the new join, which `missing-left` (it
 * needs a second join) and the end-of-run view (X is present) miss.
 *
 * Owned by one `Ledger`; plain synchronous state, fed by its wire taps.
 */
import { decodeBrokerFrameText, isFrameDecodeError } from "../../protocol/decode.ts"
import type { DepartureLedger } from "./departure.ts"
import { isHostile, type LedgerState, type LinkRecord, nameOf } from "./state.ts"
import { check, note } from "./trace.ts"

/** A `session_joined` written toward a connection: the session, its `startedAt`, and the departures before the registration it shows. */
interface WrittenJoin {
  readonly session: string
  readonly startedAt: number
  readonly before: number | undefined
}

/** The join of a session a connection read last, with no `session_left` of it since. */
interface Present {
  readonly before: number | undefined
  /** Simulated ms of the read, for the report. */
  readonly at: number
}

/** The missing-departure side of one ledger (`missing-left`, `missing-pair`). */
export class JoinLedger {
  /** Joins in broker writes begun on each link and not read yet, in order. */
  private readonly written = new Map<number, Array<WrittenJoin>>()
  /** Per link, the sessions its client read join and not leave since its last `registered`. */
  private readonly present = new Map<number, Map<string, Present>>()

  /** The broker began a write of `frames` on link `linkId`: each join among them is given its departure count now. */
  writeStarted(state: LedgerState, departures: DepartureLedger, linkId: number, frames: ReadonlyArray<string>): void {
    const link = state.links.get(linkId)
    if (link === undefined) return
    for (const text of frames) {
      if (!text.startsWith(`{"type":"session_joined"`)) continue
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame) || frame.type !== "session_joined") continue
      const { id, pid, startedAt } = frame.session
      const queue = this.written.get(linkId) ?? []
      queue.push({ session: id, startedAt, before: departures.departuresBeforeJoin(link.brokerEpoch, id, startedAt, pid) })
      this.written.set(linkId, queue)
    }
  }

  /** The client of link `linkId` read `frames`: joins are judged, leaves clear the view. */
  clientRead(state: LedgerState, departures: DepartureLedger, linkId: number, frames: ReadonlyArray<string>): void {
    const link = state.links.get(linkId)
    if (link === undefined) return
    for (const text of frames) {
      if (text.startsWith(`{"type":"registered"`)) {
        this.present.delete(linkId)
        continue
      }
      const left = text.startsWith(`{"type":"session_left"`)
      if (!left && !text.startsWith(`{"type":"session_joined"`)) continue
      const frame = decodeBrokerFrameText(text)
      if (isFrameDecodeError(frame)) continue
      const view = this.present.get(linkId) ?? new Map<string, Present>()
      this.present.set(linkId, view)
      if (frame.type === "session_left") {
        view.delete(frame.sessionId)
        continue
      }
      if (frame.type !== "session_joined") continue
      const session = frame.session.id
      const queue = this.written.get(linkId) ?? []
      const at = queue.findIndex((entry) => entry.session === session && entry.startedAt === frame.session.startedAt)
      // Reads follow writes in order: a join written before this one and not read was never handed over.
      const entry = at < 0 ? undefined : queue.splice(0, at + 1)[at]
      const before = entry?.before
      const earlier = view.get(session)
      view.set(session, { before, at: state.now() })
      const seenBefore = earlier?.before
      if (earlier === undefined || seenBefore === undefined || before === undefined || before <= seenBefore) continue
      if (isHostile(state, link.owner) || isHostile(state, session)) continue
      const outstanding = this.heldMail(state, departures, link.brokerEpoch, link.owner, session, before)
      if (outstanding !== undefined) {
        note(state, `   ${nameOf(state, link.owner)} on link #${linkId} read ${nameOf(state, session)} join again with no session_left between, with ${outstanding} from before its departure not there yet: the join may stand for a departure held back behind it`)
        continue
      }
      check(state, false, "missing-left", () =>
        `${nameOf(state, link.owner)} on link #${linkId} read ${nameOf(state, session)} join at ${earlier.at} ms and again now, with no session_left of it between, though it departed ${
          before - seenBefore
        } time(s) in between (broker #${link.brokerEpoch}) and had no mail from before that on its way to ${nameOf(state, link.owner)}`)
    }
  }

  /**
   * `missing-pair`, at the end of the run with the world settled: a connection live to the end (registered,
   * open to both sides, nothing the broker wrote it unread or on its way) whose view still shows X by a
   * join of an earlier registration of X than the one the broker holds now, with departures of X between
   * (this broker incarnation): it was told neither the `session_left` nor the new `session_joined`.
   */
  finish(state: LedgerState, departures: DepartureLedger): void {
    for (const [linkId, view] of this.present) {
      const link = state.links.get(linkId)
      if (link === undefined || isHostile(state, link.owner) || !settledToTheEnd(link)) continue
      for (const [session, seen] of view) {
        const before = seen.before
        if (before === undefined || isHostile(state, session)) continue
        const now = departures.departuresOfHeld(state, link.brokerEpoch, session)
        if (now === undefined) continue
        check(state, now <= before, "missing-pair", () =>
          `${nameOf(state, link.owner)} on link #${linkId} last read ${nameOf(state, session)} join at ${seen.at} ms, and ${nameOf(state, session)} departed ${
            now - before
          } time(s) since and is back (broker #${link.brokerEpoch}), yet no session_left nor session_joined of it reached that connection`)
      }
    }
  }

  /**
   * The alias of a message `sender` sent in a registration that ended by one of its first `upTo`
   * departures (broker incarnation `epoch`), addressed to `receiver`, that no connection of the receiver
   * has read yet: a hold of the receiver's may have been waiting for it.
   */
  private heldMail(
    state: LedgerState,
    departures: DepartureLedger,
    epoch: number,
    receiver: string,
    sender: string,
    upTo: number
  ): string | undefined {
    for (const record of state.messages.values()) {
      if (record.sender !== sender || record.target !== receiver) continue
      const end = departures.endedBy(record.id)
      if (end === undefined || end.epoch !== epoch || end.index > upTo) continue
      if (record.reads.some((read) => state.links.get(read.link)?.owner === receiver)) continue
      return record.alias
    }
    return undefined
  }
}

/** Whether `link` is registered and live to both sides at the end, with nothing the broker wrote it unread or on its way. */
const settledToTheEnd = (link: LinkRecord): boolean =>
  link.registered && !link.closed && !link.brokerEnded && link.endedAt === undefined && link.framesUnread === 0 &&
  link.writesUnsent === 0
