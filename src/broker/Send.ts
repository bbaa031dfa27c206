/**
 * Size note: about 515 lines, one concept — the order of one send's steps; see "Size" below for why it stays one
 * module, and what to split next: the hand-over of a staged send (`deliverStaged` with `handOver`, `refusal`,
 * `supersedesSettled`, sharing the stage list) and the prunes (`onPrune`, `prune`); the pipeline itself stays.
 *
 * The send pipeline (P40–P50): one `send` frame, in order —
 *
 *   decode → resolve the target → replay check (once) → self check →
 *   each stage's check → size check → deliver live, or queue in the mailbox →
 *   ack.
 *
 * Concerns plug in as `SendStage`s rather than as lines here: asks check
 * replies and mutual asks and open edges on delivery (Asks.ts), receipts check
 * supersedes and record routes (Receipts.ts). A new rule (groups) is one
 * more stage. A `replace` send (`delivery-v1`) to a live recipient is staged
 * instead of delivered (ReplaceStaging.ts), and handed over here when its
 * window closes (`deliverStaged`). Replay records (P46) are `ctx.records`,
 * read by the replay check (SendReplays.ts).
 *
 * Every send is counted by how it ended (RouteCounts.ts, read by `stats-v1`
 * and the OTLP metrics); a send carrying `traceparent` (`trace-v1`) is routed
 * inside a routing span when the broker traces (RoutingSpans.ts) and hands
 * the trace context on to its recipient.
 *
 * Size: every routing rule
 * lives in a stage module, and the contract the stages share is
 * SendStage.ts; what stays here is the pipeline that must run them in that
 * order on the per-frame path, in one synchronous pass (counting, tracing
 * and the live view's record are one call each, in their own modules, and
 * so are resolving the target, SendTargets.ts, the replay check,
 * SendReplays.ts, and answering the send, SendAnswers.ts: at once, or, in
 * durable mode, held for the commit or until the message is read; the
 * holding itself is StoreJournal.ts and ReadAcks.ts). Past ~400 lines still:
 * `pipeline` alone is about 210, one synchronous pass kept whole so that the
 * plain send pays no call per step; the staged hand-over and the prunes are
 * the parts that can leave without adding a call to it.
 */
import { MAX_FRAME_BYTES } from "../protocol/constants.ts"
import { attachmentControlOf, MAX_TARGET_LENGTH, TEXT_CONTROL } from "../protocol/limits.ts"
import { decodeMessage, isFrameDecodeError } from "../protocol/decode.ts"
import { DeliveryCode, isRetryable, Reason } from "../protocol/delivery.ts"
import { REPLY_ERROR_V1, TRACE_V1 } from "../protocol/features.ts"
import type { Message } from "../protocol/frames.ts"
import { frameBytes, type OutFrame } from "../protocol/framing.ts"
import { parseTraceparent } from "../protocol/trace.ts"
import { ACCEPTED } from "../store/records.ts"
import type { AnsweredAsks } from "./AnsweredAsks.ts"
import type { AskEdge } from "./AskEdges.ts"
import { askTimeoutOf } from "./AskAdmission.ts"
import { DELIVERED, deliveredTo, fingerprintOfMail, type Outcome, recordKeyOf } from "./DeliveryRecords.ts"
import { fitsFrame, liveFrameFor, longestTail, messageFrameFor, tailFieldNames } from "./RecipientFrames.ts"
import { deliveryOfFrame, isRefusal } from "./DeliveryModes.ts"
import { replyErrorOf } from "./ReplyErrors.ts"
import * as Encode from "./encode.ts"
import type { MailDelivery } from "./MailDelivery.ts"
import { OutboundRecord } from "./OutboundRecord.ts"
import type { Mail, OutboundMessage, Peer } from "./Peer.ts"
import type { Session } from "./Registry.ts"
import type { ReplaceStaging, Staged } from "./ReplaceStaging.ts"
import { RouteCounts, type RouteOutcome } from "./RouteCounts.ts"
import type { RoutingSpans } from "./RoutingSpans.ts"
import type { FrameHandlers, RouterContext } from "./RouterContext.ts"
import type { Refusal, Resolution, SendAttempt, SendRoute, SendStage } from "./SendStage.ts"
import { SendAnswers } from "./SendAnswers.ts"
import { SendReplays } from "./SendReplays.ts"
import { resolveTarget, targetKeyOf } from "./SendTargets.ts"
import { Routed, Traffic } from "./Traffic.ts"

