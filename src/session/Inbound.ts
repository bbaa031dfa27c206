/**
 * Inbound handling: everything the broker pushes to this session.
 *
 * - Messages (the single consumer of `IntercomClient.messages`): de-duplicated
 *   by (sender id, message id) (C-DLV-11), a reply to the live ask resolves
 *   its waiter before anything else (C-ORD-32) — as the client reads it
 *   (`IntercomClient.takeOnRead`), not behind the checkpoints of the messages
 *   read before it; one read before its waiter was bound as the waiter is
 *   bound (`ReplyWaiterSlot.onBound`), if the message fiber has not reached
 *   it yet — the rest is recorded with the
 *   reply tracker and queued for the host (`HostHandoff.ts`, which retries a
 *   refused hand-off, C-DLV-12), with an intent (trigger / steer / passive)
 *   decided when the host is about to get it. A busy headless host that exits
 *   when done answers an ask it cannot take (C-DLV-13). Receipts go back to
 *   the sender (P70).
 * - Membership: a peer leaving, and a reconnect, are `Departures.ts`'s
 *   (`runDepartures`, started here).
 * - Controls: a sender cancelling or superseding a message drops its pending
 *   ask (P73); one the host has not taken yet — or not yet received: the
 *   controls are another stream — is handed over passive, marked withdrawn
 *   (`prepare`), starting no turn, its ask closed as soon as it is recorded.
 *   The hand-off keeps the withdrawal of a waiting message, the journal saves
 *   it (so a later generation restoring the message hands it over withdrawn
 *   too), and the client's own record of the controls it read (`IntercomClient.
 *   withdrawal`) covers a message not received here yet, or handled by an
 *   earlier generation of the same client — and forgets a control once a new
 *   message under its id is read, which a record kept here did not (review
 *   revax AX-B1). This fiber acts on every control it reads, also one that
 *   record has forgotten by the time it gets there (review revbf BF1: it
 *   forgets by count and age too, and a withdrawn message waiting in the
 *   hand-off was handed over live). A control of an earlier message than
 *   one under the same id — the client read the newer one after it (the
 *   control's read number, `read`, lower than the message's: `readSince`),
 *   or, for a message with no read number (restored from the journal), the
 *   broker received the newer one after it stamped the control (its
 *   `timestamp` before the message's `brokerReceivedAt`; read numbers, when
 *   both are known, decide alone: review revbm BM1) — withdraws nothing of the newer
 *   one, whether it waits in the hand-off, was taken, or is still to come,
 *   and answers nothing under the id: a fiber lagging behind an old
 *   message's control, or an old control given again after a restart,
 *   leaves a new message under the reused id live (reviews revbb BB2,
 *   revbi BI2). The earlier message's ask, if the host took it, is closed
 *   all the same (review revbi BI1); the host's journal, which knows a
 *   message by (sender, id) only, saves nothing, but may mark it in its
 *   agent's queue (`JournalKeeper.withdrawnEarlier`).
 *   With neither mark the control withdraws the message, as before. A message
 *   whose `supersedes` names one still waiting in the hand-off, or one the host
 *   took that this session handled (the admission window knows it), withdraws
 *   it as its control would, when the client read no such control
 *   (`supersededBy`): a message restored from the journal may never get its
 *   control (helper sim7022, task supkeep). Such withdrawals, and the ones the
 *   journal restores, are noted (UnreadWithdrawals.ts) so that neither a later
 *   control nor a second `supersedes` tells the host or the sender again.
 *
 * With a host journal that saves (`InboundJournal.ts`; one with only
 * `handled` saves nothing), an accepted message is
 * checkpointed before the host gets it, undelivered ones are handed over
 * again when the generation starts (and the ones history holds are
 * remembered as handled, so the broker's copy of one is dropped), and steered or follow-up ones the agent never saw are
 * handed over again when its run settles (C-DLV-14, C-DLV-16). An actionable
 * message makes a lazily exposed tool visible before the host gets it (C-TOOL-15).
 *
 * Each stream is drained by one fiber in the generation's Scope. The
 * de-duplication window is owned by this module: the message fiber holds a
 * message on arrival, the hand-off commits it once the host took it.
 *
 * A message leaves the client (`IntercomClient.handled`) only once it was
 * admitted, in the same uninterruptible step: a generation that closes while
 * the message fiber is in the middle of one leaves it, and the messages read
 * after it, to the next generation (known issue 15), and one it already
 * handed on is not handed on again. A message nothing saved (no journal, or
 * its checkpoint failed) leaves only once the host took it: until then the
 * client keeps it (`IntercomClient.keep`) and does not confirm it, so a
 * generation that ends before its host took it — a pi session closing under
 * it — leaves it to the next one or to the broker instead of losing it.
 * While such a message is kept, the ones read after it are not checkpointed
 * either (they are kept too), so the journal never restores a message ahead
 * of an earlier one the client still keeps: the next generation gets them in
 * the order they were read.
 *
 * A reply taken as it is read is the ask's from then on: it never reaches
 * `messages`, so neither this generation's message fiber nor a later
 * generation hands it to a host. Its receipts (`receiver_received`, then
 * `acknowledged` "matched reply waiter"), the activity it counts and its
 * receive span follow on a fiber of their own; should the generation close
 * before that fiber got to it, its receipts are posted as the Scope closes.
 * A reply read before its waiter was bound waits in the client behind the
 * messages read before it; binding the waiter takes it there (the client's
 * look-back, the same `takeAtRead`), unless the message fiber is at it
 * already (it routes it itself — also when the wait bound during its
 * checkpoint and that saved nothing — or hands it to the host), and it goes
 * on as one taken as it is read — then leaves the client as handled. That
 * read-time route is ReplyAtRead.ts's; this module tells it which message
 * the message fiber is admitting.
 *
 * Size note: about 580 lines, one concept (a generation's inbound handling); the
 * hand-off queue, admission, journal rules, departures and the read-time
 * route are their own modules already; what is left is the wiring of the
 * three streams and the rules that tie them (controls against the messages
 * they are about, restore).
 */
