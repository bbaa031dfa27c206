/**
 * A control written to a client instance that never got its message
 * (`control-to-other-instance`): the broker sends a `message_control`
 * (cancel, supersede) only to the client instance that was given the
 * message (docs/protocol.md, "Receipts and control", review ctl2; the
 * route's `receiverInstance`, `Registry.mayHold`). A takeover by another
 * client (P16) is a new instance, which never got the old one's messages
 * and would take a cancel of an id it does not hold for one that arrives
 * later; so is the cancel put off behind a takeover's custody hold (review
 * revb D1) that must not reach the new instance when the old client
 * confirmed the message as it closed.
 *
 * What each instance received is what the ledger saw its client read: the
 * simulation gives each client (`LinkRecord.client`, a key per client
 * incarnation) its own `instanceId`, so "a client instance" is a client
 * key. A control read on a connection of client K about a message M no
 * connection of K ever read is a violation, except what the broker
 * documents as intended:
 *
 * - the connection's registration may be any earlier instance: it took
 *   over no live session of its id, and no client instance of its id held
 *   it since the current broker started (a restart empties what the broker
 *   knows), or it continues one that did (a `rejoin-v1` rejoin or return
 *   with the same `instanceId`, or a base client after a base last holder
 *   that may be any). This mirrors the broker's `Session.mayBeBeforeStart`
 *   (src/broker/ClientInstances.ts, Registration's `returningInstance`):
 *   the last INSTANCES_PER_ID instances per id, noted as each stops holding
 *   it, whatever its group or lifetime; the broker's bound of 65,536 ids is
 *   never reached by a simulated world, so the ledger keeps every id. Any
 *   other registration with no live session is a new instance, unless it
 *   continues a known one. A client drops a control for an id it does not
 *   hold.
 * - a cancel of an ask whose copy was written to a connection of K (the
 *   broker gave it to this instance) and never read there: an ask withdrawn
 *   unanswered is not asked again, so at K's return (its rejoin) the
 *   control comes alone. Harmless — the client drops it — and intended
 *   (commit 3dd5f19, the revert of ctl3's route naming no instance, review
 *   revb D3: not sending it left a client that had read the ask showing a
 *   withdrawn one).
 *
 * Which instance each registration is, is the ledger's view of the
 * broker's (`InstanceLedger`), taken as the broker handles each `register`:
 * the other connections of the session whose `register` it handled and did
 * not refuse, with no `unregister` handled and no end seen by the broker,
 * are the live session it takes over or rejoins — from the broker's handling
 * of their `register`, whether or not their clients have read `registered`
 * yet; a connection that registers again after its own `unregister` is live
 * again.
 * A control about a message no client of the receiver read at all is
 * judged too (it is `control-before-message` as well): given to an old
 * instance that never read it, it must not reach a new one.
 *
 * The converse, `control-never-reached-reader`: a control its sender was
 * answered `delivered` for must reach every client instance that read its
 * message and came back. A message such an instance read and never
 * confirmed, given back at its drop and then cancelled, stays in the
 * mailbox as a cancelled copy for that instance's return, which gets it and
 * the cancel behind it (src/broker/WithdrawnCopies.ts); a control given back
 * alone at a drop (its message confirmed) is kept for that instance's return
 * (src/broker/KeptControls.ts); a live instance is written it on the route.
 * So a client K that read M (from broker incarnation E, which acknowledged
 * the cancel or supersede of M at time T) and whose last connection is K's
 * own return — registered as that same instance (`InstanceLedger`) to E
 * after T, and live to the end with everything E wrote it read — must have
 * read a control about M on some connection, or a message of M's sender
 * superseding M (a supersede of a message given back unconfirmed is told by
 * the new message: WithdrawnCopies.keepCancelled keeps no copy for it). Void
 * when K never returns so (its last connection is another instance's, not
 * live at the end, or registered before T), when the broker restarted
 * between the read and the acknowledgement or between it and the return
 * (memory only: docs/protocol.md, "Receipts and control"), and for a read
 * from another incarnation. Not voided: the mailbox's bounds evicting a
 * cancelled copy (it goes silently, and the broker reports nothing of it) —
 * the simulated worlds' mailboxes stay within them — nor the retention (a
 * day; a run is minutes).
 *
 * Plain synchronous code owned by one `Ledger`: `InstanceLedger` is fed as
 * the broker handles each batch (`Ledger.brokerHandled`); the checks run
 * once at the end (`Ledger.finish`).
 */
import { isFrameDecodeError, parseFrameText } from "../../protocol/decode.ts"
import { REJOIN_V1 } from "../../protocol/features.ts"
import { liveToTheEnd } from "./controls.ts"
import { lastLinkOf, type LedgerState, type MessageRecord, nameOf } from "./state.ts"
import { check, note } from "./trace.ts"