/**
 * The larger of a failure reply's two forms (ReplyErrors.ts): with the
 * `replyError` field, or with the text marked as an error for a base recipient.
 */
const largestReplyErrorFrame = (mail: Mail, now: number): OutFrame => {
  const extended = messageFrameFor(mail, EXTENDED_RECIPIENT, now)
  const base = messageFrameFor(mail, BASE_RECIPIENT, now)
  return frameBytes(extended) >= frameBytes(base) ? extended : base
}

/** Stand-ins for a recipient granted `reply-error-v1` and a base one, to size a failure reply's frame. */
const EXTENDED_RECIPIENT: Pick<Peer, "features"> = { features: new Set([REPLY_ERROR_V1]) }
const BASE_RECIPIENT: Pick<Peer, "features"> = { features: new Set<string>() }

/** The send pipeline: the `send` frame, its stages and its clean-ups. */
export class Send {
  private readonly ctx: RouterContext
  private readonly mail: MailDelivery
  private readonly answering: (replyKey: string) => AskEdge | undefined
  private readonly stages: Array<SendStage> = []
  private readonly reroutes: Array<NonNullable<SendStage["reroute"]>> = []
  /** Time-based clean-up of the concerns, run before each send (O(1) when nothing expired). */
  private readonly prunes: Array<(now: number) => void> = []
  private prunedAt = Number.NaN
  private staging: ReplaceStaging | undefined
  private spans: RoutingSpans | undefined
  /** How the sends routed so far ended (RouteCounts.ts): read by metrics collection. */
  readonly counts = new RouteCounts()

  /** What the live view (`observe-v1`) shows of the traffic; written here for every routed or refused send. */
  readonly traffic = new Traffic()

  /** How each send is answered (SendAnswers.ts): at once, or held by the journal. */
  private readonly answers: SendAnswers

  /** The replay check (P46, SendReplays.ts): what a kept record answers a send under its id with. */
  readonly replays: SendReplays

  /**
   * @param answering the open ask edge a reply's `replyKey` names (Asks.ts), kept on its mail
   *   (`Mail.answers`) so that a reply lost before it reaches its asker can open it again.
   */
  constructor(
    ctx: RouterContext,
    mail: MailDelivery,
    answering: (replyKey: string) => AskEdge | undefined,
    answered?: AnsweredAsks
  ) {
    this.ctx = ctx
    this.mail = mail
    this.answering = answering
    this.answers = new SendAnswers(ctx, this.traffic)
    this.replays = new SendReplays(ctx, this.answers, answered)
  }

  /** Where `replace` sends (`delivery-v1`) are staged; without it they are delivered at once. */
  stageWith(staging: ReplaceStaging): void {
    this.staging = staging
  }

  /**
   * Where routing spans are made (`trace-v1`, RoutingSpans.ts): only in a
   * broker that traces; without it a traceparent is forwarded as it came.
   */
  traceWith(spans: RoutingSpans): void {
    this.spans = spans
  }

  /** Adds a stage; stages run in the order they were added. */
  use(stage: SendStage): void {
    this.stages.push(stage)
    if (stage.reroute !== undefined) this.reroutes.push(stage.reroute)
  }

  readonly frames: FrameHandlers = {
    send: { handle: (peer, frame) => this.handle(peer, frame, undefined) }
  }

  /**
   * Handles a send frame: routed in the sender's namespace, or along `route`,
   * and counted by outcome. A `traceparent` (`trace-v1`) is read only when
   * present: the plain send path pays one property read.
   */
  handle(peer: Peer, frame: { readonly [key: string]: unknown }, route: SendRoute | undefined): void {
    if (frame.traceparent === undefined) {
      this.counts.count(this.pipeline(peer, frame, route, undefined))
      return
    }
    this.traced(peer, frame, route)
  }

