/**
 * The ledger's public vocabulary: the kinds of violation, the violation
 * itself, how a session is named, and the tallies a run reports. Ledger.ts
 * re-exports all of it; the ledger's internal modules use it from here.
 *
 * Size: about 460 lines, most of them the JSDoc of each violation kind
 * (what it means and what excuses it); one concept, the vocabulary a
 * report is written in: split by kind, a reader would lose the one list
 * docs/testing.md and the sim's summary follow.
 */

/** One end of a simulated connection: the session's client, or the broker. */
export type Side = "client" | "broker"

/** The kinds of invariant violation the ledger reports (docs/testing.md, "The invariants"). */
export type ViolationKind =
  /** An acknowledged message never reached its target, with no excuse (crash, dying receiver, failure notice). */
  | "silent-loss"
  /**
   * Durable mode: an acknowledged message its broker crashed before writing,
   * and no later broker delivered (nor told its sender why not): the store
   * was meant to keep it.
   */
  | "crash-loss"
  /** A host (or an ask) was handed the same message twice. */
  | "duplicate-delivery"
  /**
   * Durable mode: a host was handed a message twice because a broker wrote
   * it and crashed before it stored that it had, and the next broker re-sent
   * it to a new client of the receiver (its process restarted meanwhile),
   * which cannot know it saw the first copy. Known issue (docs/testing.md).
   */
  | "crash-redelivery"
  /**
   * A host was handed a message twice because the connection it went out on
   * closed before its client confirmed reading it (`received-v1`), the broker
   * sent it again, and it reached a new client of the receiver (its process
   * restarted meanwhile), which cannot know it saw the first copy. Known
   * issue (docs/testing.md), the same as `crash-redelivery`'s.
   */
  | "unconfirmed-redelivery"
  /**
   * The broker sent the same message to its target twice. Allowed: a second
   * copy from a later broker incarnation, after the one that wrote the first
   * crashed (durable: it may have died before it stored that it wrote it;
   * memory: the sender's client re-sent it unacknowledged, and the new broker
   * has no replay record), and a copy sent again because the connection the
   * first went out on closed unconfirmed (`received-v1`). The client drops
   * such copies; `duplicate-delivery` checks that.
   */
  | "duplicate-on-wire"
  /** Messages from one sender reached one recipient out of the order the broker accepted them. */
  | "fifo"
  /** A message reached a session it was not addressed to. */
  | "misrouted"
  /** A message, list entry or membership frame crossed a `scopeId` boundary. */
  | "scope-leak"
  /** An ask never settled. */
  | "ask-unsettled"
  /** An ask settled with a reply that does not answer it. */
  | "ask-wrong-reply"
  /**
   * An ask ended in a timeout although the broker had accepted a reply to it
   * from the session it asked (and told that session `delivered`): the asker
   * gave up on an answer on its way. The asker's own timer, started when it
   * read the acknowledgement, ran out before it read a reply the broker
   * accepted before its deadline; with `ask-expiry-v1` the wait ends on the
   * broker's notice instead, which an answered ask never gets, or on a round
   * trip the broker answers behind the reply. Not an asker with no
   * connection to a live broker when it timed out: that one ends at its own
   * deadline by design (src/session/Ask.ts).
   */
  | "answer-after-timeout"
  /**
   * An ask ended in `ReplyTimeout` though its client had read the broker's
   * refusal of its question before it ended (read after the send timeout:
   * the asker settles and must end on that refusal, src/session/Ask.ts
   * `settleUnacknowledged`; review revak AK1). Not `E_TARGET_REBOUND`, which
   * the asker answers by sending the question again.
   */
  | "refused-as-timeout"
  /**
   * An ask ended with `AskAnsweredElsewhere` (`reply-elsewhere-v1`), though
   * no reply to it was read for good by another client of the asker's
   * session before it ended: the broker's notice was false.
   */
  | "answered-elsewhere-false"
  /** The broker's registry does not match the live, registered connections. */
  | "registry-mismatch"
  /**
   * An acknowledged message the broker dropped from its mailbox (capacity or
   * age) while its sender was not connected: the sender was never told, though
   * the broker's replay record knows (a retry with the same id would learn it).
   */
  | "untold-eviction"
  /**
   * Durable mode: an `untold-eviction` of a message acknowledged by a broker
   * that crashed — the notice the broker owed its sender died with that
   * broker, so no later broker sent it. Known issue 5 (docs/testing.md),
   * fixed: the store keeps owed notices (OwedNotices.ts); no longer tolerated.
   */
  | "crash-lost-notice"
  /**
   * An acknowledged message that sat in the broker's mailbox while its target
   * was connected — requeued from a connection its session had replaced — and
   * reached the target only when it registered again (the end of a run forces
   * that), if at all; out of order with newer messages meanwhile.
   */
  | "stranded-mail"
  /**
   * A message in the write in progress of a connection its target then
   * replaced (a takeover), which the transport never took, came back when
   * that connection closed and reached the target's next connection after
   * newer mail. The broker's documented trade-off
   * (docs/protocol.md, "Mail caught in a replaced connection follows the
   * session"); known issue 22 (docs/testing.md), tolerated by default.
   */
  | "takeover-late-write"
  /**
   * A message its sender sent before it left (as the broker saw the leave)
   * reached a recipient after that recipient read the sender's
   * `session_left` (C-BRK-33; ledger/departure.ts).
   */
  | "left-before-mail"
  /** Fibers were still running after their owner (generation, client, broker, world) closed. */
  | "fiber-leak"
  /**
   * A session's operation (send, ask, reply, list, …) or an agent's reply died
   * with a defect: a bug in the code under test, never an outcome of a fault
   * (faults end operations with typed failures or interruption).
   */
  | "defect"
  /** At the end, with every session connected, mail was still waiting in the broker. */
  | "mailbox-not-empty"
  /** A session was not connected again after the faults healed. */
  | "not-reconnected"
  /** With `strictInFlight`, a message lost in flight to a dying receiver. */
  | "lost-in-flight"
  /** The broker wrote a frame over 1 MiB (a strict client drops its connection; P02). */
  | "frame-too-large"
  /**
   * With hostile sessions: a session's reply to an ask that was still open
   * (delivered by the same broker, not answered, not cancelled, not timed
   * out) was refused as matching no pending ask — another session's message
   * took the ask's edge.
   */
  | "ask-hijacked"
  /**
   * A session received a message from a session of another group of its
   * scope that was neither its bound child's broker-marked supervisor-channel
   * message (to it, its supervisor) nor its supervisor's reply answering that
   * child's own supervisor-channel ask (the exact reverse); or a list entry or
   * membership frame of another group; or a `channel: "supervisor"` marking
   * on anything but a bound child's message to its supervisor.
   */
  | "cross-group"
  /**
   * The broker acknowledged a plain send to a session of another group of the
   * sender's scope that is not the exact reverse reply above: it must have
   * been refused (`E_CROSS_GROUP` by exact id, `E_TARGET_NOT_FOUND` by name).
   */
  | "cross-group-accepted"
  /**
   * `delivery-v1`: a replace message was delivered though a later message of
   * its (sender, recipient, thread) had been staged before it left staging,
   * or after its sender was told it was replaced: only the latest may be.
   */
  | "replace-not-latest"
  /** `delivery-v1`: a message its sender sent `passive` reached the host as anything but `passive` (it would wake the model). */
  | "passive-woke-model"
  /**
   * Topics: on one connection, a subscriber was sent a lower revision of a
   * (publisher, topic) than one it was already sent (the broker keeps the
   * newest and never fans out a stale one).
   */
  | "topic-revision-backwards"
  /**
   * Topics: one publication (publisher, topic, its time and text) interrupted
   * a subscriber's agent twice (C-TOP-10).
   */
  | "topic-double-interrupt"
  /**
   * At the end of a run, a client's membership view — its `presenceEvents`
   * folded over one initial `list` — names a session a `list` of its scope
   * and group does not, or lacks one it does (simulation/membershipViews.ts).
   */
  | "membership-view"
  /**
   * A receiver read a `message_control` (a cancel or supersede) about a
   * message before that message: on the connection that read the control,
   * the message came after it, or no copy of it had reached the receiver
   * before the control did (docs/protocol.md, "Receipts and control": the
   * control waits behind the message it is about; ledger/controls.ts).
   */
  | "control-before-message"
  /**
   * The broker acknowledged a sender's `cancel_message` (a bare `delivered`)
   * for a message its receiver had not read yet, and the receiver read that
   * message first afterwards with no `message_control` cancel about it
   * after it: the cancel neither dequeued it nor reached the receiver
   * (ledger/controls.ts).
   */
  | "cancel-unheard"
  /**
   * A send that `supersedes` M was acknowledged `delivered` after a client of
   * M's receiver read M on a connection that stayed registered and live to
   * the end of the run (the same broker incarnation), whose client read
   * everything the broker wrote it, and no `message_control` supersede of M
   * was read there (ledger/controls.ts).
   */
  | "supersede-unheard"
  /**
   * A session (its host, or an ask waiting for a reply) was handed a message
   * no client of it had read on a connection it held: the only copies its
   * clients took came off a connection after they had dropped it themselves
   * (a failed liveness probe). Under `received-v1` such a message is the
   * broker's — it goes to the session's next connection, or is withdrawn
   * when its sender cancelled it — so the client must not hand it on
   * (ledger/dropped.ts; seed 10425).
   */
  | "handed-after-drop"
  /**
   * A connection read a session's `session_joined`, then another of it with
   * no `session_left` of it between, though the session departed in between
   * (an `unregister` the broker handled, or a connection it saw end; not a
   * takeover or a `rejoin-v1` rejoin) and none of its mail from before that
   * departure, addressed to the reader, was still on its way there — the
   * only case in which a recipient's held departure may be stood for by the
   * new join (ledger/joins.ts).
   */
  | "missing-left"
  /**
   * A client read a `message_control` (cancel or supersede) about a message
   * no connection of that client ever read, on a connection of a client
   * instance the broker did not give it (a takeover's, or another client's
   * after the holder left): the broker sends a control only to the instance
   * given the message. Not a registration with no instance of its id known
   * since the broker started (the broker's `mayBeBeforeStart`: it may be
   * any earlier instance), nor a cancel of an ask given to that client
   * unread (ledger/instances.ts).
   */
  | "control-to-other-instance"
  /**
   * A sender's cancel or supersede of M was acknowledged `delivered`; a
   * client instance of M's receiver had read M (from that broker
   * incarnation) and came back as that instance after the acknowledgement,
   * on a connection live to the end that read everything the broker wrote
   * it, yet no control about M (nor a message superseding M) ever reached
   * that client: the cancelled copy (WithdrawnCopies.ts) or the kept
   * control (KeptControls.ts) did not reach its reader (ledger/instances.ts).
   */
  | "control-never-reached-reader"
  /**
   * At the end of the run, a connection live to the end, that read
   * everything the broker wrote it, still shows a session by its join of an
   * earlier registration than the one the broker holds now, with departures
   * of it between: it was told neither the `session_left` nor the new
   * `session_joined` (a missing departure-and-return pair, which the
   * end-of-run view cannot see: the session is present either way;
   * ledger/joins.ts).
   */
  | "missing-pair"
  /**
   * An ask question that never reached its target's session, whose ask
   * ended without a reply past the broker's deadline (its `cancel_ask` came
   * after it: no withdrawal), not answered, cancelled or superseded, by a
   * broker that did not crash: its asker never read the `expired` receipt,
   * and a retry of it at the end did not hear `E_DELIVERY_EXPIRED`
   * (ledger/askExpiry.ts; review revq Q1).
   */
  | "ask-expired-untold"
  /**
   * An ask question a reply to which its asker's session read for good (on
   * a connection without `received-v1`, or confirmed to the broker), by any
   * client of that session: its asker afterwards read the `expired` receipt
   * for it, or a retry of it at the end heard `E_DELIVERY_EXPIRED`
   * (ledger/askExpiry.ts; helper replyclose's gaps).
   */
  | "expired-after-answer"