/** Client instances the broker keeps per id (src/broker/ClientInstances.ts `INSTANCES_PER_ID`). */
const INSTANCES_PER_ID = 4

/** What a `register` the broker handled asked for: `rejoin-v1`, and the client's `instanceId`. */
interface Registration {
  readonly owner: string
  readonly brokerEpoch: number
  readonly rejoin: boolean
  readonly instanceId: string | undefined
}

/**
 * The client instance a registration was taken for: its number (numbered in the order they began),
 * and whether it may be any earlier instance (the broker's `Session.mayBeBeforeStart`: it registered with
 * nothing known of its id since the broker started, or continues one that did).
 */
interface Taken {
  readonly instance: number
  readonly any: boolean
}

/**
 * The client instance the broker takes each connection for, as it handles each `register` and
 * `unregister` (`Ledger.brokerHandled`). Owned by one `Ledger`.
 */
export class InstanceLedger {
  /** Per link whose `register` the broker handled, in the order it did: what it asked, and the instance it was taken for. */
  private readonly registrations = new Map<number, Registration & Taken>()
  /** Links whose `unregister` the broker handled: no longer a live session to the broker. */
  private readonly departed = new Set<number>()
  /** The last new instance's number. */
  private lastInstance = 0

  /** The broker handled `frames[from]` up to `frames[to]` read on link `linkId`. */
  handled(state: LedgerState, linkId: number, frames: ReadonlyArray<string>, from: number, to: number): void {
    const link = state.links.get(linkId)
    if (link === undefined) return
    for (let i = from; i < to; i++) {
      const text = frames[i]
      if (text === undefined) continue
      if (text.startsWith(`{"type":"unregister"`)) {
        this.departed.add(linkId)
        continue
      }
      // A register after the connection's own `unregister` registers it again; one on a live registration is refused.
      if (!text.startsWith(`{"type":"register"`) || (this.registrations.has(linkId) && !this.departed.has(linkId))) continue
      const parsed = parseFrameText(text)
      if (isFrameDecodeError(parsed) || parsed.type !== "register") continue
      const features = parsed["features"]
      const instanceId = parsed["instanceId"]
      const rejoin = Array.isArray(features) && features.includes(REJOIN_V1)
      const asked: Registration = {
        owner: link.owner,
        brokerEpoch: link.brokerEpoch,
        rejoin,
        instanceId: rejoin && typeof instanceId === "string" ? instanceId : undefined
      }
      const taken = this.instanceAt(state, asked)
      // Live again, and the most recent registration.
      this.departed.delete(linkId)
      this.registrations.delete(linkId)
      this.registrations.set(linkId, { ...asked, ...taken })
    }
  }

  /**
   * The instance a registration `asked` is taken for, as the broker's `Registration`
   * does. With another connection of its session live to the broker (its `register` handled and not
   * refused — whatever its client has read — with no `unregister` handled and no end seen): the live one's own at a rejoin (both
   * asked `rejoin-v1` with the same `instanceId`), otherwise a new one. With none live, the client
   * instances of its id that held it since the current broker started, most recent first, the last
   * `INSTANCES_PER_ID` (ClientInstances.returning): none — a new one that may be any earlier one; one
   * with the same `instanceId` — that one, continued; a base client after a base last holder that may
   * be any — that one; otherwise a new one. The broker also forgets ids past 65,536 of them, which no
   * simulated world reaches.
   */
  private instanceAt(state: LedgerState, asked: Registration): Taken {
    const fresh: Taken = { instance: ++this.lastInstance, any: false }
    let live: (Registration & Taken) | undefined
    // The instances that stopped holding the id, by when they last began to (a session holds it until
    // the next one registers: one at a time), most recent first.
    const known: Array<Registration & Taken> = []
    for (const [id, registration] of this.registrations) {
      const other = state.links.get(id)
      // Link `linkId`'s own earlier registration, if any, is one it left (`unregister`): known, not live.
      if (registration.owner !== asked.owner || other === undefined) continue
      // A registration the broker refused never held the id; one whose client has not read `registered` yet does.
      if (registration.brokerEpoch !== asked.brokerEpoch || other.refused) continue
      if (!other.brokerEnded && !this.departed.has(id)) {
        live = registration
        continue
      }
      const before = known.findIndex((one) => one.instance === registration.instance)
      if (before >= 0) known.splice(before, 1)
      known.unshift(registration)
    }
    if (live !== undefined) {
      return asked.rejoin && live.rejoin && asked.instanceId !== undefined && asked.instanceId === live.instanceId
        ? live
        : fresh
    }
    const last = known[0]
    if (last === undefined) return { instance: ++this.lastInstance, any: true }
    if (asked.instanceId !== undefined) {
      return known.slice(0, INSTANCES_PER_ID).find((one) => one.instanceId === asked.instanceId) ?? fresh
    }
    return last.instanceId === undefined && last.any ? last : fresh
  }

