/**
 * The unit of a parent session's inbound ordering: one broker-delivered
 * message as the workflow layer sees it, independent of any host.
 *
 * It carries exactly what the ordering rules read — sender identity, the
 * sender's timestamp, whether it expects a reply, and the bridged child's
 * `source` (C-ORD-24) — plus the engine's own `payload`, which the workflow
 * layer never looks into. An engine builds entries from what its session
 * runtime hands it (for the session runtime: `Inbound`, see `src/session/Host.ts`).
 */

/**
 * Where a bridged child's message comes from (C-ORD-24): the subagent run
 * that sent it, its agent name and its index in a parallel set.
 *
 * @category models
 * @since 0.1.0
 */
export interface EntrySource {
  readonly subagentRunId: string
  readonly subagentAgent?: string
  readonly subagentIndex?: number
}

/**
 * One inbound message a parent session has to order.
 *
 * - `senderId`/`senderName`: the sender as the broker described it.
 * - `timestamp`: the sender's timestamp (C-ORD-24); the terminal barrier
 *   claims only entries at or before the terminal's `terminalAt` (C-ORD-26).
 * - `expectsReply`: an ask; never claimed by a barrier (C-ORD-26).
 * - `threadId`/`progress`: a child's progress update on its generated thread,
 *   which C-DLV-17 drops once the child is proven finished.
 * - `payload`: the engine's value, handed back untouched on delivery.
 *
 * @category models
 * @since 0.1.0
 */
export interface InboundEntry<A = unknown> {
  readonly messageId: string
  readonly senderId: string
  readonly senderName?: string | undefined
  readonly timestamp: number
  readonly expectsReply: boolean
  readonly replyTo?: string | undefined
  readonly source?: EntrySource | undefined
  readonly threadId?: string | undefined
  readonly progress?: boolean | undefined
  readonly payload: A
}

/**
 * The identity of an entry within a parent session: (sender id, message id).
 * A separator no id can contain keeps two different pairs from colliding.
 *
 * @category keys
 * @since 0.1.0
 */
export const entryKey = (entry: { readonly senderId: string; readonly messageId: string }): string =>
  `${entry.senderId}\u0000${entry.messageId}`

/**
 * The child target an entry names when it asks a foreground owner to claim
 * it (C-ORD-10): the sender's name, or its id when it has none.
 *
 * @category keys
 * @since 0.1.0
 */
export const childTargetOf = (entry: InboundEntry<unknown>): string => entry.senderName ?? entry.senderId