import { Cause, Clock, Effect, type Scope, Stream, type Tracer } from "effect"
import type { DeliveryMode } from "../protocol/deliveryModes.ts"
import type { InboundMessage } from "../client/events.ts"
import type { Message, MessageControl, ReceiptStatus } from "../protocol/frames.ts"
import { AskAnsweredElsewhere, AskExpired, AskSuperseded } from "./errors.ts"
import type { Generation } from "./Generation.ts"
import type { DeliveryIntent, Inbound } from "./Host.ts"
import { runDepartures } from "./Departures.ts"
import { makeHostHandoff } from "./HostHandoff.ts"
import { makeInboundAdmission } from "./InboundAdmission.ts"
import { type Admission, receiving } from "./InboundTracing.ts"
import { UnreadWithdrawals } from "./UnreadWithdrawals.ts"
import { makeJournalKeeper } from "./InboundJournal.ts"
import { runReplyAtRead } from "./ReplyAtRead.ts"
import { replyErrorText } from "../protocol/replyError.ts"
import { type LifecycleStatus, NON_INTERACTIVE_BUSY_REPLY, renderInbound } from "./render.ts"
import type { InboundContext } from "./ReplyTracker.ts"
import { newMessage } from "./Sending.ts"
import type { ToolExposure } from "./ToolExposure.ts"

const isBusy = (status: LifecycleStatus): boolean => status !== "idle"

/**
 * The running inbound handling of a generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundHandling {
  /** The agent's run settled: steered and follow-up messages it never saw are handed over again (C-DLV-16). */
  readonly settled: Effect.Effect<void>
}

/**
 * The intent of a message the session may hand over (C-DLV-1): passive
 * never wakes the model; an idle agent starts a turn; a busy one is steered
 * (steer) or gets it as a follow-up after its current work (queue).
 *
 * @category delivery
 * @since 0.1.0
 */
export const intentFor = (
  delivery: DeliveryMode | undefined,
  triggers: boolean,
  busy: boolean
): DeliveryIntent =>
  !triggers || delivery === "passive" ? "passive" : !busy ? "trigger" : delivery === "queue" ? "followUp" : "steer"

/**
 * Starts the inbound fibers of a generation in the current Scope (the
 * generation's). `lifecycle` reads the host's current status, which decides
 * between `trigger` and `steer`.
 *
 * @category constructors
 * @since 0.1.0
 */
