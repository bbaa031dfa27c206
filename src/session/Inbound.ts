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
 *   decided when the host is about to get it (`InboundIntent.ts`; a busy
 *   headless host that exits when done answers an ask it cannot take there,
 *   C-DLV-13). Receipts go back to the sender (P70).
 * - Membership: a peer leaving, and a reconnect, are `Departures.ts`'s
 *   (`runDepartures`, started here).
 * - Controls: a sender cancelling or superseding a message, or a message
 *   whose `supersedes` names an earlier one, withdraws it (P73), and the
 *   broker's receipts and `reply-elsewhere-v1` notices end this session's
 *   own waits: the control fiber's
 *   rules are `InboundControls.ts`'s (`makeInboundControls`, started here;
 *   the message fiber calls its `supersededBy`).
 *
 * With a host journal that saves (`InboundJournal.ts`; one with only
 * `handled` saves nothing), an accepted message is
 * checkpointed before the host gets it, undelivered ones are handed over
 * again when the generation starts (and the ones history holds are
 * remembered as handled, so the broker's copy of one is dropped:
 * `InboundRestore.ts`, run here before the fibers start), and steered or
 * follow-up ones the agent never saw are handed over again when its run
 * settles (C-DLV-14, C-DLV-16). An actionable message makes a lazily exposed
 * tool visible before the host gets it (C-TOOL-15, `InboundIntent.ts`).
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
 * The modules beside it hold the rest of the inbound handling: the hand-off
 * queue (HostHandoff.ts), the de-duplication window (InboundAdmission.ts),
 * the journal's rules (InboundJournal.ts) and what a generation restores from
 * them (InboundRestore.ts), the intent (InboundIntent.ts), the control rules
 * (InboundControls.ts), departures (Departures.ts) and the read-time route
 * (ReplyAtRead.ts). What stays here is the wiring of the three streams and
 * the message fiber's admission, whose state (`unsaved`, `keptNow`,
 * `admitting`) only it and the hand-off's `taken` write (`admitting` is
 * also read through the callback handed to `runReplyAtRead`).
 */
import { Cause, Clock, Effect, type Scope, Stream, type Tracer } from "effect"
import type { InboundMessage } from "../client/events.ts"
import type { MessageControl, ReceiptStatus } from "../protocol/frames.ts"
import type { Generation } from "./Generation.ts"
import { runDepartures } from "./Departures.ts"
import { makeHostHandoff } from "./HostHandoff.ts"
import { makeInboundAdmission } from "./InboundAdmission.ts"
import { makeInboundControls } from "./InboundControls.ts"
import { makeInboundIntents } from "./InboundIntent.ts"
import { restoreInbound } from "./InboundRestore.ts"
import { type Admission, receiving } from "./InboundTracing.ts"
import { UnreadWithdrawals } from "./UnreadWithdrawals.ts"
import { makeJournalKeeper } from "./InboundJournal.ts"
import { runReplyAtRead } from "./ReplyAtRead.ts"
import { replyErrorText } from "../protocol/replyError.ts"
import type { LifecycleStatus } from "./render.ts"
import type { InboundContext } from "./ReplyTracker.ts"
import type { ToolExposure } from "./ToolExposure.ts"

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
    const { client, host, settings, slot, tracker } = generation
    const admission = makeInboundAdmission(settings.inboundDedupe)
    const journal = makeJournalKeeper(host.journal)
    /** Withdrawals made here with no control read behind them (restored withdrawn, or by a `supersedes`). */
    const unreadWithdrawals = new UnreadWithdrawals()
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

    const intents = makeInboundIntents(generation, lifecycle, exposure)

    const handoff = yield* makeHostHandoff(host.deliver, {
      prepare: intents.prepare,
      taken: (context) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => {
          const { from, message } = context
          // Both wait in the host's queue until the run reaches them, where Esc can clear them (C-DLV-16).
          const intent = intents.intentOf(context)
          journal.taken(context, intent === "steer" || intent === "followUp")
          intents.forget(context)
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

    const controls = makeInboundControls({ generation, handoff, admission, journal, unreadWithdrawals, receipt })

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
        if (message.supersedes !== undefined) yield* controls.supersededBy(context, message.supersedes)
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

    yield* restoreInbound({ admission, journal, unreadWithdrawals, handOver, receipt })

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

    yield* controls.run

    return {
      settled: Effect.flatMap(
        journal.cleared,
        (again) => Effect.forEach(again, ({ context, withdrawn }) => handOver(context, withdrawn), { discard: true })
      )
    }
  })
