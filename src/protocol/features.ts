/**
 * Feature negotiation. `registered.features` lists what this broker offers.
 * Base features are always advertised (a pi-intercom client understands them);
 * extensions are granted only to a client that asked for them by name in
 * `register.features`, so a strict base client never sees a frame type or
 * field it would reject (P04).
 */

/** Epoch-bound exact sends (P47). Understood by pi-intercom clients. */
export const EXACT_SEND_V1 = "exact-send-v1"

/**
 * Paged `list` (extension): `list` may carry `cursor` and `limit`, and the
 * `sessions` answer carries `total` and, while more remain, `nextCursor`, so a
 * client can read every live session however many there are.
 */
export const LIST_PAGE_V1 = "list-page-v1"

/**
 * Per-ask timeouts (extension): a `send` whose message expects a reply may
 * carry `askTimeoutMs`, and the broker keeps that ask open for that long
 * instead of its own default.
 */
export const ASK_TIMEOUT_V1 = "ask-timeout-v1"

/**
 * Groups (extension): `register` may carry `group`, an authorization
 * boundary inside a scope — a session reaches only sessions of its own group
 * (C-GRP); `list` may carry `group` to peek at another group, read-only.
 */
export const GROUPS_V1 = "groups-v1"

/**
 * The supervisor channel (extension): a supervisor registers with a private
 * `ownerToken` and asks for capabilities (`authorize_supervisor`); a child
 * registers with one (`capability`, `supervisorSessionId`) and reaches its
 * supervisor with `supervisor_send`, across groups (C-SUP-8…15).
 */
export const SUPERVISOR_V1 = "supervisor-v1"

/**
 * Correlated failure replies (extension): a `send` that answers an ask
 * (`message.replyTo`) may carry `replyError`, a string saying the ask failed
 * at its destination; the asker's ask ends as an error with that text
 * (C-ASK-7). A recipient granted it gets `replyError` on the `message`; a
 * base recipient gets the message with its text marked as an error
 * (`replyErrorText`), so nothing is lost.
 */
export const REPLY_ERROR_V1 = "reply-error-v1"

/**
 * Delivery modes (extension): a `send` may carry `delivery`
 * (`steer` | `queue` | `passive`), `queueMode` (`stack` | `replace`, with
 * `queue`) and `threadId` (with `replace`); a forwarded `message` carries them
 * to a recipient granted this extension. A `replace` message is staged by the
 * broker, coalesced per (sender, recipient, threadId), and answered with
 * `delivery_queued` (C-DLV-1…9; see `deliveryModes.ts`).
 */
export const DELIVERY_V1 = "delivery-v1"

/**
 * Peer health (extension): `presence` may carry `acceptsAsks`, `pendingAsks`
 * and `lastIntercomActivity`; the broker stamps `lastSeen` on every frame of a
 * session and `lastIntercomActivity` on both ends of a routed message, and the
 * rows of a `sessions` answer carry these fields (C-HLT-3, C-HLT-4, C-HLT-8).
 */
export const HEALTH_V1 = "health-v1"

/**
 * Topics (extension): `topic_publish`, `topic_subscribe`, `topic_unsubscribe`
 * and `topic_query`, answered by `topic_published`, `topic_subscribed`,
 * `topic_unsubscribed`, `topic_state` or `topic_failed`; subscribers get
 * `topic_record` (C-TOP, see `topics.ts`).
 */
export const TOPICS_V1 = "topics-v1"

/**
 * The result archive (extension): `result_store`, `result_list` and
 * `result_read`, answered by `result_stored`, `result_listed`, `result_page`
 * or `result_failed` (C-WKR-11…14, see `results.ts`).
 */
export const RESULTS_V1 = "results-v1"

/**
 * Durable supervisor questions (extension): `question_ask`,
 * `question_received`, `question_answer`, `question_stop`, `question_list`
 * and `question_get`, answered by `question_result` or `question_failed`;
 * the asking child gets `question_answered` / `question_cancelled` (C-DQ, see
 * `questions.ts`). Granted only by a broker that keeps questions.
 */
export const QUESTIONS_V1 = "questions-v1"

