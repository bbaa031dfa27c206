/**
 * Size note: about 475 lines, nearly all JSDoc on the service's operations
 * (one interface: splitting it would scatter one contract).
 *
 * The public models of `IntercomClient`: the service interface with its
 * operations, the presence fields a session may change, the status it
 * reports, and the errors of operations other than `send`. IntercomClient.ts
 * builds the service; it re-exports these for existing importers.
 */
import type { Effect, Scope, Stream } from "effect"
import type { MessageControl, MessageReceipt, SessionInfo } from "../protocol/frames.ts"
import type { PublishInput, TopicEntry } from "../protocol/topics.ts"
import type { Published, SavedTopics, SubscribedView, TopicsView } from "./ClientTopics.ts"
import type {
  ListResultsRequest,
  ReadResultRequest,
  ResultError,
  ResultList,
  ResultPageView,
  StoredResult,
  StoreResultRequest
} from "./ClientResults.ts"
import type {
  ConnectionLost,
  IntercomNotConnected,
  RequestTimeout,
  SupervisorAuthorizationFailed,
  TakenOver,
  TopicRefused,
  TopicsUnavailable
} from "./errors.ts"
import type { ControlEvent, Delivery, InboundMessage, PresenceEvent, QuestionEvent } from "./events.ts"
import type { QuestionOperations } from "./ClientQuestions.ts"
import type { SendError, SendRequest } from "./requests.ts"
import type { ChildGrant } from "./SupervisorGrants.ts"
import type { BrokerStateLost } from "./StateEpochs.ts"
import type { LateVerdict } from "./LateVerdicts.ts"

/** Presence fields a session may change after registering (P32). */
export interface PresenceUpdate {
  readonly name?: string
  readonly runtimeFallbackAlias?: boolean
  readonly status?: string
  readonly model?: string
  readonly contextPct?: number | null
  readonly contextTokens?: number | null
  readonly contextWindow?: number | null
  /** Extension `health-v1` (dropped for a broker without it): true only while idle (C-HLT-3). */
  readonly acceptsAsks?: boolean
  /** Extension `health-v1`: unresolved inbound asks. */
  readonly pendingAsks?: number
  /** Extension `health-v1`: last send or receive, epoch ms (0: none). */
  readonly lastIntercomActivity?: number
}

/** A snapshot of the client's connection, from `status` (which never connects). */
export interface ClientStatus {
  readonly connected: boolean
  readonly sessionId: string
  readonly socketPath: string
  /** Features the broker granted on the current connection. */
  readonly features: ReadonlyArray<string>
  /** Connections established so far (1 after the first, +1 per reconnect). */
  readonly connections: number
  /** Why the last connection attempt failed (or `liveness probe timed out`); cleared once connected. */
  readonly lastError: string | undefined
  /** The supervisor the broker bound this child to (`supervisor-v1`), on the current connection. */
  readonly supervisorSessionId: string | undefined
  /**
   * The broker's state epoch (`state-epoch-v1`) on the last connection:
   * the same across a durable broker's restarts, new for each memory-mode
   * broker process; undefined before connecting, or from a broker without it.
   */
  readonly stateEpoch?: string | undefined
  /**
   * Messages dropped as copies of one this client passed on under the same
   * (sender, message id), though their own `timestamp` differed from that
   * one's: most likely new messages their sender sent under an id it used
   * before, which this session never saw (a warning names the first of each
   * pair; message ids must be unique per sender). Over the client's life.
   */
  readonly reusedIdDrops: number
  /**
   * Set while another process holds this session, having taken it over
   * (`takeover-v1`): the client does not take it back from a live holder,
   * and its operations fail saying so; cleared once the holder has left and
   * the client registered again (`ifFree`, on a broker that granted `reclaim-v1`; or `ifReleased`,
   * `reclaim-released-v1`, once a taker that lives on gave the id up).
   */
  readonly takenOver?: TakenOver | undefined
}