/** One invariant violation: its kind, when it happened, what it was, and where the trace shows it. */
export interface Violation {
  /** Which invariant broke. */
  readonly kind: ViolationKind
  /** Simulated time, in milliseconds. */
  readonly at: number
  /** What happened, naming sessions and messages as the trace does. */
  readonly message: string
  /** Index of the trace line it was recorded at. */
  readonly traceIndex: number
}

/** A session of the world as the ledger names it: its id, display name and pi `scopeId`. */
export interface SessionMeta {
  /** Its session id (`sim-<n>-<name>`). */
  readonly id: string
  /** Its name, as scripts and the trace use it. */
  readonly name: string
  /** Its pi `scopeId`, if any (an isolation boundary). */
  readonly scopeId: string | undefined
  /**
   * A hostile session (HostileSession.ts): its own messages are not tracked
   * (they may reuse other sessions' ids on purpose), and nothing checks its
   * fate; what it does to the others is checked as ever.
   */
  readonly hostile?: boolean
  /** Its group (`groups-v1`); absent or blank is `default`. After a group move (`Ledger.sessionMoved`), the one it is in now. */
  readonly group?: string | undefined
  /**
   * The groups it moved from (a client instance that registered it in another group, simulation/groupMove.ts):
   * traffic and presence between it and those groups are never judged as crossing a group, since frames of
   * either side of a move may still be on their way.
   */
  readonly movedFrom?: ReadonlyArray<string> | undefined
  /** Registered short-lived (`ephemeral-v1`): forgotten by the broker once it leaves. */
  readonly ephemeral?: boolean
  /** A delegated child (`supervisor-v1`): the id of the supervisor it is bound to. */
  readonly supervisor?: string | undefined
}