  /**
   * A send with a `traceparent`: honoured only from a sender granted
   * `trace-v1` and only when valid (else ignored, as W3C says). The broker's
   * routing span, when it traces, becomes the recipient's parent; otherwise
   * the sender's context travels on unchanged.
   */
  private traced(peer: Peer, frame: { readonly [key: string]: unknown }, route: SendRoute | undefined): void {
    const traceparent = peer.features.has(TRACE_V1) ? frame.traceparent : undefined
    const span = this.spans?.begin(traceparent)
    const forward = span === undefined ? parseTraceparentOrUndefined(traceparent) : span.traceparent
    const outcome = this.pipeline(peer, frame, route, forward)
    this.counts.count(outcome)
    span?.end(peer, frame, outcome)
  }

  /** The send pipeline proper (see the module header); returns how the send ended. */
  private pipeline(
    peer: Peer,
    frame: { readonly [key: string]: unknown },
    route: SendRoute | undefined,
    traceparent: string | undefined
  ): RouteOutcome {
    // P48: an invalid send is answered, not fatal.
    const message = decodeMessage(frame.message)
    if (isFrameDecodeError(message)) {
      return this.answers.fail(peer, "unknown", { code: DeliveryCode.InvalidMessage, reason: Reason.invalidMessage }, frame.to)
    }
    // C-SUP-13: only the broker marks a message's channel; a client that tries is refused.
    if (Object.hasOwn(frame, "channel")) {
      return this.answers.fail(peer, message.id, { code: DeliveryCode.InvalidMessage, reason: Reason.invalidChannel }, frame.to)
    }
    // C-TOOL-6: a text body holds no control character but TAB, LF and CR (one precompiled regex test).
    if (TEXT_CONTROL.test(message.content.text)) return this.answers.failTextControl(peer, message, frame.to)
    // The same for attachments, shown as text too: one regex test per field, none without attachments.
    const attachments = message.content.attachments
    if (attachments !== undefined) {
      const found = attachmentControlOf(attachments)
      if (found !== undefined) {
        const reason = Reason.attachmentControl(found.field, found.code, found.position)
        return this.answers.fail(peer, message.id, { code: DeliveryCode.InvalidMessage, reason }, frame.to)
      }
    }
    if (typeof frame.to !== "string") {
      return this.answers.fail(peer, message.id, { code: DeliveryCode.InvalidMessage, reason: Reason.invalidMessage }, frame.to)
    }
    if (frame.to.length > MAX_TARGET_LENGTH) {
      return this.answers.fail(peer, message.id, { code: DeliveryCode.InvalidTarget, reason: Reason.targetTooLong(MAX_TARGET_LENGTH) }, frame.to)
    }
    const sender = peer.session
    if (sender === undefined) {
      return this.answers.fail(peer, message.id, { code: DeliveryCode.SenderNotFound, reason: Reason.senderNotFound }, frame.to)
    }
    const now = this.ctx.now()
    this.prune(now)
    // Indexed loops over the stages here and below: `for…of` makes an iterator per loop until optimised.
    const stages = this.stages
    // P47: epoch-bound exact send; replies (`replyTo`) ignore the exact fields.
    const exact = route === undefined && (frame.targetId !== undefined || frame.targetEpoch !== undefined) &&
      message.replyTo === undefined
    let resolution = route !== undefined ? route.resolve(sender, frame.to) : resolveTarget(this.ctx.registry.recent, sender, frame.to, frame, exact)
    if (route === undefined && !exact && "refused" in resolution && resolution.refused.code === DeliveryCode.TargetNotFound) {
      resolution = this.rerouted(sender, frame.to, message, now) ?? resolution
    }

    // Extension `reply-error-v1`: read only when present (the plain send path pays one property read).
    const replyError = frame.replyError === undefined ? undefined : replyErrorOf(frame, peer)
    // P46: a retry of a recorded send gets the recorded answer, once the target is known (or, when it is
    // not, below). The record made for the comparison is the one kept if the send is recorded (one object
    // per message).
    const fingerprint = resolution.id === undefined ? undefined : OutboundRecord.of(sender.key, resolution.id, message, replyError)
    // A retry answered from its record names the session the record's message was for, as a first answer does:
    // `to` resolves to the record's target id (sameFingerprint). Not for a route's refusal: its space is the route's.
    const replay = fingerprint === undefined
      ? undefined
      : this.replays.replayed(peer, fingerprint, now, frame.to, route === undefined || !("refused" in resolution) ? targetKeyOf(resolution, sender) : undefined)
    if (replay !== undefined) return replay
    if ("refused" in resolution && resolution.refused.code === DeliveryCode.TargetNotFound) {
      // A target this broker does not know (yet): a durable broker that restarted, say, before it came back.
      const stored = fingerprint === undefined ? this.replays.replayedUnresolved(peer, sender.key, message, replyError, now) : undefined
      if (stored !== undefined) return stored
      if (route === undefined) {
        const to = exact && typeof frame.targetId === "string" ? frame.targetId : frame.to
        for (let i = 0; i < stages.length; i++) {
          const better = stages[i]!.unresolved?.(sender, to)
          if (better !== undefined) return this.answers.fail(peer, message.id, better, frame.to)
        }
      }
    }
    if ("refused" in resolution) {
      // Exact-send refusals are recorded: a same-id retry is answered the same way.
      if (fingerprint !== undefined && exact) {
        const outcome: Outcome = { ok: false, ...resolution.refused, retryable: isRetryable(resolution.refused.code) }
        this.ctx.records.set(fingerprint, outcome, now)
        this.traffic.refused(sender, frame.to, message.id, outcome.code, outcome.reason, now)
        return this.answers.answer(peer, message.id, outcome)
      }
      return this.answers.fail(peer, message.id, resolution.refused, frame.to)
    }
    const targetKey = resolution.target?.key ?? resolution.remembered?.key ?? ""
    if (targetKey === sender.key) {
      return this.answers.fail(peer, message.id, { code: DeliveryCode.SelfTarget, reason: Reason.selfTarget }, frame.to)
    }
    const delivery = route === undefined ? deliveryOfFrame(frame, sender, message) : undefined
    if (delivery !== undefined && isRefusal(delivery)) return this.answers.fail(peer, message.id, delivery, frame.to)

    // `fingerprint` is defined here: a resolution that is not refused always names its target.
    const recorded = fingerprint ?? OutboundRecord.of(sender.key, resolution.id, message, replyError)
    const attempt: SendAttempt = {
      sender,
      message,
      target: resolution.target,
      remembered: resolution.remembered,
      targetKey,
      replyKey: message.replyTo === undefined ? undefined : recordKeyOf(targetKey, message.replyTo),
      record: recorded,
      frame,
      now,
      stamp: this.ctx.stamps.at(now),
      staged: false
    }
    const refusal = this.refusal(attempt)
    if (refusal !== undefined) return this.answers.fail(peer, message.id, refusal, frame.to)
    // A durable broker whose last commit failed acknowledges nothing it cannot store.
    const storeFailure = this.ctx.journal?.failure
    if (storeFailure !== undefined) {
      return this.answers.fail(peer, message.id, { code: DeliveryCode.DeliveryFailed, reason: Reason.storeFailed(storeFailure) }, frame.to)
    }

    // The mailbox is the target's: mail requeued from a connection that closed is flushed when the
    // target registers again in its own space — another group's for a supervisor crossing (C-SUP-12, 14).
    const space = resolution.target?.space ?? sender.space
    const askTimeoutMs = askTimeoutOf(attempt, this.ctx.options.askTimeoutMs)
    const mail: Mail = {
      recordKey: recordKeyOf(sender.key, message.id),
      senderKey: sender.key,
      senderId: sender.id,
      senderIdentity: sender.identity,
      senderEnd: sender.senderEnd,
      fromJson: sender.infoJson,
      message,
      brokerReceivedAt: attempt.stamp,
      spaceKey: space.key,
      targetKey,
      targetId: resolution.id,
      targetIdentity: resolution.target?.identity ?? resolution.remembered?.identity,
      queuedAt: now,
      askTimeoutMs,
      // Its edge fires by the clock, its timeout from now (records.ts): `brokerReceivedAt` may lead the clock.
      askDueAt: askTimeoutMs === undefined ? undefined : now + askTimeoutMs,
      channel: route?.channel,
      replyError,
      delivery,
      traceparent,
      // A reply passed the stages' checks only along an open edge: the one it closes. (Others: one comparison.)
      answers: attempt.replyKey === undefined ? undefined : this.answering(attempt.replyKey),
      // Its place among messages accepted, for a stamp tie under a reused id (MailDelivery.newestUnder).
      [ACCEPTED]: this.ctx.stamps.accept()
    }
    // P49: exactly one other live holder of the remembered identity takes the mail now.
    const target = resolution.target ?? this.mail.soleHolder(attempt)
    // C-BRK-3: the forwarded frame must fit 1 MiB for any recipient, now or when written later (flushed from
    // the mailbox, staged, given back): the base frame (for a failure reply, the larger of its two forms) with
    // every extension field the mail carries, as a recipient granted them all is written them. None: no tail built.
    const forwarded = replyError === undefined
      ? Encode.messageFrame(sender.infoJson, message, attempt.stamp, attempt.stamp)
      : largestReplyErrorFrame(mail, attempt.stamp)
    const tail = mail.askTimeoutMs === undefined && mail.channel === undefined && mail.delivery === undefined &&
        mail.traceparent === undefined
      ? ""
      : longestTail(mail)
    if (!fitsFrame(forwarded, tail)) {
      const tailBytes = Buffer.byteLength(tail, "utf8")
      return this.answers.fail(peer, message.id, {
        code: DeliveryCode.MessageTooLarge,
        reason: Reason.tooLarge(frameBytes(forwarded) + tailBytes, MAX_FRAME_BYTES, tailBytes, tailFieldNames(mail))
      }, frame.to)
    }
    const journal = this.ctx.journal
    if (target === undefined) {
      // Mail the mailbox cannot keep (its bounds) is refused, not acknowledged, and not recorded: a retry is
      // judged afresh. Stored once it is queued; mail it evicted to make room leaves the store (its sender told).
      const outcome = this.mail.queue(mail)
      if (!outcome.ok) return this.answers.fail(peer, message.id, outcome, frame.to)
      for (let i = 0; i < stages.length; i++) stages[i]!.queued?.(attempt, mail)
      journal?.putMail(mail)
      this.ctx.records.set(recorded, outcome, now)
      this.traffic.routed(sender, message, undefined, resolution.id, resolution.remembered?.name, Routed.queued, now)
      return this.answers.answer(peer, message.id, outcome, undefined, mail.targetKey)
    }
    const threadId = delivery?.threadId
    if (threadId !== undefined && this.staging !== undefined) {
      // Staged for the session that takes it: P49's sole holder has a key of its own, by which the window's
      // close finds it (under the departed one's key it would be dropped as "recipient left").
      const toTarget = target.key === targetKey ? mail : { ...mail, targetKey: target.key }
      const staged = this.staging.stage(attempt, toTarget, target, threadId)
      if ("code" in staged) return this.answers.fail(peer, message.id, staged, frame.to)
      this.traffic.routed(sender, message, target, target.id, target.fields.name, Routed.staged, now)
      journal?.putMail(toTarget)
      // Recorded as staged, so a same-id retry is answered `delivery_queued` too (known issue 19).
      const outcome: Outcome = { ok: true, delivery: "queued", staged: { threadId, deliverAt: staged.deliverAt } }
      this.ctx.records.set(recorded, outcome, now)
      this.answers.answer(peer, message.id, outcome)
      return "staged"
    }
    route?.accepted(attempt, target)
    journal?.putMail(mail)
    // The size check's frame is the base one: written as it is unless this recipient gets more, and then with its
    // fields spliced in after the message (RecipientFrames.liveFrameFor): the message is not encoded again (issue 16);
    // for a recipient granted every field the mail carries, the size check's tail is the one spliced in.
    const text = liveFrameFor(forwarded, mail, target.peer, tail)
    this.handOver(attempt, mail, target, { frame: text, mail, to: target.key, senderSince: sender.presentSince }, false)
    this.traffic.routed(sender, message, target, target.id, target.fields.name, Routed.delivered, now)
    // P49's other holder took it: its record names that receiver (a cancel after a restart finds it so).
    this.ctx.records.set(recorded, target.id === resolution.id ? DELIVERED : deliveredTo(target.id, resolution.id), now)
    if (journal === undefined) return this.answers.answer(peer, message.id, DELIVERED, undefined, mail.targetKey)
    journal.markDelivery(target.peer)
    // Between two clients that confirm what they read (`received-v1`), the acknowledgement waits for
    // the commit with no commit hurried for it, or is released sooner: a plain message or a reply once
    // its recipient has read it, an ask once the reply that closes its edge has been read.
    if (
      route === undefined && peer.custody !== undefined && target.peer.custody !== undefined &&
      delivery === undefined && mail.channel === undefined
    ) {
      const ask = message.expectsReply === true
      journal.holdAckUntilRead(peer, sender.key, message.id, !ask)
      if (message.replyTo !== undefined) journal.answered(targetKey, message.replyTo, sender.key, message.id)
      return DELIVERED
    }
    return this.answers.answer(peer, message.id, DELIVERED, undefined, mail.targetKey)
  }