/**
 * Receipt before release (extension): the client tells the broker, with
 * `received {frames}`, how many frames it has read on this connection, and
 * the broker keeps the mail it wrote there (in its store, when durable) until
 * the count covers it — so mail still in the client's socket buffer when the
 * broker is killed is delivered again after the restart, and mail unread when
 * only the connection closes goes to the session's next connection. Granted
 * by every broker.
 */
export const RECEIVED_V1 = "received-v1"

/**
 * Trace context (extension): a `send` may carry `traceparent`, a W3C trace
 * context string (`00-<trace id>-<span id>-<flags>`); the broker forwards it
 * on the `message` frame — only to a recipient granted this extension —
 * replaced by its own routing span's context when the broker traces (see
 * `trace.ts`, docs/observability.md).
 */
export const TRACE_V1 = "trace-v1"

/**
 * Broker statistics (extension): `stats` is answered with `stats_result`, a
 * read-only snapshot of the broker's metrics (`stats.ts`,
 * `intercom broker stats`).
 */
export const STATS_V1 = "stats-v1"

/**
 * Stats rows cut to fit, said so (extension, with `stats-v1`): `stats_result`
 * must fit one 1 MiB frame, so the broker keeps of `byGroupStatus` (largest
 * counts first) the rows that fit, and to a client granted this it adds
 * `byGroupStatusOmitted {rows, sessions}`: how many rows it left out and how
 * many live sessions they count. A client granted `stats-v1` only gets the
 * same rows without the field (docs/protocol.md).
 */
export const STATS_ROWS_CUT_V1 = "stats-rows-cut-v1"

/**
 * The broker's live view (extension, read-only): `observe` is answered with
 * `observe_snapshot` and, for a watch, `observe_events` (see `observe.ts`). A
 * `register` with `observer: true` makes the connection an observer — not a
 * session — when this extension is granted.
 */
export const OBSERVE_V1 = "observe-v1"

/**
 * Short-lived sessions (extension): a `register` with `ephemeral: true`
 * makes the session one that ends with its command (`intercom send`,
 * `list`, `ask` …). When it leaves, the broker forgets it at once instead of
 * remembering it a day (P34), and it has no mailbox identity (P49): a send
 * to its name or id afterwards is "not found", not queued for it, and no
 * later session of the same name and directory inherits its mail.
 */
export const EPHEMERAL_V1 = "ephemeral-v1"

/**
 * The broker's state epoch (extension): `registered` carries `stateEpoch`, an
 * opaque id of the routing state the broker holds (ask edges, queued mail,
 * replay records, durable questions). A durable broker keeps it in its store,
 * so its restarts keep it; a memory-mode broker makes a fresh one per
 * process. A client that sees it change across a reconnect knows the broker
 * lost what it held for it (asks in flight, mail queued for offline peers).
 */
export const STATE_EPOCH_V1 = "state-epoch-v1"

/**
 * Takeover notice (extension): when another connection registers this
 * connection's session id (a takeover, P16), the broker writes `taken_over`
 * (with the pid the new registration gave) before it ends this connection,
 * so the client knows not to reconnect and take the id back. A client granted
 * it may register with `ifFree`: only if no live connection holds the id
 * (refused with `registration_failed` code `E_SESSION_HELD` otherwise), so it
 * takes its id back once a short-lived holder left, never from a live one.
 */
export const TAKEOVER_V1 = "takeover-v1"

/**
 * Taking the id back when it is free (extension): a `register` with
 * `ifFree: true` is refused (`registration_failed`, code `E_SESSION_HELD`)
 * while a live connection holds the id, instead of taking it over. A client
 * taken over (`takeover-v1`) retries so only on a broker that granted this:
 * a broker without it ignores `ifFree`, and such a retry would take the id
 * from its live holder.
 */
export const RECLAIM_V1 = "reclaim-v1"

/** `registration_failed` code (`takeover-v1`): a register with `ifFree` found its id held by a live connection. */
export const SESSION_HELD = "E_SESSION_HELD"

