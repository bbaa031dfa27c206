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
 * - the connection's registration took over no live session of its id (or
 *   is a `rejoin-v1` rejoin, down a chain, of one that took over none): the
 *   ledger takes it for "any" instance. That is more lenient than the
 *   broker, which tells a departed holder's return from another client by
 *   the client instances it keeps (src/broker/ClientInstances.ts: the same
 *   `instanceId`, or a base client after a base first holder, continues;
 *   anything else is a new instance), so this check misses a control the
 *   broker wrongly sends there (those cases have their own tests:
 *   test/broker/departed-instance.test.ts, first-holder-instance.test.ts).
 *   A client drops a control for an id it does not hold.
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
 * the other connections of the session registered (their clients read
 * `registered`), with no `unregister` handled and no end seen by the
 * broker, are the live session it takes over or rejoins.
 * A control about a message no client of the receiver read at all is
 * judged too (it is `control-before-message` as well): given to an old
 * instance that never read it, it must not reach a new one.
 *
 * Plain synchronous code owned by one `Ledger`: `InstanceLedger` is fed as
 * the broker handles each batch (`Ledger.brokerHandled`); the check runs
 * once at the end (`Ledger.finish`).
 */
import { isFrameDecodeError, parseFrameText } from "../../protocol/decode.ts"
import { REJOIN_V1 } from "../../protocol/features.ts"
import { type LedgerState, nameOf } from "./state.ts"
import { check, note } from "./trace.ts"

/** The instance the ledger takes for any earlier one: a registration that took over no live session (see the module header). */
const ANY_INSTANCE = 0

/** What a `register` the broker handled asked for: `rejoin-v1`, and the client's `instanceId`. */
interface Registration {
  readonly owner: string
  readonly rejoin: boolean
  readonly instanceId: string | undefined
}

/**
 * The client instance the broker takes each connection for, as it handles each `register` and
 * `unregister` (`Ledger.brokerHandled`). Owned by one `Ledger`.
 */
export class InstanceLedger {
  /** Per link whose `register` the broker handled: what it asked, and the instance it was taken for. */
  private readonly registrations = new Map<number, Registration & { readonly instance: number }>()
  /** Links whose `unregister` the broker handled: no longer a live session to the broker. */
  private readonly departed = new Set<number>()

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
      if (!text.startsWith(`{"type":"register"`) || this.registrations.has(linkId)) continue
      const parsed = parseFrameText(text)
      if (isFrameDecodeError(parsed) || parsed.type !== "register") continue
      const features = parsed["features"]
      const instanceId = parsed["instanceId"]
      const rejoin = Array.isArray(features) && features.includes(REJOIN_V1)
      const asked: Registration = {
        owner: link.owner,
        rejoin,
        instanceId: rejoin && typeof instanceId === "string" ? instanceId : undefined
      }
      this.registrations.set(linkId, { ...asked, instance: this.instanceAt(state, linkId, asked) })
    }
  }

  /**
   * The instance a registration `asked` on link `linkId` is taken for: `ANY_INSTANCE` when no other
   * connection of its session was live to the broker (registered — its client read `registered` — with
   * no `unregister` handled and no end seen); the live one's own at a rejoin (both asked `rejoin-v1` with
   * the same `instanceId`); otherwise a new one, named by `linkId`.
   */
  private instanceAt(state: LedgerState, linkId: number, asked: Registration): number {
    let live: (Registration & { readonly instance: number }) | undefined
    for (const [id, registration] of this.registrations) {
      const other = state.links.get(id)
      if (id === linkId || registration.owner !== asked.owner || other === undefined) continue
      if (other.registeredAt === undefined || other.brokerEnded || this.departed.has(id)) continue
      live = registration
    }
    if (live === undefined) return ANY_INSTANCE
    return asked.rejoin && live.rejoin && asked.instanceId !== undefined && asked.instanceId === live.instanceId
      ? live.instance
      : linkId
  }

  /** The instance link `linkId`'s registration was taken for (`ANY_INSTANCE` if the broker handled none). */
  instanceOf(linkId: number): number {
    return this.registrations.get(linkId)?.instance ?? ANY_INSTANCE
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
    if (!received && instance === ANY_INSTANCE) {
      note(state, `   ${nameOf(state, link.owner)}'s client ${link.client} read a ${control.action} of ${record.alias} it never read, on connection #${link.id}, which took over no live session (any instance)`)
      continue
    }
    // An ask given to this very instance unread, cancelled: at its return the control comes alone (3dd5f19).
    const givenUnread = record.kind === "ask" && control.action === "cancel" &&
      record.writtenTo.some((id) => state.links.get(id)?.client === link.client && instances.instanceOf(id) === instance)
    const readers = [...new Set(record.reads.map((read) => read.client))]
    check(state, received || givenUnread, "control-to-other-instance", () =>
      `${nameOf(state, link.owner)}'s client ${link.client} read ${nameOf(state, control.from)}'s ${control.action} of ${record.alias} on connection #${link.id}, an instance a takeover made, though it never received ${record.alias} (${
        readers.length === 0 ? "no client read it" : `read by ${readers.join(", ")}`
      })`)
  }
}