  /**
   * Queues `item` (`mail`'s frame) for a live `target`, with the stages' hooks
   * around it; `roomChecked`: it fits the outbox now (Output.hasRoom), and is
   * queued as it is, never parked with the batch being handled.
   */
  private handOver(attempt: SendAttempt, mail: Mail, target: Session, item: OutboundMessage, roomChecked: boolean): void {
    const stages = this.stages
    for (let i = 0; i < stages.length; i++) stages[i]!.beforeDelivery?.(attempt, target)
    if (roomChecked) this.ctx.output.forceEnqueue(target.peer, item)
    else this.ctx.output.enqueue(target.peer, item)
    for (let i = 0; i < stages.length; i++) stages[i]!.delivered?.(attempt, mail, target)
  }

  /** Whether a send stage says a staged `attempt`'s `supersedes` names a message settled meanwhile (it goes without). */
  private supersedesSettled(attempt: SendAttempt): boolean {
    if (attempt.message.supersedes === undefined) return false
    const stages = this.stages
    for (let i = 0; i < stages.length; i++) {
      if (stages[i]!.supersedesSettled?.(attempt) === true) return true
    }
    return false
  }

  /** The first send stage that refuses `attempt` (in the stages' order, P45's precedence), if any. */
  private refusal(attempt: SendAttempt): Refusal | undefined {
    // Indexed: `for…of` makes an iterator per loop until optimised.
    const stages = this.stages
    for (let i = 0; i < stages.length; i++) {
      const refusal = stages[i]!.check?.(attempt)
      if (refusal !== undefined) return refusal
    }
    return undefined
  }