/**
 * Taking the id back when its holder gave it up (extension): a `register`
 * with `ifReleased: true` is accepted only if no live connection holds the
 * id (`E_SESSION_HELD` otherwise, as `ifFree`) and its last holder in the
 * scope (in any group) on this broker left it by `unregister`
 * (`E_SESSION_NOT_RELEASED` otherwise: its
 * connection closed without one, or this broker never saw it leave, as after
 * a restart while the holder reconnects). A client taken over asks so while
 * the process that took the id over is alive, which `ifFree` alone must not:
 * the taker may be only reconnecting. Sent only where the broker granted
 * this; one without it ignores the field. The grant the client knows is the
 * broker's it was taken over on: a broker restarted since as an older
 * version registers the `ifReleased` before the client sees its grant. With
 * `reclaim-v1` it honoured `ifFree` (the id was free, but the taker may be
 * only reconnecting): the client drops that connection at once (no
 * `unregister`: the mail it did not confirm goes back; such a broker sees a
 * brief registration) and sends no more `ifReleased`, to any broker, until
 * the taker's process exits (then `ifFree`). With `takeover-v1` alone it
 * took the id from a live taker (told `taken_over`, that one stops): the
 * client keeps that connection, or nobody would hold the id. With neither it
 * ended the taker without telling it, so the taker takes the id back: the
 * client drops the connection as above, or the two would take the id from
 * each other on every reconnect.
 */
export const RECLAIM_RELEASED_V1 = "reclaim-released-v1"

/** `registration_failed` code (`reclaim-released-v1`): a register with `ifReleased` found its id not given up on this broker. */
export const SESSION_NOT_RELEASED = "E_SESSION_NOT_RELEASED"

/**
 * `registration_failed` code (`reclaim-released-v1`): a register with
 * `ifReleased` found its id given up less than `RELEASE_GRACE_MS` ago. Its
 * holder may be replacing its client (pi's `/reload` unregisters, and the
 * new client registers the id some hundreds of ms later): asked again once
 * the grace is over, it is judged afresh.
 */
export const SESSION_RELEASED_RECENTLY = "E_SESSION_RELEASED_RECENTLY"

/**
 * How long (ms, on the broker's Clock) after its holder's `unregister` an id
 * is still refused to `ifReleased` (`E_SESSION_RELEASED_RECENTLY`). Below the
 * broker's idle exit (5 s after its last session left) by more than the
 * client's retry takes: a client refused so asks again after this long, and
 * finds the broker that saw the release still running (not under an
 * `--idle-exit` shorter than this, with no session left). A holder whose
 * new client registers more than this after its `unregister` loses the id
 * once: the take-back wins, and the new client takes the id over again.
 */
export const RELEASE_GRACE_MS = 2_000

/**
 * Extension `rejoin-v1`: a client's own rejoin. A client granted it sends
 * `instanceId` in `register`: an id of its own, made once per client
 * instance (not per connection). A register whose id is held by a live
 * connection that registered with the same `instanceId` (both granted
 * `rejoin-v1`) is that client coming back on a new connection, having left
 * the old one (its liveness probe failed, say) before the broker saw it end:
 * the broker ends the old connection at once (no `taken_over`: its client
 * left it), and the mail that connection was given and its client never
 * confirmed reading (`received-v1` custody, the part of the write in
 * progress the socket took) or that its socket never took (the rest of that
 * write) goes to the new connection first, in its order, ahead of the old
 * outbox's mail and anything newer — so a sender's order holds across the
 * rejoin (docs/testing.md, known issue 22). A different `instanceId`, or none,
 * is a takeover as before. `instanceId` is ignored unless `rejoin-v1` is
 * granted in the same `register`, so the client sends it always.
 */
export const REJOIN_V1 = "rejoin-v1"

/**
 * Ask expiry notices (extension): the broker is the one clock of an ask. When
 * the edge of an ask sent by a client granted this closes unanswered at its
 * deadline (`askTimeoutMs`, from when the broker received the ask), the
 * broker writes `ask_expired {messageId, expiredAt}` to the asker, on its
 * FIFO outbox — after any reply it accepted before the deadline, which the
 * asker therefore reads first. The asker ends its wait on the notice rather
 * than on a timer of its own that starts later (when it reads the ask's
 * acknowledgement), so a reply the broker accepts reaches an asker still
 * waiting. An edge withdrawn (`cancel_ask`, `cancel_message`) or answered
 * gets no notice; nor does a durable question's (`questions-v1`). The
 * notice goes only to a live connection granted this: an asker away when
 * its edge expires is not owed it. Such an asker, at its own deadline,
 * makes one round trip, a `list`, which the broker answers only after
 * closing the edges past their deadline — on the next connection, within
 * its rejoin grace, when it has none or that one drops first — and ends its
 * wait when no connection comes (docs/protocol.md).
 */