/** Traffic between groups of one scope, counted over a run (all zero in a world without groups). */
export interface GroupTally {
  /** Plain sends and asks addressed (by name or id) to a session of another group. */
  readonly crossAttempts: number
  /** … refused with `E_CROSS_GROUP` (exact id of a live session). */
  readonly refusedCrossGroup: number
  /** … refused as not found (a name or prefix, or a session not live). */
  readonly refusedNotFound: number
  /** … refused otherwise, or with no answer to the sender. */
  readonly otherOutcome: number
  /** A child's `supervisor_send`s written, and how many the broker acknowledged. */
  readonly supervisorSent: number
  readonly supervisorAcknowledged: number
  /** Supervisor replies that crossed back to a child (read by the child). */
  readonly repliesBack: number
}

/** What became of every message a sender was told the broker accepted. */
export interface MessageTally {
  /** Send frames written by clients (distinct message ids). */
  readonly sent: number
  /** Acknowledged by the broker (`delivered`). */
  readonly acknowledged: number
  /** Refused by the broker (`delivery_failed`). */
  readonly refused: number
  /** No answer reached the sender (connection lost, timeout): outcome unknown to it. */
  readonly unknown: number
  /** Acknowledged and handed to the target exactly once. */
  readonly delivered: number
  /** Acknowledged, then the sender was told it failed (an `expired` receipt). */
  readonly failedNotified: number
  /**
   * Acknowledged by a broker that crashed before writing it anywhere, and
   * never delivered (in durable mode each is a `crash-loss` violation).
   */
  readonly lostToCrash: number
  /**
   * Durable mode: acknowledged messages a broker wrote and then crashed, that
   * a later incarnation wrote again (its store did not yet say it was
   * written); the receiving client drops the copy.
   */
  readonly redelivered: number
  /**
   * Acknowledged messages the broker wrote to a connection that then closed
   * before its client confirmed reading them (`received-v1`), that it wrote
   * again to the receiver's next connection; a client that had read the
   * first drops the copy.
   */
  readonly resent: number
  /** Written toward the target's connection, which died (or whose client closed) before its session took it. */
  readonly lostInFlight: number
  /** Delivered only when the end of the run made its target register again (a `stranded-mail` violation each). */
  readonly stranded: number
  /** Staged replace messages (`delivery-v1`) a later message of their thread replaced, the sender told. */
  readonly replaced: number
  /**
   * Asks never handed to their target whose asker had stopped waiting (its
   * ask timed out, was interrupted or failed, and its client sent
   * `cancel_ask`): the broker drops such a question rather than ask it;
   * and messages their sender cancelled (`cancel_message`, acknowledged)
   * or superseded (a send that `supersedes` them, acknowledged) before any
   * client of the receiver read them.
   */
  readonly withdrawn: number
  /**
   * Dropped from the broker's mailbox (evicted or expired: its replay record
   * says so) after its sender, registered short-lived (`ephemeral-v1`),
   * ended by `unregister`: the broker owes such a sender no notice
   * (docs/protocol.md, `ephemeral-v1`). One whose connection merely dropped
   * is owed it (`untold-eviction` otherwise).
   */
  readonly senderEnded: number
  /**
   * Ask questions never handed to their target's session, written toward
   * its connections (or read by its client), each of which closed before
   * the session took the question, while the asker's session read a reply
   * to it for good (`answeredQuestions`, ledger/askExpiry.ts): the broker
   * drops such a copy as answered — at once when it is in the mailbox as
   * the reply is accepted, or when a closing connection gives it back —
   * rather than ask it again (helper replyclose). Without this they counted
   * as `lostInFlight` (a `lost-in-flight` violation under `strictInFlight`).
   */
  readonly answered: number
  /** Cancels of world sessions' messages the broker acknowledged (a bare `delivered`; ledger/controls.ts). */
  readonly cancelsAcknowledged: number
  /** `message_control` frames (cancels and supersedes of world sessions' messages) their receivers read. */
  readonly controlsRead: number
  /**
   * Cancels a takeover's custody hold put off and the broker then refused, the old client having
   * confirmed the message as it closed (review revb D1; `ControlState.heldThenRefused`): a path count.
   */
  readonly heldCancelsRefused: number
}

