/**
 * What the send pipeline (Send.ts) and the concerns that plug into it share:
 * a refusal, a send on its way through the stages (`SendAttempt`), a stage's
 * hooks (`SendStage`), and a route other than the sender's namespace
 * (`SendRoute`, the supervisor channel). Types only, so that a concern
 * depends on the pipeline's contract, not on the pipeline.
 */
import type { DeliveryCode } from "../protocol/delivery.ts"
import type { Message } from "../protocol/frames.ts"
import type { OutboundRecord } from "./OutboundRecord.ts"
import type { Mail } from "./Peer.ts"
import type { RecentSession } from "./RecentSessions.ts"
import type { Session } from "./Registry.ts"

/** Why a send is refused: a delivery code and its reason text (P45). */
export interface Refusal {
  readonly code: DeliveryCode
  readonly reason: string
}

/** A send that resolved and passed the replay check, on its way through the stages. */
export interface SendAttempt {
  readonly sender: Session
  readonly message: Message
  /** The live recipient, if there is one. */
  readonly target: Session | undefined
  /** The recently departed recipient (mailbox delivery, P49), when no live one resolved. */
  readonly remembered: RecentSession | undefined
  /** Registry key of the recipient, live or remembered. */
  readonly targetKey: string
  /** For a reply: the record key of the ask it answers (the target's `replyTo`), built once. */
  readonly replyKey: string | undefined
  /**
   * The message's outbound record (OutboundRecord.ts), fingerprinted and
   * kept with the send's outcome: a stage that keeps something per message
   * (a receipt route) keeps it there.
   */
  readonly record: OutboundRecord
  /** The raw `send` frame, for extension fields a stage reads. */
  readonly frame: { readonly [key: string]: unknown }
  readonly now: number
  /**
   * The broker's stamp for this send (BrokerStamps.ts): its `brokerReceivedAt`, and the `timestamp` of a
   * control it sends (a supersede). Not below any stamp given before, even when `now` stepped back. A
   * `replace`-staged message handed over as its window closes (Send.deliverStaged) is stamped again then, for
   * the control sent then; its mail keeps the `brokerReceivedAt` it was staged with (read that, not this).
   */
  readonly stamp: number
  /**
   * A staged `replace` message checked again as its window closes
   * (Send.deliverStaged): accepted already (`delivery_queued`), so a stage
   * refuses it only for what makes its delivery wrong now, not for what
   * only its sender's later steps changed (a supersede's target cancelled
   * meanwhile: SupersedeStage.ts).
   */
  readonly staged: boolean
}

/** A concern's part in the pipeline; every member is optional. */
export interface SendStage {
  /**
   * The target was not found in the sender's namespace: a better answer than
   * "not found", if the stage has one (e.g. "in another group").
   */
  readonly unresolved?: (sender: Session, to: string) => Refusal | undefined
  /**
   * The target was not found in the sender's namespace and the message is a
   * reply (`replyTo`): the session it may go to anyway, if the stage knows one
   * (a supervisor's reply back across groups, Supervisor.ts).
   */
  readonly reroute?: (sender: Session, to: string, message: Message, now: number) => Session | undefined
  /** Refuses the send, or lets it on (undefined). */
  readonly check?: (attempt: SendAttempt) => Refusal | undefined
  /**
   * A staged message checked again as its window closes (`attempt.staged`, let through): true when its
   * `supersedes` names a message whose fate its sender settled while it waited (cancelled, or superseded by
   * another send) — it goes without the field, naming nothing its receiver has not been told the fate of already.
   */
  readonly supersedesSettled?: (attempt: SendAttempt) => boolean
  /** Runs just before the message is queued for a live recipient (e.g. a supersede notice first). */
  readonly beforeDelivery?: (attempt: SendAttempt, target: Session) => void
  /** The message was queued for a live recipient. */
  readonly delivered?: (attempt: SendAttempt, mail: Mail, target: Session) => void
  /**
   * The message was accepted into the mailbox for an absent recipient (P49):
   * what delivery settles is settled now (a reply closes its edge).
   */
  readonly queued?: (attempt: SendAttempt, mail: Mail) => void
}

/** Where a send goes, or why it cannot go anywhere. */
export type Resolution =
  | { readonly target: Session | undefined; readonly remembered: RecentSession | undefined; readonly id: string }
  | { readonly refused: Refusal; readonly id: string | undefined }

/**
 * A route other than the sender's namespace, for a frame that is a send by
 * another name (`supervisor_send`): how its target resolves, the channel its
 * message is marked with, and what happens once it is accepted.
 */
export interface SendRoute {
  readonly resolve: (sender: Session, to: string) => Resolution
  readonly channel: "supervisor"
  /** The send passed every check and is about to be delivered to `target`. */
  readonly accepted: (attempt: SendAttempt, target: Session) => void
}