export const ASK_EXPIRY_V1 = "ask-expiry-v1"

/**
 * Asks answered to another client instance (extension). A reply follows
 * the asker's session, to whichever connection holds it: when another
 * client instance took the session over and was handed the reply for good,
 * the asking instance can never have it. While the broker still knows
 * where the reply went, it writes a client granted this
 * `ask_answered_elsewhere {messageId, replyId}` — at the client's
 * registration of the session (once per ask and client instance, for an ask
 * whose deadline has not passed), and behind the answer to a resend of the
 * ask (same message id: a replay, P46): the ask was answered, and the reply
 * went to another instance of the session, so the asker ends its wait with
 * that error now instead of at its timeout. No copy of the reply is sent (another instance showed it
 * already). A base client is never written the frame (docs/protocol.md).
 */
export const REPLY_ELSEWHERE_V1 = "reply-elsewhere-v1"

/**
 * Id-reuse reasons (extension): a send under a kept id with the content the
 * broker's record holds but a `to` that resolves now to another session than
 * the record names is refused `E_MESSAGE_ID_REUSE` with a reason saying what
 * the record says became of the message (delivered to that very session,
 * delivered to another, queued, settled) — `Reason.messageIdReuseDelivered…`
 * in delivery.ts — and P46's own text then means other content under the id
 * only. A client not granted it gets P46's text for every mismatch, as the
 * base protocol fixes it (P45), and cannot read that text as its own reuse
 * after a loss (client/afterLoss.ts; review revdh DH2, DH3).
 */
export const REUSE_REASON_V1 = "reuse-reason-v1"

/** Features every client receives in `registered`. */
export const BASE_FEATURES: ReadonlyArray<string> = [EXACT_SEND_V1]

/** Extensions a client may request. */
export const EXTENSION_FEATURES: ReadonlyArray<string> = [
  LIST_PAGE_V1,
  ASK_TIMEOUT_V1,
  GROUPS_V1,
  SUPERVISOR_V1,
  REPLY_ERROR_V1,
  DELIVERY_V1,
  HEALTH_V1,
  TOPICS_V1,
  RESULTS_V1,
  QUESTIONS_V1,
  RECEIVED_V1,
  OBSERVE_V1,
  TRACE_V1,
  STATS_V1,
  STATS_ROWS_CUT_V1,
  EPHEMERAL_V1,
  STATE_EPOCH_V1,
  TAKEOVER_V1,
  RECLAIM_V1,
  RECLAIM_RELEASED_V1,
  REJOIN_V1,
  ASK_EXPIRY_V1,
  REPLY_ELSEWHERE_V1,
  REUSE_REASON_V1
]

/**
 * The features a broker grants in `registered`: the base ones, plus those of
 * the requested extensions it knows and offers (unknown names and `withheld`
 * ones — `questions-v1` without a question store — are ignored, duplicates
 * dropped). A client that asked for nothing gets exactly the base features.
 *
 * @example
 * ```ts
 * import { negotiateFeatures } from "effect-intercom/protocol"
 *
 * negotiateFeatures(undefined) // ["exact-send-v1"]
 * negotiateFeatures(["list-page-v1", "made-up-v9"]) // ["exact-send-v1", "list-page-v1"]
 * ```
 */
export const negotiateFeatures = (
  requested: ReadonlyArray<string> | undefined,
  withheld?: ReadonlySet<string>
): ReadonlyArray<string> => {
  if (requested === undefined || requested.length === 0) return BASE_FEATURES
  const granted = requested.filter((feature) => EXTENSION_FEATURES.includes(feature) && withheld?.has(feature) !== true)
  return granted.length === 0 ? BASE_FEATURES : [...BASE_FEATURES, ...new Set(granted)]
}