  /** The instance link `linkId`'s registration was taken for (one of its own, below every other, if the broker handled none). */
  instanceOf(linkId: number): number {
    return this.registrations.get(linkId)?.instance ?? -linkId
  }

  /** Whether link `linkId`'s registration may be any earlier instance (see `instanceAt`; also when the broker handled none). */
  mayBeAny(linkId: number): boolean {
    return this.registrations.get(linkId)?.any ?? true
  }
}

/** `control-to-other-instance` (see the module header): run at the end of the run. */
export const checkControlInstances = (state: LedgerState, instances: InstanceLedger): void => {
  for (const control of state.controls.reads) {
    const record = state.messages.get(control.messageId)
    const link = state.links.get(control.link)
    if (record === undefined || link === undefined) continue
    // What this client received: a copy its client read, on any connection.
    const received = record.reads.some((read) => read.client === link.client)
    const instance = instances.instanceOf(link.id)
    if (!received && instances.mayBeAny(link.id)) {
      note(state, `   ${nameOf(state, link.owner)}'s client ${link.client} read a ${control.action} of ${record.alias} it never read, on connection #${link.id}, registered with no instance of its id known since the broker started (any instance)`)
      continue
    }
    // An ask given to this very instance unread, cancelled: at its return the control comes alone (3dd5f19).
    const givenUnread = record.kind === "ask" && control.action === "cancel" &&
      record.writtenTo.some((id) => state.links.get(id)?.client === link.client && instances.instanceOf(id) === instance)
    const readers = [...new Set(record.reads.map((read) => read.client))]
    check(state, received || givenUnread, "control-to-other-instance", () =>
      `${nameOf(state, link.owner)}'s client ${link.client} read ${nameOf(state, control.from)}'s ${control.action} of ${record.alias} on connection #${link.id}, an instance that never got it (a takeover's or another client's), though it never received ${record.alias} (${
        readers.length === 0 ? "no client read it" : `read by ${readers.join(", ")}`
      })`)
  }
}

/** Whether client `client` read a control about `record` from its sender, or a message of its sender superseding it. */
const readerTold = (state: LedgerState, record: MessageRecord, client: string): boolean =>
  state.controls.reads.some((control) =>
    control.messageId === record.id && control.from === record.sender && state.links.get(control.link)?.client === client
  ) ||
  [...state.messages.values()].some((other) =>
    other.sender === record.sender && other.message.supersedes === record.id && other.reads.some((read) => read.client === client)
  )

/** `control-never-reached-reader` (see the module header): run at the end, with the world settled. */
export const checkControlsReachReaders = (state: LedgerState, instances: InstanceLedger): void => {
  const acks = [
    ...state.controls.cancelAcks.map((ack) => ({ ...ack, action: "cancel" })),
    ...state.controls.supersedeAcks.map((ack) => ({ ...ack, action: "supersede" }))
  ]
  for (const ack of acks) {
    const record = state.messages.get(ack.messageId)
    if (record === undefined || record.sender !== ack.sender) continue
    // Each client instance of the receiver that read it from the broker that acknowledged the control.
    const readers = new Map<string, { readonly instance: number; readonly link: number }>()
    for (const read of record.reads) {
      const link = state.links.get(read.link)
      if (link === undefined || link.owner !== record.target || link.brokerEpoch !== ack.epoch) continue
      // The first connection of that instance that read it: a return's connection reads the copy again.
      const key = `${link.client}\0${instances.instanceOf(link.id)}`
      if (!readers.has(key)) readers.set(key, { instance: instances.instanceOf(link.id), link: link.id })
    }
    for (const reader of readers.values()) {
      const client = state.links.get(reader.link)?.client ?? ""
      const last = lastLinkOf(state, client)
      if (last === undefined || last.id === reader.link || instances.instanceOf(last.id) !== reader.instance) continue
      if (last.registerReadAt === undefined || last.registerReadAt <= ack.at || !liveToTheEnd(last, ack.epoch)) continue
      check(state, readerTold(state, record, client), "control-never-reached-reader", () =>
        `${nameOf(state, ack.sender)}'s ${ack.action} of ${record.alias} was acknowledged; ${nameOf(state, last.owner)}'s client ${client} had read ${record.alias} (on connection #${reader.link}) and came back as that instance (connection #${last.id}, registered after the acknowledgement, live to the end with everything read), yet no control about ${record.alias} reached it`)
    }
  }
}