/** How every ask of a run ended. */
export interface AskTally {
  /** Asks started. */
  readonly started: number
  /** Settled by a reply. */
  readonly replied: number
  /** Ended by the ask's timeout. */
  readonly timedOut: number
  /** Refused, the peer departed, the generation ended, or the send was not delivered. */
  readonly failed: number
  /** Ended `AskAnsweredElsewhere` (`reply-elsewhere-v1`): its reply went for good to another client of the session. */
  readonly answeredElsewhere: number
  /** Cancelled (interrupted), as a person cancelling the tool call. */
  readonly interrupted: number
}

/**
 * How an ask ended: `Replied`, `Sent (<delivery>)` for a non-blocking ask,
 * `ReplyTimeout`, `Interrupted`, or the tag of another failure.
 */
export type AskOutcome = "Replied" | "Sent" | "ReplyTimeout" | "Interrupted" | string

/** How a `Ledger` is set up. */
export interface LedgerOptions {
  /** The simulated time, in milliseconds (the world's TestClock). */
  readonly now: () => number
  /** Treat messages lost in flight to a dying receiver as violations. Default false. */
  readonly strictInFlight?: boolean
  /** Put every frame in the trace (large). Default false. */
  readonly traceFrames?: boolean
  /** Make the checks that only hold with hostile sessions in mind (`ask-hijacked`). Default false. */
  readonly hostileChecks?: boolean
  /**
   * The broker keeps its mail in a store that outlives a crash: no
   * acknowledged message may be lost to one (`crash-loss`), and a copy
   * re-sent by a later incarnation is no `duplicate-on-wire`. Default false.
   */
  readonly durable?: boolean
  /**
   * The broker's coalescing window of replace messages (`replaceWindowMs`):
   * a staged message's window opened this long before it closes. Default
   * `DEFAULT_REPLACE_WINDOW_MS`.
   */
  readonly replaceWindowMs?: number
}
