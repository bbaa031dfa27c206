/**
 * Old mail: how long a delivered message waited in the broker's mailbox, and
 * the marker (`· queued 6h ago`) its rendering carries when it waited long
 * enough to matter. Pure functions over the broker's own stamps on the
 * message (`brokerReceivedAt`, `brokerDeliveredAt`): one clock measures the
 * wait, whatever the receiving process's clock (or a TestClock) says.
 *
 * @since 0.1.0
 */
import type { Message } from "../protocol/frames.ts"

/**
 * How long a message must have waited in the broker's mailbox before it is
 * shown as old mail (`queued 6h ago`): one minute. A message handed over
 * live spends milliseconds in the broker; one that waited this long was
 * queued for a session that was away.
 *
 * @category rendering
 * @since 0.1.0
 */
export const QUEUED_MARK_THRESHOLD_MS = 60_000

/**
 * An age as `Ns`, `Nm`, `Nh` or `Nd`, rounded down to the largest unit that fits.
 *
 * @category rendering
 * @since 0.1.0
 */
export const formatQueuedAge = (ms: number): string => {
  const seconds = Math.max(0, Math.floor(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  return hours < 24 ? `${hours}h` : `${Math.floor(hours / 24)}d`
}

/**
 * How long a message waited in the broker's mailbox, when it waited at least
 * `QUEUED_MARK_THRESHOLD_MS`; undefined otherwise. Both ends are the broker's
 * own stamps (`brokerReceivedAt` when it accepted the send,
 * `brokerDeliveredAt` when it wrote the message to this session), so one
 * clock measures the wait, whatever this process's clock says.
 *
 * @category rendering
 * @since 0.1.0
 */
export const queuedFor = (message: Message): number | undefined => {
  const { brokerDeliveredAt, brokerReceivedAt } = message
  if (brokerDeliveredAt === undefined || brokerReceivedAt === undefined) return undefined
  const waited = brokerDeliveredAt - brokerReceivedAt
  return waited >= QUEUED_MARK_THRESHOLD_MS ? waited : undefined
}

/**
 * ` · queued 6h ago` for old mail (`queuedFor`), else the empty string.
 *
 * @category rendering
 * @since 0.1.0
 */
export const queuedMarker = (message: Message): string => {
  const waited = queuedFor(message)
  return waited === undefined ? "" : ` · queued ${formatQueuedAge(waited)} ago`
}