/**
 * What the option `withholdConfirmations` keeps back now (`withheld`): how
 * many messages read are left unconfirmed, so the broker keeps them too, and
 * whether `withholdLimit` ended the withholding.
 *
 * @category models
 * @since 0.1.0
 */
export interface WithheldConfirmations {
  /** Confirmations are withheld now: the option was given, and neither `releaseConfirmations` nor the limit ended it. */
  readonly withholding: boolean
  /** Messages read while withheld, each once however often delivered, none confirmed; 0 once released. */
  readonly messages: number
  /**
   * When `withholdLimit` ended the withholding: how many messages were
   * withheld then (the limit plus the one that passed it), all confirmed
   * since, although the consumer's journal may not hold them durably yet.
   * `undefined` while withholding, or when `releaseConfirmations` ended it.
   */
  readonly limitReleased: number | undefined
}

/** Why an operation other than `send` failed: no connection, no answer in time, or the connection dropped. */
export type ClientError = IntercomNotConnected | RequestTimeout | ConnectionLost

/**
 * Why a topic operation failed: refused (invalid input, the group's bound),
 * unavailable (a broker without `topics-v1`, C-TOP-16), or a client error.
 */
export type TopicError = TopicRefused | TopicsUnavailable | ClientError

/** The operations of an `IntercomClient`; docs/client.md, "Operations", says what each does. */
export interface IntercomClientService extends QuestionOperations {
  readonly sessionId: string
  /** The home group this client registers in (`options.group`, trimmed; blank: `default`, C-GRP-1). */
  readonly group: string
  /** Connects (or joins the attempt in progress) and returns once registered. */
  readonly connect: Effect.Effect<void, IntercomNotConnected>
  readonly list: Effect.Effect<ReadonlyArray<SessionInfo>, ClientError>
  /** The live sessions of another group of the scope: a read-only peek (C-GRP-5). */
  readonly peek: (group: string) => Effect.Effect<ReadonlyArray<SessionInfo>, ClientError>
  readonly send: (request: SendRequest) => Effect.Effect<Delivery, SendError | IntercomNotConnected>
  /**
   * A child's message to its supervisor (`supervisor_send`, C-SUP-12): to the
   * supervisor the broker confirmed at registration, across groups. Fails with
   * `SupervisorUnauthorized` unless the client was made with `supervisorGrant`.
   */
  readonly supervisorSend: (request: Omit<SendRequest, "to" | "targetId" | "targetEpoch">) => Effect.Effect<
    Delivery,
    SendError | IntercomNotConnected
  >
  /**
   * A supervisor asks the broker for a capability for a child name (C-SUP-7,
   * C-SUP-8; `*` binds to the first name that claims it). Needs `ownerToken`.
   * The client restores every capability it obtained after each reconnect.
   */
  readonly authorizeChild: (childName: string) => Effect.Effect<ChildGrant, SupervisorAuthorizationFailed | ClientError>
  /**
   * `cancel_message` (P71): true when the broker withdrew or cancelled the
   * message, now or before (a retry after the first answer was lost, e.g.
   * with `ConnectionLost` when the broker crashed, is true again).
   */
  readonly cancel: (messageId: string) => Effect.Effect<boolean, ClientError>
  /** `cancel_ask` (P64): drops this session's open ask edge. */
  readonly cancelAsk: (messageId: string) => Effect.Effect<void, ClientError>
  readonly presence: (update: PresenceUpdate) => Effect.Effect<void, ClientError>
  /**
   * A receipt to the message's sender (P70), returning at once: queued on the
   * live connection behind every frame before it and written with its next
   * batch; with no connection, a fiber of the client writes it on the next
   * one (within `connectTimeoutMs`). A receipt is advisory: one lost with its
   * connection is not reported.
   */
  readonly receipt: (receipt: MessageReceipt) => Effect.Effect<void>
  /**
   * Publishes this session's current state on a topic (`topics-v1`): checked
   * (C-TOP-4), numbered (above every revision it numbered before, usually the
   * previous + 1), and counted only once the
   * broker confirmed it (C-TOP-13).
   */
  readonly publish: (request: PublishInput) => Effect.Effect<Published, TopicError>
  /**
   * Subscribes to an exact topic; returns its current records (C-TOP-1,
   * C-TOP-11), `truncated` when the broker had to leave some out to keep its
   * answer within one frame.
   */
  readonly subscribe: (
    topic: string,
    options?: { readonly awaitRelease?: boolean | undefined }
  ) => Effect.Effect<SubscribedView, TopicError>
  readonly unsubscribe: (topic: string) => Effect.Effect<void, TopicError>
  /**
   * The current records of the own group (of `topic` only, if given) and this
   * session's subscriptions; `truncated` when the broker left some out.
   */
  readonly topics: (topic?: string) => Effect.Effect<TopicsView, TopicError>
  /**
   * Archives a terminal report of delegated work (`results-v1`, C-WKR-11);
   * the receipt says durable or memory-only, and whether it was cut
   * (C-WKR-12). `ResultsUnavailable` from a broker without the archive.
   */
  readonly storeResult: (request: StoreResultRequest) => Effect.Effect<StoredResult, ResultError | IntercomNotConnected>
  /** The archived reports this session may read (its group's, its children's), newest first. */
  readonly results: (request?: ListResultsRequest) => Effect.Effect<ResultList, ResultError | IntercomNotConnected>
  /** One page of an archived report by `result:<UUID>`, zero-based UTF-16 offsets (C-WKR-13). */
  readonly result: (request: ReadResultRequest) => Effect.Effect<ResultPageView, ResultError | IntercomNotConnected>
  /** This client's subscriptions and own latest publications, for a host to persist (C-TOP-15). */
  readonly savedTopics: Effect.Effect<SavedTopics>
  /** Takes persisted subscriptions and publications; they are sent to the broker now if connected, and after every reconnect. */
  readonly seedTopics: (saved: SavedTopics) => Effect.Effect<void>
  /** Records of subscribed topics as the broker fans them out; each subscriber sees those after it subscribed. */
  readonly topicRecords: Stream.Stream<TopicEntry>
  /**
   * Answers and cancellations of this child's durable questions, as the
   * broker pushes them (`questions-v1`); each subscriber sees those after it subscribed.
   */
  readonly questionEvents: Stream.Stream<QuestionEvent>
  /**
   * Watches for the broker's notice that this session's ask `questionId`
   * expired unanswered (`ask-expiry-v1`): subscribes now (in the Scope, so
   * a notice read from now on is seen), and gives the effect that completes
   * once the notice was read and `caughtUp` after it (for at most the
   * liveness timeout) — so any reply the broker accepted before the ask
   * expired, which it wrote before the notice, was routed first. Never completes for a broker without the
   * extension (`status.features`), which sends no notice.
   */
  readonly askExpiry: (questionId: string) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
  /**
   * Watches what the broker says about the ask `request` after its send
   * stopped waiting (LateVerdicts.ts): from now until the Scope closes, the
   * broker's answer to its `send` read when no send waited for it any more
   * (its send timeout ran out) is kept, and so is whether its `ask_expired`
   * was read. Gives the effect that reads what was kept so far and takes
   * the answer it returns (a second read gives it only if another came
   * since): the question may be sent again under its id (a rebound's
   * resend), and its first send's answer is not the resend's (review revap
   * AP1). An asker
   * settling an unacknowledged ask (src/session/Ask.ts
   * `settleUnacknowledged`) reads it after its round trip: the broker wrote
   * its verdict before that round trip's answer. A late acknowledgement is
   * noted as one read in time is (a state loss lists the ask).
   */
  readonly lateVerdict: (request: SendRequest) => Effect.Effect<Effect.Effect<LateVerdict>, never, Scope.Scope>
  /**
   * One round trip to the broker on the connection live now, for an asker
   * at its own deadline (`ask-expiry-v1`, Ask.ts): the liveness probe's
   * `list`, marked `settle: true` for a broker that granted the extension,
   * which such a broker answers only after closing the ask edges past their
   * deadline and once no reply to this session it accepted is still parked
   * behind its sender's other mail — so their `ask_expired`, and any reply
   * it accepted before, are read first — then `caughtUp` (for at most the liveness
   * timeout). When that connection drops before the answer, or none is live
   * while the client reconnects, the round trip is made again on the next
   * connection, if one is live within `rejoinGraceMs` of the drop (or of
   * the call): the broker gives back first there what the dropped one never
   * confirmed, a reply among it. True once an answer was read and everything
   * read before it routed, or that wait ran out; false when no connection
   * comes within that grace (the client's `connectTimeoutMs` does not cut
   * that wait short), at once when none will (never connected, taken over,
   * closed — also while it waits), at the first reconnect attempt
   * (`reconnectBaseMs` after the drop) when the owner declines to reconnect
   * there (`shouldReconnect`). A round trip unanswered within the liveness
   * timeout has its connection probed: answered (a broker holding the
   * answer on purpose), the same round trip is waited for, the probe made
   * again every liveness timeout, until `rejoinGraceMs` from the call — then
   * false; unanswered, the connection is dropped and the round trip moves
   * to the next as after any drop. It dials nothing itself.
   */
  readonly settleRoundTrip: Effect.Effect<boolean>
  /**
   * Inbound messages, one at a time, oldest first (`UnhandledMessages.ts`).
   * A message stays with the client until its consumer is done with it: until
   * that consumer pulls the next one, or calls `handled`. A consumer
   * interrupted in the middle of a message (a session generation that closes)
   * leaves it, and everything after it, to the next run of this stream
   * (known issue 15).
   *
   * **Single consumer.** One run of this stream at a time: each run starts at
   * the oldest unhandled message, so two at once would both see it, and a
   * second run after an interrupted one sees again the message the first did
   * not finish. `IntercomSession` is that consumer when it is used; a program
   * that reads `messages` itself must not also run a session on the client.
   */
  readonly messages: Stream.Stream<InboundMessage>
  /**
   * Installs `take` for as long as the current Scope is open: the client asks
   * it about each new message as it reads it, in the reader's synchronous
   * code, before the message joins `messages`. A message it takes (true) is
   * its caller's from then on: it never reaches `messages`, does not wait
   * behind the messages read before it, and holds neither `caughtUp` nor a
   * confirmation (`confirmWhenHandled`). `IntercomSession` resolves its live
   * ask with a reply so, however slowly it handles the messages before it
   * (C-ORD-32). One taker at a time: a later one replaces it. `take` must
   * not throw, and must not wait: it runs on the read path of every message.
   *
   * Gives back the look-back, plain synchronous code for the same caller:
   * it asks `take`, oldest first, about the messages read already and not
   * yet reached by the consumer of `messages` that answer the question
   * `replyTo` names (their `replyTo`; found through an index, so a question
   * none answers takes constant time however many wait) — behind the one it is at; a
   * kept one is passed on already — and the first it takes leaves the client
   * as a handled one does and is returned (a reply read before the ask
   * waiting on it was bound). Under `confirmWhenHandled` the caller then
   * calls `handled` with it, so what it held back is confirmed.
   */
  readonly takeOnRead: (
    take: (message: InboundMessage) => boolean
  ) => Effect.Effect<(replyTo: string) => InboundMessage | undefined, never, Scope.Scope>
  /**
   * The consumer of `messages` is done with `message` (it handed it on): it
   * leaves the client now rather than at the next pull, so a consumer
   * interrupted right after cannot have it handed on twice.
   */
  readonly handled: (message: InboundMessage) => Effect.Effect<void>
  /**
   * The consumer of `messages` passed `message` on, but nothing vouches for
   * it yet: its host has not taken it, and no journal saved it. Until
   * `handled(message)` it counts as not handled, so under
   * `confirmWhenHandled` nothing read from it on is confirmed, and a run of
   * `messages` that ends first leaves it to the next run, before anything
   * read after it. `IntercomSession` keeps a message its host's journal could
   * not checkpoint (or that has no journal) until the host took it.
   */
  readonly keep: (message: InboundMessage) => Effect.Effect<void>
  /**
   * Completes once the consumer of `messages` is done (handled, kept, or
   * pulled past) with every message this client had read when it was
   * called; at once when none waits. `messages` and `presenceEvents` are
   * read by different fibers, but the broker wrote them in one order: a
   * consumer of `presenceEvents` that waits for this before it acts on an
   * event acts after the messages the broker sent before it —
   * `IntercomSession` routes a peer's reply before it acts on that peer's
   * `Left` (C-ASK-9). Waits as long as nobody consumes `messages`.
   */
  readonly caughtUp: Effect.Effect<void>
  /**
   * Whether `sessionId` is departed as this client last read it: its
   * `session_left` was read on the live connection (or the reconciliation
   * after the reconnect found it gone: a `Left` with `resync`) and no `session_joined`
   * since (both are applied as the frames are read, ahead of any consumer
   * of `presenceEvents`). `false` means no departure is known: the session
   * joined again since, or its departure was read on an earlier connection
   * (the record is reset for each), or it is older than the newest 1,000
   * departures remembered. A consumer that acts on a `Left` later (after
   * `caughtUp`) reads this to tell whether the session is back.
   */
  readonly isDeparted: (sessionId: string) => Effect.Effect<boolean>
  /**
   * How many presence events (`session_joined`, `session_updated`,
   * `session_left`, and those a reconciliation after a reconnect made up)
   * this client has read so far, over all its connections: a
   * monotonic mark of "now" in the order the broker wrote them, for
   * `leftSince`. `IntercomSession` takes one when it sends an ask, and again when it resends it after `E_TARGET_REBOUND`.
   */
  readonly presenceMark: Effect.Effect<number>
  /**
   * Whether a `session_left` for `sessionId` was read after `presenceMark`
   * answered `mark` (on any connection), whatever was read since: a session
   * that left and joined again since still left. Remembered for the newest
   * 1,000 departed sessions; an older one answers `false`. `IntercomSession`
   * fails an ask whose target left after it was sent, even when the target
   * is back by the time the session acts on its departure (C-ASK-9).
   */
  readonly leftSince: (sessionId: string, mark: number) => Effect.Effect<boolean>
  /**
   * Membership events; each subscriber sees those after it subscribed. After
   * a reconnect, once `rejoinGraceMs` is over, the client lists the sessions
   * and adds what the broker's feed could not say (it tells a new connection
   * only of changes after it registered), marked `resync: true`
   * (MembershipView.ts).
   */
  readonly presenceEvents: Stream.Stream<PresenceEvent>
  /**
   * One element per reconnect, once the new connection is registered and
   * live: how many connections this client has made (2 for the first
   * reconnect). Each subscriber sees those after it subscribed. The broker
   * reached may be a new one that never knew the sessions registered before
   * the drop; they may register again within `rejoinGraceMs`.
   * `IntercomSession` checks then that the peer an ask waits on is still
   * there (C-ASK-2, C-ASK-9).
   */
  readonly reconnects: Stream.Stream<number>
  /**
   * One element per reconnect that reached a broker holding another state
   * than the last connection's (`state-epoch-v1`: a memory-mode broker that
   * restarted, or a durable one whose database is gone): what this client had
   * left in the old state — asks whose replies can no longer come, mail
   * acknowledged as queued that may never be delivered. Published before that
   * reconnect's element of `reconnects`; each subscriber sees those after it
   * subscribed. A durable broker's restart keeps its state, and is not one.
   * `IntercomSession` ends an ask waiting on a lost question with
   * `BrokerStateLost` at once, instead of at its timeout.
   */
  readonly stateLost: Stream.Stream<BrokerStateLost>
  /**
   * Fails once another process has registered this session id and taken it
   * over (`taken_over`, `takeover-v1`) — at once while it holds it — with the
   * error every operation fails with then (`IntercomNotConnected`, naming
   * that process's pid and how to take the session back); never succeeds. A
   * wait for a reply races it: no reply can reach this process now, so the
   * wait ends at once instead of at its timeout. Once the session is taken
   * back (`reclaim-v1`), a new call waits again.
   */
  readonly whenTakenOver: Effect.Effect<never, IntercomNotConnected>
  /**
   * How long after a reconnect a session missing from the broker may still
   * be on its way back (`IntercomClientOptions.rejoinGraceMs`, 10 s by default).
   */
  readonly rejoinGraceMs: number
  /**
   * Receipts and cancel/supersede notices about messages, and the broker's
   * word that an ask of this session was answered to another client
   * instance of it (`AnsweredElsewhere`, `reply-elsewhere-v1`).
   */
  readonly controls: Stream.Stream<ControlEvent>
  /**
   * How `senderId` withdrew its message `messageId` (P73 `cancel` or
   * `supersede`), if this client read such a control lately (the newest
   * 1,024, for 30 days): recorded as the control is read, so it is known
   * before the consumer of `controls` handles it, and in every session
   * generation of this client. `undefined`: no such control is known, or a
   * message with that (sender, id) was read after it — a new message the
   * sender sent under an id it used before, which that control did not
   * withdraw (RecentControls.ts). `receivedAt`: the message's
   * `brokerReceivedAt`, when known; a control the broker stamped before it
   * (`MessageControl.timestamp`, the same clock) is an earlier message's
   * under that id, and does not count (review revbi BI2).
   */
  readonly withdrawal: (
    senderId: string,
    messageId: string,
    receivedAt?: number
  ) => Effect.Effect<MessageControl["action"] | undefined>
  /**
   * Whether a message `senderId` sent under `messageId` was passed on to `messages` after the control whose
   * `read` is `mark` was read: that control is then an earlier message's under the same id, and does not
   * withdraw this one (review revbb BB2). Known for the pairs `messages` remembers (the newest 1,024, and every
   * one not yet confirmed); false for one forgotten — the control is then taken to apply.
   */
  readonly readSince: (senderId: string, messageId: string, mark: number) => Effect.Effect<boolean>
  readonly status: Effect.Effect<ClientStatus>
  /**
   * Until `resumeConfirmations`, confirms (`received-v1`) only what came
   * before the oldest message no consumer has handled: for the time no
   * session takes its messages. A message read meanwhile waits in this
   * process, and the broker keeps it too, so a client that closes before a
   * session takes it leaves it to the session's next client instead of
   * losing it; what the retiring session still handled is confirmed.
   * `IntercomSession` holds when a generation retires and resumes when the
   * next one starts.
   */
  readonly holdConfirmations: Effect.Effect<void>
  /** Confirms again, starting with what was read while held (`holdConfirmations`). */
  readonly resumeConfirmations: Effect.Effect<void>
  /**
   * From now on, confirms (`received-v1`) only what came before the oldest
   * message the consumer of `messages` has not handled (`handled`), not
   * each message as soon as it is read: a message whose handling the
   * process's end cut short —
   * a host's checkpoint in progress when the session stopped — stays the
   * broker's and reaches the session's next client, instead of being lost
   * with this one (known issue 21, docs/testing.md). `IntercomSession` turns
   * it on (it calls `handled` once a message is checkpointed and handed on,
   * or, when nothing saved it, once its host took it: `keep`);
   * a consumer that turns it on must call `handled` for every message, or
   * confirmations stop. The option of the same name turns it on from the
   * first connection.
   */
  readonly confirmWhenHandled: Effect.Effect<void>
  /**
   * Ends what the option `withholdConfirmations` began: from now on the
   * client confirms as its other rules say, starting with what it read
   * meanwhile. Once durable, always durable: nothing withholds again.
   * Nothing to do for a client made without the option.
   */
  readonly releaseConfirmations: Effect.Effect<void>
  /**
   * What `withholdConfirmations` keeps back now: how many messages read are
   * unconfirmed because of it, and whether `withholdLimit` released them.
   * Never connects. A client made without the option: none, not withholding.
   */
  readonly withheld: Effect.Effect<WithheldConfirmations>
  /** Unregisters and closes; later operations fail with `IntercomNotConnected`. */
  readonly disconnect: Effect.Effect<void>
}