  /**
   * A staged `replace` message whose window closed, for its recipient (live
   * as `target`): after a send's sweep (`prune`: ask edges past their
   * deadline close first), checked again by the send stages as of now (refused, its
   * sender gets an `expired` receipt saying why), then delivered like any
   * live send, and from now on out of reach of replacement (C-DLV-7). True
   * when it was taken (delivered or refused); false when the recipient's
   * outbox has no room for it now: it stays staged (ReplaceStaging.roomFor),
   * since no reader's batch is there to park it with. With `leaving` (its
   * sender leaves) inside a batch — the sender's own `unregister` — it is
   * queued with that batch, parked if need be, so that its sender's
   * departure waits for it (WithheldDepartures.ts's `held`).
   */
  deliverStaged(staged: Staged, target: Session, leaving: boolean): boolean {
    const now = this.ctx.now()
    // First the sweep a send runs (`prune`): an ask past its deadline is over, its edge closed and its asker
    // told, before anything is checked against it. Once per millisecond: a flush of many costs one.
    this.prune(now)
    // The rules of the send stages hold at delivery, not only when it was staged: an ask answered or
    // withdrawn meanwhile takes no second reply, and a reverse ask opened meanwhile makes this one mutual.
    // Stamped again: a control it sends now (a supersede) is stamped as sent now, never below a stamp given before
    // (review revbq bq4); its message keeps the `brokerReceivedAt` it was staged with.
    const attempt: SendAttempt = { ...staged.attempt, target, now, stamp: this.ctx.stamps.at(now), staged: true }
    const refusal = this.refusal(attempt)
    if (refusal !== undefined) {
      this.staging?.refuseDue(staged, target.infoJson, refusal)
      this.traffic.refused(attempt.sender, target.id, staged.mail.message.id, refusal.code, refusal.reason, now)
      return true
    }
    const output = this.ctx.output
    const mail = this.supersedesSettled(attempt) ? withoutSupersedes(staged.mail) : staged.mail
    const item: OutboundMessage = {
      frame: messageFrameFor(mail, target.peer, attempt.stamp),
      mail,
      to: target.key,
      // The incarnation that staged it, gone or not (Rejoins.ts).
      senderSince: staged.attempt.sender.presentSince
    }
    const inSendersBatch = leaving && output.inBatch
    if (!inSendersBatch && !output.hasRoom(target.peer, item)) return false
    // The staged attempt (its hooks read when it was sent), with this stamp for the controls sent now.
    this.handOver({ ...staged.attempt, stamp: attempt.stamp }, mail, target, item, !inSendersBatch)
    this.traffic.routed(staged.attempt.sender, staged.mail.message, target, target.id, target.fields.name, Routed.delivered, now)
    // Only its own record (the staged mail as sent, so the fingerprint is its record's even when `mail` went without
    // its settled `supersedes`): found by sender and id it may be a later send's under the id (task flushrw).
    const sent = staged.mail
    this.ctx.records.rewrite(sent.senderKey, sent.message.id, deliveredTo(target.id, sent.targetId), undefined, sent.targetKey, () => fingerprintOfMail(sent))
    this.ctx.journal?.markDelivery(target.peer)
    return true
  }

