/**
 * The options of a generated workload (`WorkloadOptions`): how many ops
 * and sessions, the weights, and the flags that mix further traffic in or
 * insert the ops of simulation/*.ts. Only the type: workload/draw.ts,
 * workload/world.ts and Workload.ts read it.
 */
import type { OpWeights } from "./ops.ts"

/** How a workload is generated and the world it runs in. */
export interface WorkloadOptions {
  /**
   * Vary the world with the seed too: small broker outboxes, mailboxes and
   * link buffers (backpressure, parking, eviction), two pi scopes, agent
   * temperament. Settings in the config win. Default true.
   */
  readonly vary?: boolean
  /** Operations to generate. Default 40. */
  readonly ops?: number
  /** Sessions in the world (the config's `sessions` wins if given). Default 4. */
  readonly sessions?: number
  /** Overrides of `defaultWeights`. */
  readonly weights?: Partial<OpWeights>
  /**
   * Mix hostile sessions into the world (HOSTILE_SESSIONS of them) and
   * their attacks into the workload (weight HOSTILE_WEIGHT, a low rate).
   * Default false: the seed sweep runs without them.
   */
  readonly hostile?: boolean
  /**
   * Spread the sessions over two groups of each scope (`default` and
   * `run-1`, see `groupSpecs`) with a supervisor and its delegated child
   * across them; mix in the child's supervisor-channel messages and asks
   * (weight GROUPS_SUPERVISOR_WEIGHT) and plain sends and asks into the other
   * group by name or exact id (which the broker must refuse). Default false:
   * the standard seed sweep runs without groups; `npm test` sweeps them
   * separately (test/testing/groups.test.ts).
   */
  readonly groups?: boolean
  /**
   * Mix sends with delivery modes (`delivery-v1`) into the workload: steer,
   * queue, passive, and bursts of replace updates on a few threads (weight
   * DELIVERY_WEIGHT; simulation/delivery.ts). Default false: the standard
   * sweep runs without them.
   */
  readonly delivery?: boolean
  /**
   * Mix topic traffic into the workload (`topics-v1`): publications of every
   * event on TOPIC_COUNT topics (weight TOPICS_PUBLISH_WEIGHT) and
   * subscriptions, some awaiting releases (weight TOPICS_SUBSCRIBE_WEIGHT).
   * Default false: the standard seed sweep runs without them.
   */
  readonly topics?: boolean
  /**
   * Pressure on the broker's connection path (simulation/pressure.ts): insert
   * a registration storm (`Storm`, in STORM_CHANCE of the seeds) and a flood
   * of long messages to a slow recipient (`Flood`, in FLOOD_CHANCE) into the
   * workload, drawn from a stream of their own, and run it in a world with
   * small broker limits (`pressureBroker`: `maxUnregistered`, `outboxChars`,
   * `heldLimit`). Default true; false gives the workloads and worlds of
   * before (the seeds docs/testing.md names up to issue 16's seventh stop).
   */
  readonly pressure?: boolean
  /**
   * Sessions that leave by `unregister` (`Unregister`, weight
   * UNREGISTER_WEIGHT; half of them stop reading and leave 1–4 ops later,
   * so mail reaches them that they leave unread) and come back under the same id with a later `Start`,
   * and one session registered ephemeral (`ephemeral-v1`, see
   * `ephemeralIndexOf`) that ends with its `unregister` and does not come
   * back during the script. Default false: the standard sweep runs without
   * them.
   */
  readonly unregister?: boolean
  /**
   * Insert a `ParkedFlush` (one, or two in SECOND_PARKED_FLUSH_CHANCE of the
   * seeds; simulation/parkedFlush.ts), drawn from a stream of its own: a
   * recipient comes back to a mailbox flush larger than its outbox, reads it
   * slowly, and its senders send on, leave, rejoin or unregister meanwhile.
   * The world's outboxes take PARKED_FLUSH_OUTBOX_CHARS characters unless
   * pressure makes them smaller. Default false: the standard sweep runs
   * without it.
   */
  readonly parkedFlush?: boolean
  /**
   * Insert one `HeldReturn` (simulation/heldReturn.ts), drawn from a stream
   * of its own: a session leaves with its last messages parked behind a slow
   * recipient and registers again on a new connection while they wait. The
   * world's outboxes take PARKED_FLUSH_OUTBOX_CHARS characters unless
   * pressure makes them smaller. Default false.
   */
  readonly heldReturn?: boolean
  /**
   * Insert one `CustodyHold` (simulation/custodyHold.ts), drawn from a
   * stream of its own: a recipient taken over by a new client instance
   * while its old connection holds a sender's unconfirmed mail, and that
   * sender sending, leaving and coming back while the new connection holds
   * its mail (the broker's takeover custody hold). Default false.
   */
  readonly custodyHold?: boolean
  /**
   * Insert one `SettleHold` (simulation/settleHold.ts), drawn from a stream
   * of its own: an asker's deadline comes while the reply to its ask is
   * parked behind the answerer's mail to a slow reader, so the broker holds
   * its settling answer (`ask-expiry-v1`); then the reply is released,
   * forced or taken back. Also one `SettleCustody`
   * (simulation/settleCustody.ts), from a stream of its own: the reply kept
   * by a takeover's custody hold on the asker's session instead, or (its
   * take-back variant) written to the asker's old connection, never
   * confirmed, while the hold waits for that close. The
   * world's outboxes take PARKED_FLUSH_OUTBOX_CHARS characters unless
   * pressure makes them smaller. Default false.
   */
  readonly settleHold?: boolean
  /**
   * Insert one `InstanceControl` (simulation/instanceControl.ts), drawn
   * from a stream of its own: a receiver reads a message, leaves and comes
   * back as a new client instance, and the sender then cancels or
   * supersedes that message, which must not reach the new instance
   * (`control-to-other-instance`). Default false.
   */
  readonly instanceControl?: boolean
  /**
   * Insert one `ReaderReturn` (simulation/readerReturn.ts), drawn from a
   * stream of its own: a reader's connection drops while it holds the
   * sender's control or message unconfirmed, the sender cancels or
   * supersedes, and the same client instance comes back, which must get
   * what it is owed (`control-never-reached-reader`). Default false.
   */
  readonly readerReturn?: boolean
  /**
   * Insert one `GroupMove` (simulation/groupMove.ts), drawn from a stream of
   * its own: a reader holds its sender's control unconfirmed when its client
   * instance moves the session to another group and back, and the control
   * must reach it back in the first group (`control-never-reached-reader`).
   * Default false.
   */
  readonly groupMove?: boolean
  /**
   * Insert one `StaleAsk` (simulation/staleAsk.ts), drawn from a stream of
   * its own: an ask whose question its target's connection holds unread
   * past the deadline and gives back after the asker's wait timed out,
   * whose asker is owed its expiry (`ask-expired-untold`). Default false.
   */
  readonly staleAsk?: boolean
  /**
   * Insert one `AnswerTakeover` (simulation/answerTakeover.ts), drawn from a
   * stream of its own: an ask answered by a new client instance of its
   * target while the taken-over connection holds the question unconfirmed
   * and closes past the deadline; its asker, answered, must not be told it
   * expired (`expired-after-answer`). Default false.
   */
  readonly answerTakeover?: boolean
  /**
   * Insert one `AnswerMailbox` (simulation/answerMailbox.ts), drawn from a
   * stream of its own: an ask whose question waits in its replier's mailbox
   * (the replier's connection closed before it confirmed it) when the
   * replier's `replace`-staged reply to it is accepted; the replier comes
   * back past the deadline. Its asker, answered, must not be told it expired
   * (`expired-after-answer`). Default false.
   */
  readonly answerMailbox?: boolean
  /**
   * Follow about CONTROL_CHANCE of the sends with a cancel or supersede of
   * the sender's latest send (`Control`, simulation/controls.ts), drawn from
   * a stream of its own after every other op is in place. Default true;
   * false gives the workloads of before.
   */
  readonly controls?: boolean
}
