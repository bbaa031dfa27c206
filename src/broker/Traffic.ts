/**
 * What the live view (`observe-v1`, Observe.ts) shows of the traffic: totals
 * by outcome since the broker started, each session's own counts, and two
 * bounded rings — the latest routed messages and the latest refused sends.
 *
 * It is written on the per-frame path for every routed send, observed or not
 * (so that a one-off snapshot shows recent traffic), so it is built to cost
 * next to nothing there: the ring is parallel preallocated arrays written in
 * place (references to strings the send already holds, numbers, small
 * codes), the counters are plain number fields, and nothing is allocated per
 * message. Refusals are the slow path already; they are kept as objects.
 *
 * Single owner: written only by the send pipeline (Send.ts), read only by
 * Observe.ts, both synchronous Router code.
 */
import type { Message } from "../protocol/frames.ts"
import {
  REFUSAL_RING_SIZE,
  type RefusalEntry,
  TRAFFIC_RING_SIZE,
  type TrafficEntry,
  type TrafficKind,
  type TrafficOutcome
} from "../protocol/observe.ts"
import type { Session } from "./Registry.ts"

/** One session's traffic counts (a field of `Session`, created at registration). */
export class SessionTraffic {
  /** Messages it sent that were routed (delivered, queued or staged). */
  sent = 0
  /** Messages routed to it while it was live. */
  received = 0
  /** Broker clock when it registered. */
  readonly since: number

  constructor(now: number) {
    this.since = now
  }
}

const KINDS: ReadonlyArray<TrafficKind> = ["message", "ask", "reply"]
const OUTCOMES: ReadonlyArray<TrafficOutcome> = ["delivered", "queued", "staged"]

/** `Traffic.routed`'s outcome codes: indexes into OUTCOMES. */
export const Routed = { delivered: 0, queued: 1, staged: 2 } as const
/** An outcome code of `Traffic.routed`. */
export type Routed = (typeof Routed)[keyof typeof Routed]

/** Totals since the broker started, by outcome and by kind. */
export interface TrafficCounts {
  delivered: number
  queued: number
  staged: number
  refused: number
  asks: number
  replies: number
}

/** The traffic record of the live view; see the module header. */
export class Traffic {
  /** Totals since the broker started. */
  readonly totals: TrafficCounts = { delivered: 0, queued: 0, staged: 0, refused: 0, asks: 0, replies: 0 }
  /** Routed messages so far; the next one's `seq`. */
  private routedSeq = 0
  private readonly at = new Float64Array(TRAFFIC_RING_SIZE)
  private readonly fromId = new Array<string>(TRAFFIC_RING_SIZE).fill("")
  private readonly fromName = new Array<string | undefined>(TRAFFIC_RING_SIZE).fill(undefined)
  private readonly toId = new Array<string>(TRAFFIC_RING_SIZE).fill("")
  private readonly toName = new Array<string | undefined>(TRAFFIC_RING_SIZE).fill(undefined)
  private readonly messageId = new Array<string>(TRAFFIC_RING_SIZE).fill("")
  private readonly replyTo = new Array<string | undefined>(TRAFFIC_RING_SIZE).fill(undefined)
  private readonly kind = new Uint8Array(TRAFFIC_RING_SIZE)
  private readonly outcome = new Uint8Array(TRAFFIC_RING_SIZE)
  /** Refusals so far; the next one's `seq`. */
  private refusedSeq = 0
  private readonly refusals: Array<RefusalEntry> = []

  /**
   * A send was routed: `target` is the live recipient, or undefined when it
   * went to the mailbox for `toId` (`toName`). Counts it on both ends and
   * writes it into the ring, in place.
   */
  routed(
    sender: Session,
    message: Message,
    target: Session | undefined,
    toId: string,
    toName: string | undefined,
    outcome: Routed,
    now: number
  ): void {
    const totals = this.totals
    if (outcome === Routed.delivered) totals.delivered++
    else if (outcome === Routed.queued) totals.queued++
    else totals.staged++
    sender.traffic.sent++
    if (target !== undefined) target.traffic.received++
    const kind = message.replyTo !== undefined ? 2 : message.expectsReply === true ? 1 : 0
    if (kind === 1) totals.asks++
    else if (kind === 2) totals.replies++
    const i = this.routedSeq % TRAFFIC_RING_SIZE
    this.routedSeq++
    this.at[i] = now
    this.fromId[i] = sender.id
    this.fromName[i] = sender.fields.name
    this.toId[i] = toId
    this.toName[i] = toName
    this.messageId[i] = message.id
    this.replyTo[i] = message.replyTo
    this.kind[i] = kind
    this.outcome[i] = outcome
  }

  /** A send from `sender` addressed to `to` was refused with `code`. */
  refused(sender: Session | undefined, to: unknown, messageId: string, code: string, reason: string, now: number): void {
    this.totals.refused++
    const seq = this.refusedSeq++
    if (this.refusals.length >= REFUSAL_RING_SIZE) this.refusals.shift()
    this.refusals.push({
      seq,
      at: now,
      from: sender === undefined ? { id: "" } : party(sender.id, sender.fields.name),
      to: typeof to === "string" ? to.slice(0, 256) : "",
      messageId: messageId.slice(0, 256),
      code,
      reason
    })
  }

  /** The `seq` the next routed message will get. */
  get nextRoutedSeq(): number {
    return this.routedSeq
  }

  /** The `seq` the next refusal will get. */
  get nextRefusedSeq(): number {
    return this.refusedSeq
  }

  /** The routed messages still in the ring from `seq` on, oldest first. */
  trafficSince(seq: number): Array<TrafficEntry> {
    const from = Math.max(seq, this.routedSeq - TRAFFIC_RING_SIZE, 0)
    const entries: Array<TrafficEntry> = []
    for (let s = from; s < this.routedSeq; s++) {
      const i = s % TRAFFIC_RING_SIZE
      const replyTo = this.replyTo[i]
      entries.push({
        seq: s,
        at: this.at[i]!,
        from: party(this.fromId[i]!, this.fromName[i]),
        to: party(this.toId[i]!, this.toName[i]),
        kind: KINDS[this.kind[i]!]!,
        messageId: this.messageId[i]!,
        ...(replyTo === undefined ? {} : { replyTo }),
        outcome: OUTCOMES[this.outcome[i]!]!
      })
    }
    return entries
  }

  /** The refusals still in the ring from `seq` on, oldest first. */
  refusalsSince(seq: number): ReadonlyArray<RefusalEntry> {
    return this.refusals.filter((entry) => entry.seq >= seq)
  }
}

const party = (id: string, name: string | undefined) => name === undefined ? { id } : { id, name }