  /**
   * A reply whose target is not in the sender's namespace, but which a stage
   * lets through to a session elsewhere (undefined: resolve as usual).
   */
  private rerouted(sender: Session, to: string, message: Message, now: number): Resolution | undefined {
    if (message.replyTo === undefined) return undefined
    for (const reroute of this.reroutes) {
      const target = reroute(sender, to, message, now)
      if (target !== undefined) return { target, remembered: undefined, id: target.id }
    }
    return undefined
  }

  /** Adds a clean-up to run before each send. */
  onPrune(prune: (now: number) => void): void {
    this.prunes.push(prune)
  }

  /**
   * Runs the clean-ups (`onPrune`) at `now`: before each send, and from the
   * idle watcher when no send comes (Router.prune). At most once per
   * millisecond: within one, nothing more can have expired.
   */
  prune(now: number): void {
    if (now === this.prunedAt) return
    this.prunedAt = now
    const prunes = this.prunes
    for (let i = 0; i < prunes.length; i++) prunes[i]!(now)
  }
}

/** `mail` with its message naming no superseded message (a staged one whose target was settled meanwhile). */
const withoutSupersedes = (mail: Mail): Mail => {
  const { supersedes: _settled, ...message } = mail.message
  return { ...mail, message }
}

/** `value` when it is a valid traceparent (forwarded as it came), else undefined (ignored). */
const parseTraceparentOrUndefined = (value: unknown): string | undefined =>
  typeof value === "string" && parseTraceparent(value) !== undefined ? value : undefined