export const runInbound = (
  generation: Generation,
  lifecycle: () => LifecycleStatus,
  exposure: ToolExposure
): Effect.Effect<InboundHandling, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { background, client, host, settings, slot, tracker } = generation
    const admission = makeInboundAdmission(settings.inboundDedupe)
    const journal = makeJournalKeeper(host.journal)
    /** Withdrawals made here with no control read behind them (restored withdrawn, or by a `supersedes`). */
    const unreadWithdrawals = new UnreadWithdrawals()
    /** The intent each message was prepared with, until the host took it. */
    const intents = new WeakMap<InboundContext, DeliveryIntent>()
    /**
     * Messages handed over that nothing saved (no journal, or its checkpoint
     * failed): the client keeps them unconfirmed until the host took them
     * (`taken`), so a generation that ends first leaves them to the broker
     * or the next generation instead of losing them.
     */
    const unsaved = new Map<InboundContext, InboundMessage>()
    /** The message `admit` just kept (`unsaved`) and queued for the host: its handling must not call it handled. Read by `handleInbound`. */
    let keptNow: InboundMessage | undefined
    /**
     * The message the message fiber is admitting, until its handling ends: one past the waiter's check (routed to
     * no waiter) and in its checkpoint is not held yet, so `takeAtRead` asks this to leave a copy of it to the fiber.
     */
    let admitting: InboundMessage | undefined

    // Queued on the connection, never waited for (the client writes the receipts of a turn together).
    const receipt = (messageId: string, status: ReceiptStatus, detail?: string): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (timestamp) =>
        client.receipt({ messageId, status, timestamp, ...(detail === undefined ? {} : { detail }) }))

    const duplicateReceipt = (messageId: string) =>
      receipt(messageId, "acknowledged", "duplicate message id suppressed")

    /** C-ORD-32: what follows a reply the live waiter took (C-HLT-3: a receive is intercom activity). */
    const answeredWaiter = (messageId: string) =>
      Effect.andThen(generation.noteActivity, receipt(messageId, "acknowledged", "matched reply waiter"))

    const shouldTrigger = (message: Message): boolean =>
      settings.inboundTrigger === "always" || (settings.inboundTrigger === "replies" && message.replyTo !== undefined)

    /** C-DLV-13 / open question 11: a busy headless session that will exit answers an ask it cannot take. */
    const answerBusy = (context: InboundContext): Effect.Effect<void> =>
      Effect.gen(function*() {
        const message = yield* newMessage(NON_INTERACTIVE_BUSY_REPLY, undefined, { replyTo: context.message.id })
        yield* background(
          client.send({ to: context.from.id, message }).pipe(
            Effect.tap(() => Effect.andThen(Effect.sync(() => tracker.markReplied(context.from.id, context.message.id)), generation.pendingChanged))
          )
        )
      })

    /**
     * How the host gets a message, decided when it is about to be handed over
     * (C-DLV-1): `trigger` when idle (steer or queue), `steer` when busy and
     * the sender chose steer, `followUp` when busy and it chose queue,
     * `passive` when the sender chose passive, `inboundTrigger` says no, or a
     * busy headless host already answered the ask.
     */
    const prepare = (context: InboundContext, withdrawn: MessageControl["action"] | undefined): Effect.Effect<Inbound> =>
      Effect.gen(function*() {
        const { from, message } = context
        const expectsReply = message.expectsReply === true
        const busy = isBusy(lifecycle())
        let intent: DeliveryIntent
        if (withdrawn !== undefined) {
          // P73: withdrawn before the host took it — shown and stored, marked so, but no turn acts on it (the
          // turn an earlier preparation queued it for will not come). Its ask was closed when the withdrawal
          // came, or when it was recorded (`handOver`).
          tracker.unqueueTurn(from.id, message.id)
          intent = "passive"
        } else if (!host.hasUI && host.exitsWhenDone === true && busy && expectsReply && message.replyTo === undefined) {
          yield* answerBusy(context)
          intent = "passive"
        } else {
          intent = intentFor(context.delivery, shouldTrigger(message), busy)
        }
        if (intent !== "passive") yield* exposure.expose
        // After the host's exposeTool: a prepare that died there is run again, and must not queue the turn twice.
        if (intent === "trigger" || intent === "followUp") tracker.queueTurn(context)
        intents.set(context, intent)
        return {
          intent,
          from,
          message,
          text: renderInbound(from, message, settings.replyHint, withdrawn),
          expectsReply,
          delivery: context.delivery ?? "steer",
          ...(context.channel === undefined ? {} : { channel: context.channel }),
          ...(context.read === undefined ? {} : { read: context.read })
        }
      })

    const handoff = yield* makeHostHandoff(host.deliver, {
      prepare,
      taken: (context) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const { from, message } = context
          // Both wait in the host's queue until the run reaches them, where Esc can clear them (C-DLV-16).
          const intent = intents.get(context)
          journal.taken(context, intent === "steer" || intent === "followUp")
          intents.delete(context)
          const kept = unsaved.get(context)
          unsaved.delete(context)
          // Remembered from now, not from its receive time: a message restored after a long downtime was
          // received hours ago, and the broker's copy of it may still come (it keeps mail for a day).
          const joined = admission.commit(from.id, message.id, now)
          return Effect.andThen(
            receipt(message.id, "acknowledged", "accepted by receiver"),
            Effect.andThen(
              Effect.replicateEffect(duplicateReceipt(message.id), joined, { discard: true }),
              kept === undefined ? Effect.void : client.handled(kept)
            )
          )
        })
    })

    /**
     * Admits one inbound message; `trace` is its receive span when it is traced (InboundTracing.ts).
     * Runs uninterruptibly but for the checkpoint (`interruptible`), the only step that may wait.
     */
    const admit = (
      inbound: InboundMessage,
      trace: Tracer.AnySpan | undefined,
      interruptible: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
    ): Effect.Effect<Admission> =>
      Effect.gen(function*() {
        const { from, message } = inbound
        const now = yield* Clock.currentTimeMillis
        if (admission.seen(from.id, message.id, now)) {
          yield* duplicateReceipt(message.id)
          return "duplicate"
        }
        // A redelivery of a message still being handed over joins it; it is answered once that one was taken.
        if (admission.join(from.id, message.id)) return "joined"
        yield* receipt(message.id, "receiver_received")
        // C-ORD-32: a reply to the live waiter resolves it before any other handling. One the client read while
        // the waiter was live was taken then (`takeAtRead`), one read before its waiter was bound as it was bound
        // (the look-back, unless this fiber was at it already); this one was at this fiber when its waiter was bound.
        if (slot.route(inbound)) {
          admission.commit(from.id, message.id, now)
          yield* answeredWaiter(message.id)
          return "reply_waiter"
        }
        // A new message under its key: a withdrawal made here of an earlier one is not this one's.
        unreadWithdrawals.forget(from.id, message.id)
        const context: InboundContext = {
          from,
          // A failure reply no wait took (an ask made below the session, or a late one): its text says
          // it is an error, as a base asker would see it, so the failure is not mistaken for an answer.
          message: inbound.replyError === undefined ? message : {
            ...message,
            content: { ...message.content, text: replyErrorText(inbound.replyError, message.content.text) }
          },
          receivedAt: now,
          askTimeoutMs: inbound.askTimeoutMs,
          channel: inbound.channel,
          delivery: inbound.delivery?.delivery,
          trace,
          read: inbound.read
        }
        // C-DLV-14: saved before the host can lose it; if nothing saved it, the client keeps it until the host has it.
        // Not saved either while an earlier message is kept unsaved: a journal that held this one would hand it
        // to the next generation before that earlier one, which the client or the broker gives it afterwards.
        const saved = unsaved.size === 0 && (yield* interruptible(journal.checkpoint(context)))
        // A reply whose waiter was bound during the checkpoint (the binding's look-back leaves this fiber's message
        // to it): nothing saved, it answers the wait, as one reached after the bind. A saved one stays the host's:
        // the journal would hand it over again in a later generation (docs/client.md, Streams).
        if (!saved && message.replyTo !== undefined) {
          const at = yield* Clock.currentTimeMillis
          if (slot.route(inbound, () => admission.commit(from.id, message.id, at))) {
            yield* answeredWaiter(message.id)
            return "reply_waiter"
          }
        }
        if (!saved) unsaved.set(context, inbound)
        if (message.supersedes !== undefined) yield* supersededBy(context, message.supersedes)
        yield* handOver(context)
        // Its sender had left already (read after its departure: parked output, or a broker that reorders):
        // no one waits for an answer (C-RPL-10).
        if (inbound.senderLeft === true) tracker.forgetSender(from.id)
        // Kept only once recorded: keeping it lets a departure waiting for `caughtUp` act (C-RPL-10).
        // A host that took it already has had it handled, which a later `keep` leaves alone.
        if (!saved) yield* client.keep(inbound)
        // Only once it is queued for the host, whose `taken` will say it was handled: a hand-over that
        // died before leaves it to `handleInbound`, which marks it handled as it would any failed one.
        if (!saved) keptNow = inbound
        // C-HLT-3: a receive is intercom activity, and an ask adds to the pending count: health is republished.
        yield* generation.noteActivity
        return "queued"
      })

    /**
     * Known issue 15: the message leaves the client (`handled`) in the same uninterruptible step as
     * its admission, so a generation closing meanwhile either leaves it to the next generation
     * (interrupted in the checkpoint, before anything was decided) or has handed it on (never both).
     */
    const handleInbound = (inbound: InboundMessage): Effect.Effect<void> =>
      Effect.uninterruptibleMask((interruptible) =>
        receiving(inbound, (trace) => {
          admitting = inbound
          return Effect.ensuring(admit(inbound, trace, interruptible), Effect.sync(() => {
            admitting = undefined
          }))
        }).pipe(
          Effect.catchCauseIf((cause) => !Cause.hasInterruptsOnly(cause), Effect.logError),
          Effect.andThen(Effect.suspend(() => {
            if (keptNow !== inbound) return client.handled(inbound)
            keptNow = undefined
            return Effect.void
          }))
        )
      )

    /**
     * Pending at once (C-RPL-1), and for as long as the hand-off is retried — unless its sender withdrew it
     * already (`known`: the journal says so; or a control read before it, the client's record):
     * then its ask is closed
     * at once, not when the hand-off reaches it behind a message the host refuses, and it waits withdrawn.
     */
    const handOver = (context: InboundContext, known?: MessageControl["action"]): Effect.Effect<void> =>
      Effect.gen(function*() {
        const { from, message } = context
        tracker.record(context)
        admission.hold(from.id, message.id)
        // The client records each control as it reads it (`IntercomClient.withdrawal`): one this generation's
        // control fiber handled before the message reached it (the streams are two) or has not handled yet, or one
        // an earlier generation of this client handled (the message kept by the client for this one, its host
        // having refused it until that one ended) — not one of an earlier message under this id (AX-B1), read
        // before this one (the client forgets it then) or stamped by the broker before it received this one (a
        // message restored from the journal, which the client never read: review revbi BI2). A message the client
        // read is judged by that alone, its receive stamp not passed: the broker's clock may step back and stamp
        // the message's own cancel before it (review revbm BM1).
        const fresh = known === undefined
          ? yield* client.withdrawal(from.id, message.id, context.read === undefined ? message.brokerReceivedAt : undefined)
          : undefined
        const withdrawn = known ?? fresh
        if (withdrawn === undefined) return yield* handoff.enqueue(context)
        if (message.expectsReply === true) {
          tracker.askWithdrawn(from.id, message.id)
          yield* generation.pendingChanged
        }
        // Read before the message was checkpointed: saved now, for a generation that restores it. pi's journal
        // applies a withdrawal only to checkpoints saved before it (src/pi/journal.ts `scan`), so this save, after
        // the checkpoint, is the one that counts (test/session/controlFirstRestore).
        if (fresh !== undefined) yield* journal.withdrawn(from.id, message.id, fresh, true, undefined)
        yield* handoff.enqueue(context, withdrawn)
      })

    /**
     * P73 from the message itself: `context` names `replaced` in `supersedes`, and the client read no control for
     * it (the broker sends that control first, and the control fiber acts on it). The message under that id is
     * withdrawn as the control would withdraw it — the control may never come: a message restored from the
     * journal was read by a process that ended before it confirmed it, and the broker keeps the control only for
     * that process's client instance, or drops it with the copy it did not queue again (helper sim7022). Still
     * waiting in the hand-off, it is handed over withdrawn; taken by the host already (restored and taken as the
     * generation started, or held by the agent's history: the admission window knows it), its ask is closed and
     * the journal told (`waiting` false), as for a control about a taken message (task supkeep) — but not one
     * this session never handled: nothing says it was read here. Judged with the superseding message's read
     * number and broker stamp, which the control would carry, so a newer message under the id is left live.
     * Once only: a withdrawal made here, restored, or held by the agent's history, is noted (`unreadWithdrawals`).
     */
    const supersededBy = (context: InboundContext, replaced: string): Effect.Effect<void> =>
      Effect.gen(function*() {
        const { from, message, read } = context
        // Read first: from the record's check to its note nothing yields, so the control fiber cannot act between (bt4).
        const now = yield* Clock.currentTimeMillis
        if ((yield* client.withdrawal(from.id, replaced)) !== undefined) return
        if (unreadWithdrawals.get(from.id, replaced) !== undefined) return
        const controlAt = message.brokerReceivedAt
        const { already, prepared, waiting } = handoff.withdraw(from.id, replaced, "supersede", read, controlAt)
        if (already !== undefined) return
        if (
          !waiting && (!admission.seen(from.id, replaced, now) || tracker.recordedSince(from.id, replaced, read, controlAt))
        ) return
        unreadWithdrawals.note(from.id, replaced, "supersede", true)
        tracker.askWithdrawn(from.id, replaced, read, controlAt)
        yield* journal.withdrawn(from.id, replaced, "supersede", waiting, prepared)
        yield* generation.pendingChanged
        yield* receipt(replaced, "superseded")
      })

    // What the agent's history holds already: a copy the broker sends again is a duplicate (known issue 6).
    // Remembered before anything is handed over, so no commit of this generation comes before them in the
    // window's order (where the capacity bound would forget it first).
    const started = yield* Clock.currentTimeMillis
    for (const held of yield* journal.handled) {
      admission.remember(held.fromId, held.messageId, held.receivedAt ?? started, started)
      // Withdrawn in an earlier process, which saved it: told no second time (review revbt bt1).
      if (held.withdrawn !== undefined) unreadWithdrawals.note(held.fromId, held.messageId, held.withdrawn, false)
    }
    // C-DLV-14: what an earlier generation or process accepted and the agent never saw comes first.
    const restored = yield* journal.restore
    // One a later restored message of its sender supersedes — both checkpointed, the control never saved, both
    // confirmed, so the broker gives nothing again — is handed over withdrawn, as the control would have had it
    // (review revbp BP4); its sender is told, as the control fiber would have after the save it never made.
    const supersededLater = new Set<string>()
    const superseded: Array<boolean> = []
    for (let i = restored.length - 1; i >= 0; i--) {
      const { context } = restored[i]!
      superseded[i] = supersededLater.has(`${context.from.id}\u0000${context.message.id}`)
      const named = context.message.supersedes
      if (named !== undefined) supersededLater.add(`${context.from.id}\u0000${named}`)
    }
    for (let i = 0; i < restored.length; i++) {
      const { context, withdrawn } = restored[i]!
      if (withdrawn !== undefined) unreadWithdrawals.note(context.from.id, context.message.id, withdrawn, false)
      if (withdrawn !== undefined || superseded[i] !== true) {
        yield* handOver(context, withdrawn)
        continue
      }
      unreadWithdrawals.note(context.from.id, context.message.id, "supersede", true)
      yield* handOver(context, "supersede")
      yield* journal.withdrawn(context.from.id, context.message.id, "supersede", true, undefined)
      yield* receipt(context.message.id, "superseded")
    }

    // C-ORD-32: a reply to the live waiter resolves it as the client reads it, ahead of the messages read before it.
    yield* runReplyAtRead({
      client,
      slot,
      admission,
      admitting: (fromId, messageId) =>
        admitting !== undefined && admitting.from.id === fromId && admitting.message.id === messageId,
      receipt,
      answeredWaiter
    })

    yield* Effect.forkScoped(
      client.messages.pipe(Stream.runForEach(handleInbound)),
      { startImmediately: true }
    )

    yield* runDepartures(generation)

    yield* Effect.forkScoped(
      client.controls.pipe(
        Stream.runForEach((event) => {
          if (event._tag === "Receipt") {
            // The broker dropped a question still waited on (C-DLV-9), or a later message of the same replace
            // thread took its place before delivery: no reply can come, so the wait ends now, with its reason.
            const { detail, messageId, status } = event.receipt
            if (status === "expired") {
              slot.expired(messageId, new AskExpired({ questionId: messageId, reason: detail ?? "it expired" }))
            } else if (status === "superseded") {
              slot.expired(messageId, new AskSuperseded({ questionId: messageId, reason: detail ?? "a later message replaced it" }))
              // A staged answer of this session replaced before delivery: the ask it answered is owed again.
              if (tracker.replyDropped(messageId)) return generation.pendingChanged
              return Effect.void
            }
            tracker.replySettled(messageId)
            return Effect.void
          }
          // `reply-elsewhere-v1`: a question was answered, its reply handed to another instance of this session (told
          // at registration, or behind a resend); none will come here, so the wait ends now rather than at its timeout.
          if (event._tag === "AnsweredElsewhere") {
            const waiter = slot.current()
            if (waiter === undefined || waiter.questionId !== event.messageId) return Effect.void
            const target = waiter.targetName ?? waiter.targetId ?? "the asked session"
            slot.expired(event.messageId, new AskAnsweredElsewhere({ questionId: event.messageId, replyId: event.replyId, target }))
            return Effect.void
          }
          if (event._tag !== "Control") return Effect.void
          // P73: the sender withdrew or replaced a message. Its ask is closed, not answered: the turn it triggered
          // keeps it, and a reply there is refused as withdrawn rather than taken as the answer to another ask.
          const { from, read } = event
          const { action, messageId, timestamp } = event.control
          return Effect.gen(function*() {
            // Not taken by the host yet: it keeps the withdrawal, and is prepared again before its next attempt.
            // Not received yet: the client's record of the control (`withdrawal`) tells `handOver` when it comes.
            // A newer message under the same id — read by the client after the control (review revbb BB2), or
            // received by the broker after it stamped the control (restored, review revbi BI2) — is left live.
            const { already, prepared, waiting } = handoff.withdraw(from.id, messageId, action, read, timestamp)
            if (already !== undefined) return
            // Taken by the host withdrawn already, with no control read for it (restored so, or by a `supersedes`):
            // this control is that withdrawal's, told once (task supkeep) — its sender answered now if an earlier
            // process saved it and may have ended before it answered (review revbt bt2).
            if (!waiting && unreadWithdrawals.get(from.id, messageId) !== undefined) {
              const owed = unreadWithdrawals.answer(from.id, messageId)
              if (owed !== undefined) yield* receipt(messageId, owed === "cancel" ? "cancellation_requested" : "superseded")
              return
            }
            // A message under this id read by the client after the control (this fiber lagged behind), or recorded
            // here and received by the broker after the control: the control is an earlier one's, and that earlier
            // one is not waiting here. Asked only then, so the client's record forgetting the control by count or
            // age never skips one (review revbf BF1).
            if (
              !waiting && (
                tracker.recordedSince(from.id, messageId, read, timestamp) ||
                (read !== undefined && (yield* client.readSince(from.id, messageId, read)))
              )
            ) {
              // Its ask, if the host took it, is closed all the same, and a steered copy Esc clears is handed over
              // again withdrawn; a newer ask under the id stays open (review revbi BI1). The host's journal saves
              // nothing and the sender is told nothing: the journal knows a message by (sender, id) only, and would
              // mark the newer message withdrawn too; the host may mark the old one still in its agent's queue.
              tracker.askWithdrawn(from.id, messageId, read, timestamp)
              journal.withdrawnEarlier(from.id, messageId, action, read, timestamp)
              return yield* generation.pendingChanged
            }
            tracker.askWithdrawn(from.id, messageId, read, timestamp)
            // Saved for a later generation that hands it over again (restored, or cleared from a busy agent's queue).
            yield* journal.withdrawn(from.id, messageId, action, waiting, prepared)
            yield* generation.pendingChanged
            yield* receipt(messageId, action === "cancel" ? "cancellation_requested" : "superseded")
          })
        })
      ),
      { startImmediately: true }
    )

    return {
      settled: Effect.flatMap(
        journal.cleared,
        (again) => Effect.forEach(again, ({ context, withdrawn }) => handOver(context, withdrawn), { discard: true })
      )
    }
  })
